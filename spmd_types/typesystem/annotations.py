"""How ``Annotated`` metadata becomes an :class:`SpmdType`, and the markers that are not local types.

``R["dp"]``, ``V["dp", "cp"]`` and ``S["tp", 0]`` evaluate to :class:`AxisTypes`
values (defined with the types they mark, in :mod:`.local_types`);
``Axis["tp"]`` (for process groups) evaluates to :class:`Axis`.  Both are
plain metadata for ``typing.Annotated``::

    x: Annotated[Tensor, R["dp"], V["tp"]]
    group: Annotated[ProcessGroup, Axis["tp"]]

``Spmd[Tensor, Literal["dp:R, tp:V"]]`` builds the same ``Annotated`` type.
In type aliases mypy drops the metadata of ``Annotated`` (python/mypy#17514)
and reads ``"dp"`` in ``R["dp"]`` as a name; this form survives there, and
checkers without the plugin (plain mypy, pyright) read it as its first
argument, because the stubs declare ``Spmd`` a generic alias of it.  A bare
string or markers in place of the ``Literal`` are understood here too, but
other checkers reject them (the plugin says so).

:func:`spmd_type_of_hint` reads the SPMD type back from such a hint (for
example from ``typing.get_type_hints(f, include_extras=True)``); metadata of
other libraries is ignored.  Malformed markers raise :class:`AnnotationError`.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable

from spmd_types.typesystem.local_types import (
    AnnotationError,
    AxisType,
    AxisTypes,
    LocalType,
    R,
    Shard,
    axis_types_marker,
    shard_marker,
)
from spmd_types.typesystem.partition_spec import PartitionSpec, spec_type
from spmd_types.typesystem.spmd_type import SpmdType, parse

__all__ = [
    "Axis", "Spmd", "axis_of_hint", "markers_from_text", "replicated_elsewhere", "spmd_type_from_metadata",
    "spmd_type_of_hint",
]


class _AxisMeta(type):
    def __getitem__(cls, name: str) -> Axis:
        return Axis(name)


class Axis(metaclass=_AxisMeta):
    """``Axis["tp"]``: marks a ``ProcessGroup`` as the group of mesh axis ``tp``."""

    __slots__ = ("name",)

    name: str

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise AnnotationError(f"Axis[...] takes one mesh-axis name as a string, got {name!r}")
        object.__setattr__(self, "name", name)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("Axis is immutable")

    def __repr__(self) -> str:
        return f"Axis[{self.name!r}]"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Axis) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Axis", self.name))


def spmd_type_from_metadata(metadata: Iterable[object]) -> SpmdType | None:
    """The SPMD type that ``Annotated`` metadata declares, or ``None`` if it has none.

    Foreign metadata is skipped.  A :class:`PartitionSpec` declares ``S(i)`` on
    each axis that cuts dim ``i`` and ``P`` on its partial axes
    (:func:`~spmd_types.typesystem.partition_spec.spec_type`); markers may
    declare the axes it does not name.  An axis given twice with different
    types is an :class:`AnnotationError`; given twice with the same type it is
    accepted.
    """
    axes: dict[str, AxisType] = {}
    found = False
    for item in metadata:
        if isinstance(item, PartitionSpec):
            declared = spec_type(item).items()
        elif isinstance(item, AxisTypes):
            declared = tuple((axis, item.axis_type) for axis in item.axes)
        else:
            continue
        found = True
        for axis, kind in declared:
            previous = axes.setdefault(axis, kind)
            if previous != kind:
                raise AnnotationError(f"axis {axis!r} is annotated twice, as {previous.code} and {kind.code}")
    return SpmdType(axes) if found else None


def replicated_elsewhere(declared: SpmdType, axes: Iterable[str]) -> SpmdType:
    """What an annotation with a :class:`PartitionSpec` declares on a mesh of ``axes``.

    ``declared`` is what :func:`spmd_type_from_metadata` read from it (the
    spec's types and the markers'); a spec says the tensor is replicated on
    every axis it does not name, so each of ``axes`` that neither the spec nor
    a marker names is ``R``.  The checker takes ``axes`` from its ``axes``
    option, runtime checking from the current mesh.
    """
    return SpmdType({**dict.fromkeys(axes, R), **dict(declared.items())})


def spmd_type_of_hint(hint: object) -> SpmdType | None:
    """The SPMD type of an ``Annotated[Tensor, ...]`` hint, or ``None`` if it has none."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    return spmd_type_from_metadata(getattr(hint, "__metadata__", ()))


def axis_of_hint(hint: object) -> str | None:
    """The mesh axis of an ``Annotated[ProcessGroup, Axis["tp"]]`` hint, if any."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    names = {item.name for item in getattr(hint, "__metadata__", ()) if isinstance(item, Axis)}
    if len(names) > 1:
        raise AnnotationError(f"a process group can belong to one mesh axis, got {sorted(names)}")
    return names.pop() if names else None


class _SpmdMeta(type):
    def __getitem__(cls, item: tuple[object, ...]) -> object:
        if not isinstance(item, tuple) or len(item) < 2:
            raise AnnotationError(
                'Spmd[...] takes a tensor type and the SPMD type as a Literal string: Spmd[Tensor, Literal["dp:R"]]'
            )
        base, *rest = item
        metadata: list[object] = []
        for entry in rest:
            if typing.get_origin(entry) is typing.Literal:
                texts = typing.get_args(entry)
            elif isinstance(entry, (str, AxisTypes)):
                texts = (entry,)
            else:
                texts = ()
            if not texts or not all(isinstance(text, (str, AxisTypes)) for text in texts):
                raise AnnotationError(
                    f'Spmd[...] takes the SPMD type as a Literal string such as Literal["dp:R, tp:V"], got {entry!r}'
                )
            for text in texts:
                metadata.extend(markers_from_text(text) if isinstance(text, str) else [text])
        spmd_type_from_metadata(metadata)  # report conflicting axes now, not at the first get_type_hints
        return typing.Annotated[(base, *metadata)]


class Spmd(metaclass=_SpmdMeta):
    """``Spmd[Tensor, Literal["dp:R, tp:V"]]``: ``Annotated[Tensor, R["dp"], V["tp"]]``, spelled to survive type
    aliases and to read as ``Tensor`` to checkers without the plugin."""


def markers_from_text(text: str) -> list[AxisTypes]:
    """The markers equivalent to the text form ``"dp:R, tp:S(0)"`` of a declared type."""
    try:
        parsed = parse(text)
    except ValueError as error:
        raise AnnotationError(f"Spmd[...]: {error}") from None
    if parsed.default is not None or not len(parsed):
        raise AnnotationError('Spmd[...] needs one or more "axis:type" items, such as "dp:R, tp:V"')
    out = []
    for axis, kind in parsed.items():
        if isinstance(kind, Shard):
            out.append(shard_marker((axis, kind.dim)))
        elif isinstance(kind, LocalType):
            out.append(axis_types_marker(kind, axis))
        else:
            raise AnnotationError(f"Spmd[...]: {kind.code} is not a type a tensor can be declared with")
    return out
