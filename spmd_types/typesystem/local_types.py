"""The per-axis local SPMD types and their gradient duality.

On one device-mesh axis a tensor is one of:

======  =====================================  =============
type    forward data                           gradient type
======  =====================================  =============
``R``   the same on every rank                 ``P``
``I``   the same on every rank                 ``I``
``V``   different on every rank                ``V``
``P``   a pending sum over the ranks           ``R``
``S(i)`` ``V``, and globally the concatenation  ``S(i)``
        of the ranks' tensors along dim ``i``
======  =====================================  =============

Two more per-axis kinds exist only as operands of ordinary ops: ``weak``
(a constant such as a Python scalar, ``torch.ones(...)`` or the ``.detach()``
of an ``R``/``I`` tensor, which has no gradient and so fits ``R``, ``I`` and
``V``) and ``zero`` (a zero constant, which fits every type, even as a summand
of a partial sum).

``R``, ``I``, ``V`` and ``P`` double as annotation markers: ``R["dp"]`` and
``R["dp", "cp"]`` build :class:`AxisTypes` metadata for ``typing.Annotated``;
``S["tp", 0]`` does the same for shards.  How metadata becomes a tensor's type
is :mod:`spmd_types.typesystem.annotations`.
"""

from __future__ import annotations

import re
from typing import Final, TypeAlias

__all__ = [
    "LOCAL_TYPES",
    "WEAK",
    "ZERO",
    "AnnotationError",
    "AxisType",
    "AxisTypes",
    "Constant",
    "I",
    "LocalType",
    "P",
    "R",
    "S",
    "Shard",
    "V",
    "axis_types_marker",
    "gradient_type",
    "is_varying",
    "local_type",
    "parse_axis_type",
    "shard_marker",
]


class LocalType:
    """One of the four local SPMD types ``R``, ``I``, ``V``, ``P`` (singletons).

    Compare with ``is``; ``repr`` is the one-letter code.  Subscripting builds
    annotation metadata: ``R["dp"]``, ``V["dp", "cp"]``.
    """

    __slots__ = ("code", "name")

    code: str
    name: str

    def __init__(self, code: str, name: str) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "name", name)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"{self.code} is immutable")

    def __repr__(self) -> str:
        return self.code

    def __reduce__(self) -> str:
        return self.code

    def __getitem__(self, axes: str | tuple[str, ...]) -> AxisTypes:
        return axis_types_marker(self, axes)


R: Final = LocalType("R", "replicate")
I: Final = LocalType("I", "invariant")  # noqa: E741 - the type's name everywhere in the docs
V: Final = LocalType("V", "varying")
P: Final = LocalType("P", "partial")


class _ShardMeta(type):
    """Lets ``S["tp", 0]`` build shard annotation metadata on the class."""

    def __getitem__(cls, key: tuple[str, int]) -> AxisTypes:
        return shard_marker(key)


class Shard(metaclass=_ShardMeta):
    """``S(i)``: varying, and globally the concatenation along tensor dim ``i``.

    ``S(0) == S(0)``; ``S(-1)`` names the last dim.  In local SPMD a shard is a
    ``V`` that also says how the ranks' tensors assemble into a global one.
    """

    __slots__ = ("dim",)

    dim: int

    def __init__(self, dim: int) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"S(dim) needs an int tensor dimension, got {dim!r}")
        object.__setattr__(self, "dim", dim)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("S(dim) is immutable")

    @property
    def code(self) -> str:
        return f"S({self.dim})"

    def __repr__(self) -> str:
        return self.code

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self) -> int:
        return hash(("S", self.dim))

    def __reduce__(self) -> tuple[type[Shard], tuple[int]]:
        return (Shard, (self.dim,))


S = Shard


class Constant:
    """A constant operand: ``weak`` (fits R, I, V) or ``zero`` (fits everything)."""

    __slots__ = ("code",)

    code: str

    def __init__(self, code: str) -> None:
        object.__setattr__(self, "code", code)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"{self.code} is immutable")

    def __repr__(self) -> str:
        return self.code

    def __reduce__(self) -> str:
        return self.code.upper()


WEAK: Final = Constant("weak")
ZERO: Final = Constant("zero")

AxisType: TypeAlias = LocalType | Shard | Constant
"""What a tensor is on one mesh axis."""

LOCAL_TYPES: Final[dict[str, LocalType]] = {t.code: t for t in (R, I, V, P)}
"""The four local types by their codes."""
_SHARD_CODE: Final = re.compile(r"S\((-?\d+)\)")


def local_type(t: AxisType) -> AxisType:
    """``t`` with a shard forgotten: ``S(i)`` becomes ``V``; others unchanged."""
    return V if isinstance(t, Shard) else t


def is_varying(t: AxisType) -> bool:
    """Whether ``t`` is ``V`` or a shard ``S(i)``."""
    return t is V or isinstance(t, Shard)


def gradient_type(t: LocalType | Shard) -> LocalType | Shard:
    """The type of the gradient of a tensor of type ``t``: R↔P, I→I, V→V, S(i)→S(i)."""
    if t is R:
        return P
    if t is P:
        return R
    return t


def parse_axis_type(code: str) -> AxisType:
    """Inverse of ``AxisType.code``: ``"R"``, ``"S(-1)"``, ``"weak"``, ``"zero"``."""
    found = LOCAL_TYPES.get(code)
    if found is not None:
        return found
    if code == WEAK.code:
        return WEAK
    if code == ZERO.code:
        return ZERO
    match = _SHARD_CODE.fullmatch(code)
    if match is not None:
        return Shard(int(match.group(1)))
    raise ValueError(f"not an SPMD axis type: {code!r} (expected R, I, V, P, S(<dim>), weak or zero)")


# -- annotation markers -------------------------------------------------------------


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
