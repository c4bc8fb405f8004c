"""How an :class:`~spmd_types.typesystem.SpmdType` is written as a mypy type, and read back.

A tensor whose SPMD type is known becomes ``SpmdTensor[Literal["dp:R", "tp:V"]]``
(``SpmdParameter`` for an ``nn.Parameter``): a stub-only subclass of the tensor
class whose covariant argument lists one ``"axis:type"`` literal per known
axis.  mypy's own subtype check then compares these at plain assignments and
returns: a value listing fewer axes than a declaration is accepted (its other
axes are unknown), a value with a different type on a listed axis is not.

Shards appear as ``V`` in the literals, because in local SPMD ``S(i)`` and ``V``
are interchangeable and the literals are what mypy compares; the full type
(shard dims, constants) rides along in a side channel (see
:func:`spmd_mypy.compat.read_side_channel`) and is what the plugin reads.

A variable inferred from one value is re-bound to a value of another SPMD
type all the time (``h = all_reduce(h, ...)``).  With mypy's
``allow_redefinition`` (recommended) mypy re-types it, and a variable whose
type differs between branches becomes a union the plugin reports.  Without
it, mypy would reject the re-binding, so values computed by the plugin are
written ``SpmdTensor[Any]`` with their type in the side channel only: ops,
calls and ``return <call>`` are still checked exactly by the plugin, but mypy
no longer compares a returned or assigned *variable* with its declaration, and
a difference between branches goes unseen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from mypy.nodes import MypyFile, TypeInfo
from mypy.plugin import CheckerPluginInterface
from mypy.types import (
    AnyType,
    Instance,
    LiteralType,
    Type,
    TypeOfAny,
    UninhabitedType,
    UnionType,
    get_proper_type,
)

from spmd_mypy.compat import lookup_type_info, read_orders, read_rank, read_side_channel, with_side_channel
from spmd_mypy.fullnames import (
    AXIS_GROUP,
    LOCAL_MAP_DECORATOR,
    LOCAL_REGION_DECORATOR,
    NAMED_MESH,
    PARAMETER,
    PLACED_DTENSOR,
    SPMD_PACKAGE,
    SPMD_PARAMETER,
    SPMD_TENSOR,
    SPMD_TENSORS,
    STR,
    TENSOR,
)
from spmd_mypy.session import Session
from spmd_types.typesystem import (
    Constant,
    EntryOrders,
    LocalMap,
    Placements,
    Region,
    SpmdType,
    bounded_put,
    local_type,
    merge_paths,
    parse,
)

__all__ = [
    "Divergent",
    "Encoder",
    "is_tensor",
    "plain_tensor",
]


def is_tensor(typ: Type) -> bool:
    """Whether ``typ`` is an instance of ``torch.Tensor`` or a subclass (an SPMD-typed tensor, a parameter)."""
    proper = get_proper_type(typ)
    return isinstance(proper, Instance) and proper.type.has_base(TENSOR)


def plain_tensor(typ: Type) -> Instance | None:
    """A plain ``torch.Tensor`` instance, found among the bases of tensor type ``typ``."""
    proper = get_proper_type(typ)
    if not isinstance(proper, Instance):
        return None
    for info in proper.type.mro:
        if info.fullname == TENSOR:
            return Instance(info, [])
    return None


@dataclass(frozen=True)
class Divergent:
    """A value whose SPMD type depends on the path taken (a union of different types)."""

    types: tuple[SpmdType, ...]


class Encoder:
    """Builds and reads SPMD-typed mypy types; needs the loaded modules to find the phantoms."""

    def __init__(
        self, modules: dict[str, MypyFile] | None, named_type: Callable[[str, list[Type]], Instance],
        rebindable: bool = True,
    ) -> None:
        """``named_type``: mypy's, asked for ``builtins.str`` when a new type is built (a bound method, not a
        ``partial`` made at every encoder: one is made per annotation and per checked call)."""
        self._modules = modules
        self._named_type = named_type
        self._str_instance: Instance | None = None
        self._rebindable = rebindable

    @property
    def _str(self) -> Instance:
        """``builtins.str``, which the literals of a new type need: asked of mypy only when one is built
        (most checked ops find their result type among those already built).  Kept in an attribute, not
        a ``cached_property``: the compiled build's classes have no instance ``__dict__``."""
        if self._str_instance is None:
            self._str_instance = self._named_type(STR, [])
        return self._str_instance

    @staticmethod
    def for_checker(session: Session, api: CheckerPluginInterface) -> Encoder:
        """How SPMD types are written while ``api`` checks a module (see the module docstring on re-binding)."""
        return Encoder(session.modules, api.named_generic_type, not api.options.allow_redefinition)

    # -- reading -----------------------------------------------------------------

    @staticmethod
    def read(typ: Type) -> SpmdType | Divergent | None:
        """The SPMD type of a value of mypy type ``typ``; ``None`` if it has none."""
        proper = get_proper_type(typ)
        if isinstance(proper, Instance):
            return _read_instance(proper)
        if isinstance(proper, UnionType):
            found = {_read_instance(item) for item in map(get_proper_type, proper.items)
                     if isinstance(item, Instance) and item.type.fullname in SPMD_TENSORS}
            paths = {t for t in found if t is not None}
            if len(paths) > 1:
                return merge_paths(paths) or Divergent(tuple(sorted(paths, key=str)))
            return paths.pop() if paths else None
        return None

    @staticmethod
    def rank(typ: Type) -> int | None:
        """The rank of an SPMD-typed tensor whose declaration says it (a ``PartitionSpec``); else ``None``."""
        proper = get_proper_type(typ)
        return read_rank(proper) if isinstance(proper, Instance) else None

    @staticmethod
    def orders(typ: Type) -> EntryOrders:
        """The axis orders of an SPMD-typed tensor's multi-axis entries, where a ``PartitionSpec`` says them."""
        proper = get_proper_type(typ)
        text = read_orders(proper) if isinstance(proper, Instance) else ""
        return _read_orders(text) if text else ()

    @staticmethod
    def read_axis(typ: Type) -> str | None:
        """The mesh axis of a process group typed ``AxisGroup[Literal["tp"]]``."""
        return _literal_arg(typ, AXIS_GROUP)

    @staticmethod
    def read_mesh(typ: Type) -> tuple[str, ...] | None:
        """The dim names of a device mesh typed ``NamedMesh[Literal["dp, tp"]]``, in order."""
        text = _literal_arg(typ, NAMED_MESH)
        return tuple(text.split(", ")) if text is not None else None

    @staticmethod
    def read_placements(typ: Type) -> Placements | None:
        """The placements of a DTensor typed ``PlacedDTensor[Literal["dp:Replicate(), tp:Shard(0)"]]``."""
        text = _literal_arg(typ, PLACED_DTENSOR)
        return Placements.parse(text) if text is not None else None

    @staticmethod
    def read_local_map(typ: Type) -> LocalMap | None:
        """The placements of a ``local_map`` decorator typed ``LocalMapDecorator[Literal[...]]``."""
        text = _literal_arg(typ, LOCAL_MAP_DECORATOR)
        return LocalMap.parse(text) if text is not None else None

    @staticmethod
    def read_region(typ: Type) -> Region | None:
        """The specs of a ``local_region`` decorator typed ``LocalRegionDecorator[Literal[...]]``."""
        text = _literal_arg(typ, LOCAL_REGION_DECORATOR)
        return Region.parse(text) if text is not None else None

    # -- writing -----------------------------------------------------------------

    def runtime_source(self) -> str | None:
        """Where mypy read ``spmd_types`` from, when it is the source and not the stubs.

        The phantom classes exist only in the stubs; without them no SPMD type
        can be written, and every annotation would quietly mean a plain tensor.
        """
        package = (self._modules or {}).get(SPMD_PACKAGE)
        if package is None or package.path.endswith(".pyi"):
            return None
        return package.path

    def tensor(self, spmd: SpmdType, base: Instance, *, inferred: bool, kept: bool = False,
               rank: int | None = None, orders: EntryOrders = ()) -> Instance | None:
        """``base`` (a tensor instance) carrying ``spmd`` (and ``rank`` and the entry ``orders``, where known);
        ``None`` if the phantoms are not loaded.

        ``inferred`` marks a value computed by the plugin, which is written
        ``SpmdTensor[Any]`` where variables cannot be re-typed (see the module
        docstring); declarations are always exact.  A type that lists no axis
        but constants is ``SpmdTensor[Any]`` too, unless ``kept``: the value
        goes into a declared variable (``x = all_reduce(x, "tp", src=V, dst=R,
        op="max")``, ``x`` a parameter).  mypy joins a declaration with an
        assigned type that contains ``Any``, so there the constant is written
        ``SpmdTensor[Never]``: a subtype of every SPMD type (the argument is
        covariant), which mypy narrows the variable to.
        """
        name = SPMD_PARAMETER if base.type.has_base(PARAMETER) else SPMD_TENSOR
        info = lookup_type_info(self._modules, name)
        if info is None:
            return None
        if not inferred:
            # A declaration is its own Instance: mypy may drop the side channel of one it meets in a union
            # (typeops.make_simplified_union), which must not reach other declarations.  Its parts (the
            # literals, the side channel) are shared, as mypy's own copies share them (Instance.copy_modified).
            declared_key = (info, spmd, kept, rank, orders)
            template = _DECLARED.get(declared_key)
            if template is None:
                template = bounded_put(_DECLARED, declared_key, self._build(info, spmd, inferred, kept, rank, orders),
                                       _COMPUTED_MAX)
            return template.copy_modified()
        # mypy shares a type among the expressions it flows to, never changing it; so can the plugin.
        key = (info, spmd, self._rebindable, kept, rank, orders)
        typed = _COMPUTED.get(key)
        if typed is None:
            typed = bounded_put(_COMPUTED, key, self._build(info, spmd, inferred, kept, rank, orders), _COMPUTED_MAX)
        return typed

    def _build(self, info: TypeInfo, spmd: SpmdType, inferred: bool, kept: bool, rank: int | None,
               orders: EntryOrders) -> Instance:
        items: list[Type] = [
            LiteralType(f"{axis}:{local_type(kind).code}", self._str)
            for axis, kind in spmd.items()
            if not isinstance(kind, Constant)
        ]
        arg: Type
        if not items:
            arg = UninhabitedType() if kept and not spmd.is_unknown else AnyType(TypeOfAny.special_form)
        elif inferred and self._rebindable:
            arg = AnyType(TypeOfAny.special_form)
        else:
            arg = items[0] if len(items) == 1 else UnionType(items)
        return with_side_channel(Instance(info, [arg]), str(spmd), self._str, declared=not inferred, rank=rank,
                                 orders=";".join(",".join(axes) for axes in orders))

    def axis_group(self, axis: str) -> Instance | None:
        """``AxisGroup[Literal[axis]]``, the type of a process group of mesh axis ``axis``."""
        return self._literal_instance(AXIS_GROUP, axis)


    def named_mesh(self, dims: tuple[str, ...]) -> Instance | None:
        """``NamedMesh[Literal["dp, tp"]]``, the type of a device mesh whose dims are ``dims``."""
        return self._literal_instance(NAMED_MESH, ", ".join(dims))

    def placed_dtensor(self, placements: Placements) -> Instance | None:
        """``PlacedDTensor[Literal[...]]``, the type of a DTensor with ``placements``."""
        return self._literal_instance(PLACED_DTENSOR, str(placements))

    def local_map_decorator(self, spec: LocalMap) -> Instance | None:
        """``LocalMapDecorator[Literal[...]]``, the type of ``local_map(...)`` without its function."""
        return self._literal_instance(LOCAL_MAP_DECORATOR, str(spec))

    def local_region_decorator(self, region: Region) -> Instance | None:
        """``LocalRegionDecorator[Literal[...]]``, the type of ``local_region(...)`` without its function."""
        return self._literal_instance(LOCAL_REGION_DECORATOR, str(region))

    def _literal_instance(self, fullname: str, text: str) -> Instance | None:
        info = lookup_type_info(self._modules, fullname)
        return Instance(info, [LiteralType(text, self._str)]) if info is not None else None


