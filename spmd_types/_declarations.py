"""What annotations declare about the tensors a value holds, for runtime checking.

A hint such as ``Annotated[Tensor, R["dp"]]`` declares the SPMD type of a
tensor; one with a ``PartitionSpec`` also declares ``R`` on each axis of the
current mesh that neither the spec nor a marker names (:class:`OnMesh`,
resolved when a value is checked, on the mesh current then); inside ``Optional[...]``, ``tuple[...]``, ``list[...]`` and
``Sequence[...]`` (and on ``*args``) it declares the type of each tensor the
value holds.  The markers are read by the rule core
(:func:`~spmd_types.typesystem.annotations.spmd_type_from_metadata`); this
module only walks the containers and evaluates the annotations of functions
and classes, which may be strings (``from __future__ import annotations``).
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import torch

from spmd_types._mesh import current_axes
from spmd_types.typesystem import PartitionSpec, SpmdType, replicated_elsewhere, spmd_type_from_metadata

__all__ = [
    "Configurations", "Declarations", "Each", "Items", "OnMesh", "Tree", "annotations_of", "callee_name",
    "declared_trees", "declared_values", "tree_of",
]


@dataclass(frozen=True)
class OnMesh:
    """A declaration with a ``PartitionSpec``: ``declared`` on the axes it names, ``R`` on the current mesh's others."""

    declared: SpmdType

    def on(self, axes: Iterable[str]) -> SpmdType:
        """The declared type on a mesh of ``axes``."""
        return replicated_elsewhere(self.declared, axes)

    def on_current_mesh(self) -> SpmdType:
        """The declared type on the axes of the current mesh (no mesh: only the named axes)."""
        return self.on(current_axes())


@dataclass(frozen=True)
class Each:
    """Every element of a list, a homogeneous tuple or ``*args`` has the declaration ``item``."""

    item: Tree


@dataclass(frozen=True)
class Items:
    """The elements of a fixed-length tuple have one declaration each (``None``: none)."""

    items: tuple[Tree | None, ...]


Tree = SpmdType | OnMesh | Each | Items
_SEQUENCES: Final = frozenset({list, tuple, collections.abc.Sequence, collections.abc.Iterable,
                               collections.abc.MutableSequence})


def tree_of(hint: object) -> Tree | None:
    """What a type hint declares about the tensors in a value of that type (``None``: nothing)."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        metadata = getattr(hint, "__metadata__", ())
        spmd = spmd_type_from_metadata(metadata)
        if spmd is None:
            return tree_of(getattr(hint, "__origin__", None))
        return OnMesh(spmd) if any(isinstance(item, PartitionSpec) for item in metadata) else spmd
    arguments = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        found = [t for t in (tree_of(a) for a in arguments if a is not type(None)) if t is not None]
        return found[0] if len(found) == 1 else None
    if origin is tuple and arguments and not (len(arguments) == 2 and arguments[1] is Ellipsis):
        items = tuple(tree_of(a) for a in arguments)
        return Items(items) if any(t is not None for t in items) else None
    if origin in _SEQUENCES and arguments:
        item = tree_of(arguments[0])
        return Each(item) if item is not None else None
    return None


def declared_values(value: object, tree: Tree) -> Iterator[tuple[torch.Tensor, SpmdType]]:
    """The tensors in ``value`` and the type each is declared with."""
    if isinstance(tree, SpmdType):
        if isinstance(value, torch.Tensor):
            yield value, tree
    elif isinstance(tree, OnMesh):
        if isinstance(value, torch.Tensor):
            yield value, tree.on_current_mesh()
    elif isinstance(tree, Each):
        if isinstance(value, (list, tuple)):
            for item in value:
                yield from declared_values(item, tree.item)
        elif isinstance(value, dict):  # **kwargs
            for item in value.values():
                yield from declared_values(item, tree.item)
    elif isinstance(value, (list, tuple)) and len(value) == len(tree.items):
        for item, declared in zip(value, tree.items):
            if declared is not None:
                yield from declared_values(item, declared)


def annotations_of(owner: Any) -> dict[str, object]:
    """``owner``'s annotations, evaluated; one that cannot be evaluated (a forward reference) is left out."""
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except Exception:
        pass
    found: dict[str, object] = {}
    sources = [owner] if not isinstance(owner, type) else list(reversed(owner.__mro__))
    for source in sources:
        namespace = getattr(source, "__globals__", None) or vars(inspect.getmodule(source) or source)
        for name, annotation in getattr(source, "__annotations__", {}).items():
            try:
                found[name] = eval(annotation, dict(namespace)) if isinstance(annotation, str) else annotation
            except Exception:
                continue
    return found


