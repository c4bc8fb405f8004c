"""Annotation markers and how ``Annotated`` metadata becomes an :class:`SpmdType`.

``R["dp"]``, ``V["dp", "cp"]`` and ``S["tp", 0]`` evaluate to :class:`AxisTypes`
values; ``Axis["tp"]`` (for process groups) evaluates to :class:`Axis`.  Both
are plain metadata for ``typing.Annotated``::

    x: Annotated[Tensor, R["dp"], V["tp"]]
    group: Annotated[ProcessGroup, Axis["tp"]]

``Spmd[Tensor, "dp:R, tp:V"]`` (or ``Spmd[Tensor, R["dp"], V["tp"]]``) builds the
same ``Annotated`` type.  In type aliases mypy drops the metadata of
``Annotated`` (python/mypy#17514) and reads ``"dp"`` in ``R["dp"]`` as a name;
the string form is the one that survives there.

:func:`spmd_type_of_hint` reads the SPMD type back from such a hint (for
example from ``typing.get_type_hints(f, include_extras=True)``); metadata of
other libraries is ignored.  Malformed markers raise :class:`AnnotationError`.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable

from spmd_types.typesystem.local_types import AxisType, LocalType, Shard
from spmd_types.typesystem.spmd_type import SpmdType

__all__ = [
    "AnnotationError",
    "Axis",
    "AxisTypes",
    "Spmd",
    "axis_of_hint",
    "axis_types_marker",
    "markers_from_text",
    "shard_marker",
    "spmd_type_from_metadata",
    "spmd_type_of_hint",
]


class AnnotationError(TypeError):
    """A malformed SPMD annotation (``R[0]``, ``S["tp"]``, conflicting axes, ...)."""


class AxisTypes:
    """Metadata saying that a tensor has type ``axis_type`` on each of ``axes``."""

    __slots__ = ("axes", "axis_type")

    axis_type: LocalType | Shard
    axes: tuple[str, ...]

    def __init__(self, axis_type: LocalType | Shard, axes: tuple[str, ...]) -> None:
        object.__setattr__(self, "axis_type", axis_type)
        object.__setattr__(self, "axes", axes)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("AxisTypes is immutable")

    def __repr__(self) -> str:
        if isinstance(self.axis_type, Shard):
            return f"S[{self.axes[0]!r}, {self.axis_type.dim}]"
        return f"{self.axis_type.code}[{', '.join(map(repr, self.axes))}]"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, AxisTypes)
            and other.axis_type == self.axis_type
            and other.axes == self.axes
        )

    def __hash__(self) -> int:
        return hash((self.axis_type, self.axes))


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


def axis_types_marker(axis_type: LocalType, axes: str | tuple[str, ...]) -> AxisTypes:
    """What ``R[axes]`` evaluates to; validates that ``axes`` are axis names."""
    names = axes if isinstance(axes, tuple) else (axes,)
    if not names:
        raise AnnotationError(f"{axis_type.code}[...] needs at least one mesh-axis name")
    for name in names:
        if not isinstance(name, str) or not name:
            raise AnnotationError(
                f"{axis_type.code}[...] takes mesh-axis names as strings, "
                f"got {name!r} ({type(name).__name__})"
            )
    if len(set(names)) != len(names):
        raise AnnotationError(f"{axis_type.code}[...] names an axis twice: {names!r}")
    return AxisTypes(axis_type, names)


def shard_marker(key: object) -> AxisTypes:
    """What ``S[axis, dim]`` evaluates to; validates both parts."""
    if not isinstance(key, tuple) or len(key) != 2:
        raise AnnotationError(
            f"S[...] takes a mesh-axis name and a tensor dim, as in S['tp', 0]; got S[{key!r}]"
        )
    axis, dim = key
    if not isinstance(axis, str) or not axis:
        raise AnnotationError(f"S[axis, dim]: the axis must be a string name, got {axis!r}")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise AnnotationError(f"S[axis, dim]: the dim must be an int, got {dim!r} in S[{axis!r}, {dim!r}]")
    return AxisTypes(Shard(dim), (axis,))


def spmd_type_from_metadata(metadata: Iterable[object]) -> SpmdType | None:
    """The SPMD type that ``Annotated`` metadata declares, or ``None`` if it has none.

    Foreign metadata is skipped.  An axis given twice with different types is an
    :class:`AnnotationError`; given twice with the same type it is accepted.
    """
    axes: dict[str, AxisType] = {}
    found = False
    for item in metadata:
        if not isinstance(item, AxisTypes):
            continue
        found = True
        for axis in item.axes:
            previous = axes.setdefault(axis, item.axis_type)
            if previous != item.axis_type:
                raise AnnotationError(
                    f"axis {axis!r} is annotated twice, as {previous.code} and {item.axis_type.code}"
                )
    return SpmdType(axes) if found else None


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
            raise AnnotationError('Spmd[...] takes a tensor type and SPMD markers or a string: Spmd[Tensor, "dp:R"]')
        base, *rest = item
        metadata: list[object] = []
        for entry in rest:
            if isinstance(entry, str):
                metadata.extend(markers_from_text(entry))
            elif isinstance(entry, AxisTypes):
                metadata.append(entry)
            else:
                raise AnnotationError(f"Spmd[...] takes SPMD markers or a string such as \"dp:R, tp:V\", got {entry!r}")
        spmd_type_from_metadata(metadata)  # report conflicting axes now, not at the first get_type_hints
        return typing.Annotated[(base, *metadata)]


class Spmd(metaclass=_SpmdMeta):
    """``Spmd[Tensor, "dp:R, tp:V"]``: ``Annotated[Tensor, R["dp"], V["tp"]]``, spelled to survive type aliases."""


def markers_from_text(text: str) -> list[AxisTypes]:
    """The markers equivalent to the text form ``"dp:R, tp:S(0)"`` of a declared type."""
    from spmd_types.typesystem.spmd_type import parse

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