def _literal_arg(typ: Type, fullname: str) -> str | None:
    """The string literal argument of an instance of phantom class ``fullname``."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and proper.type.fullname == fullname and proper.args:
        arg = get_proper_type(proper.args[0])
        if isinstance(arg, LiteralType) and isinstance(arg.value, str):
            return arg.value
    return None


def _read_instance(instance: Instance) -> SpmdType | None:
    if instance.type.fullname not in SPMD_TENSORS:
        return None
    text = read_side_channel(instance)
    if text is not None:
        return _parse(text)
    # No side channel (a type mypy rebuilt, e.g. by a join): read the literals.
    arg = get_proper_type(instance.args[0]) if instance.args else None
    members = arg.items if isinstance(arg, UnionType) else [arg] if arg is not None else []
    literals = [m.value for m in map(get_proper_type, members) if isinstance(m, LiteralType)]
    return _parse(", ".join(str(v) for v in literals))


# Every read of an SPMD-typed value parses its text; a program has few distinct ones.
_parse: Final = functools.lru_cache(maxsize=4096)(parse)


@functools.lru_cache(maxsize=256)
def _read_orders(text: str) -> EntryOrders:
    """Entry orders written ``"dp,tp;cp,ep"`` (see :meth:`Encoder.tensor`)."""
    return tuple(tuple(entry.split(",")) for entry in text.split(";"))

# The type of every value the plugin computes, by phantom class, SPMD type, whether variables can be
# re-typed, whether the value is kept by a declared variable, its rank and entry orders (see Encoder.tensor):
# a program computes few distinct ones, at every op.  The phantom class is part of the key, so a daemon that reloads the
# stubs builds new types.
_COMPUTED: Final[dict[tuple[TypeInfo, SpmdType, bool, bool, int | None, EntryOrders], Instance]] = {}
_COMPUTED_MAX: Final = 4096
# What a declaration of each SPMD type is copied from (see Encoder.tensor), by the same key less re-binding.
_DECLARED: Final[dict[tuple[TypeInfo, SpmdType, bool, int | None, EntryOrders], Instance]] = {}