def declared_trees(hints: Mapping[str, object]) -> dict[str, Tree]:
    """The declarations among evaluated annotations, by name (names that declare nothing left out)."""
    out = {}
    for name, hint in hints.items():
        tree = tree_of(hint)
        if tree is not None:
            out[name] = tree
    return out


@dataclass(frozen=True)
class Declarations:
    """A callable's declared SPMD types: of its parameters (by name) and of its result.

    ``variables`` are the parameters (and ``"return"``) annotated with a type
    variable restricted to types (``ColOut``): a method of a class generic in
    them declares, for each instance, the type its configuration binds
    (:meth:`configured`).
    """

    signature: inspect.Signature
    parameters: dict[str, Tree]
    returns: Tree | None
    callee: str
    variables: dict[str, object] = field(default_factory=dict)

    @staticmethod
    def of(fn: Callable[..., Any], callee: str) -> Declarations:
        """``fn``'s declarations; ``callee`` is how messages name it."""
        hints = annotations_of(fn)
        trees = declared_trees(hints)
        signature = inspect.signature(fn)
        parameters = {}
        for name, parameter in signature.parameters.items():
            tree = trees.get(name)
            if tree is not None and parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                tree = Each(tree)
            if tree is not None:
                parameters[name] = tree
        variables: dict[str, object] = {
            name: hint for name, hint in hints.items() if isinstance(hint, typing.TypeVar) and hint.__constraints__
        }
        return Declarations(signature, parameters, trees.get("return"), callee, variables)

    def configured(self, arguments: Mapping[object, object]) -> tuple[dict[str, Tree], Tree | None]:
        """The declared parameters and result with the type variables bound to ``arguments``."""
        bound = {name: tree for name, variable in self.variables.items()
                 if (tree := tree_of(arguments.get(variable))) is not None}
        parameters = {**self.parameters, **{n: t for n, t in bound.items() if n != "return"}}
        return parameters, bound.get("return", self.returns)


@dataclass(frozen=True)
class Configurations:
    """The constructor overloads of a class generic in its SPMD types, read at run time.

    Each row says which flag values (``gather_output: Literal[True]``, or a
    submodule present or ``None``) give which type arguments (the overload's
    ``self: ColumnParallelLinear[Whole]``); an instance's flags, stored under
    the parameters' names, pick its row, as the plugin reads them
    (``spmd_mypy.flags``).  Python 3.10 keeps no
    overloads at run time: there no class has any.
    """

    variables: tuple[object, ...]
    rows: tuple[tuple[dict[str, tuple[object, ...] | None], tuple[object, ...]], ...]

    @staticmethod
    def of(cls: type) -> Configurations | None:
        """The configurations of ``cls``, read from the nearest ``__init__``; ``None``: it has none."""
        get_overloads = getattr(typing, "get_overloads", None)
        owner = next((c for c in cls.__mro__ if "__init__" in vars(c)), None)
        variables = tuple(getattr(owner, "__parameters__", ()))
        if get_overloads is None or owner is None or not variables:
            return None
        overloads = []
        for overload in get_overloads(vars(owner)["__init__"]):
            hints = annotations_of(overload)
            arguments = typing.get_args(hints.pop("self", None))
            hints.pop("return", None)
            overloads.append((hints, arguments))
        flags = {name for hints, _ in overloads for name, hint in hints.items() if _values(hint) is not None}
        rows = tuple(({name: _values(hints[name]) for name in flags if name in hints}, arguments)
                     for hints, arguments in overloads if len(arguments) == len(variables))
        return Configurations(variables, rows) if flags and rows else None

    def arguments(self, instance: object) -> dict[object, object]:
        """The type arguments ``instance`` was built with, by type variable (empty: no overload matches)."""
        for flags, arguments in self.rows:
            if all(_holds(getattr(instance, name, _UNSET), values) for name, values in flags.items()):
                return dict(zip(self.variables, arguments))
        return {}

_SET: Final = None  # a flag's values in an overload that types it with a class: any value but None


def _values(hint: object) -> tuple[object, ...] | None:
    """The values a flag parameter typed ``hint`` takes: a literal's, ``(None,)``, or ``None`` for any but None."""
    if typing.get_origin(hint) is typing.Literal:
        return typing.get_args(hint)
    return (None,) if hint is None or hint is type(None) else None


def _holds(value: object, values: tuple[object, ...] | None) -> bool:
    return value is not None and value is not _UNSET if values is None else value in values


_UNSET: Final = object()


def callee_name(fn: Callable[..., Any]) -> str:
    """How the plugin names a function in messages: ``f``, or ``Class.method`` for a method."""
    qualname = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "function"))
    return str(getattr(fn, "__name__", qualname)) if "<locals>" in qualname else qualname
