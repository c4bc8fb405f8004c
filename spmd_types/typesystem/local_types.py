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
``R["dp", "cp"]`` build :class:`~spmd_types.typesystem.annotations.AxisTypes`
metadata for ``typing.Annotated``; ``S["tp", 0]`` does the same for shards.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, TypeAlias

if TYPE_CHECKING:
    from spmd_types.typesystem.annotations import AxisTypes

__all__ = [
    "WEAK",
    "ZERO",
    "AxisType",
    "Constant",
    "I",
    "LocalType",
    "P",
    "R",
    "S",
    "Shard",
    "V",
    "gradient_type",
    "is_varying",
    "local_type",
    "parse_axis_type",
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
        from spmd_types.typesystem.annotations import axis_types_marker

        return axis_types_marker(self, axes)


R: Final = LocalType("R", "replicate")
I: Final = LocalType("I", "invariant")  # noqa: E741 - the type's name everywhere in the docs
V: Final = LocalType("V", "varying")
P: Final = LocalType("P", "partial")


class _ShardMeta(type):
    """Lets ``S["tp", 0]`` build shard annotation metadata on the class."""

    def __getitem__(cls, key: tuple[str, int]) -> AxisTypes:
        from spmd_types.typesystem.annotations import shard_marker

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

_LOCAL_TYPES: Final = {t.code: t for t in (R, I, V, P)}
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
    found = _LOCAL_TYPES.get(code)
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
