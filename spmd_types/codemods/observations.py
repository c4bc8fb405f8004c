"""What ``spmd-annotate`` observed, as plain data: the SPMD types to write into module classes, and why not elsewhere.

The observer (:mod:`spmd_types.codemods.observe`, which runs the model)
produces an :class:`Observation`; the writer
(:mod:`spmd_types.codemods.writer`, which rewrites source) consumes it.  This
module imports neither torch nor libcst.  It also holds the pure rules the
observer applies to what it saw:

* :func:`known_part`: an observed type keeps only the axes a declaration can
  state (``R``, ``I``, ``V``, ``P``, ``S(i)``); a constant's axis says nothing;
* :func:`scaled_dim` and :func:`refine`: a varying value whose dim ``d`` is
  ``n`` times smaller on a mesh whose axis has ``n`` ranks than on one rank is
  a shard of that dim, ``S(d)`` (the local types forget shard dims, shapes do
  not);
* :func:`settle`: the values seen at one position over every call agree, or
  the position is left alone and reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from spmd_types.typesystem import LocalType, Shard, SpmdType, V

__all__ = [
    "RESULT", "ClassTypes", "Note", "Observation", "Shape", "Value", "known_part", "refine", "scaled_dim", "settle",
]

RESULT = "return"
"""The position of ``forward``'s result."""

Shape: TypeAlias = tuple[int, ...]

Value: TypeAlias = "SpmdType | tuple[SpmdType | None, ...]"
"""What a position holds: a tensor's SPMD type, or a tuple result's elements (``None``: not a typed tensor)."""


@dataclass(frozen=True)
class ClassTypes:
    """The SPMD types to write into one ``nn.Module`` class of a source file.

    ``arguments`` are ``forward``'s parameters by name, ``result`` its
    result (``None``: nothing to write), ``parameters`` the class's tensors
    (``nn.Parameter`` attributes) by name.  Positions that already declare
    an SPMD type, or whose observations disagree, are not listed.
    """

    file: str
    qualname: str
    arguments: Mapping[str, SpmdType] = field(default_factory=dict)
    result: Value | None = None
    parameters: Mapping[str, SpmdType] = field(default_factory=dict)


@dataclass(frozen=True)
class Note:
    """Something about one position that the user should know: why it is not annotated, or a disagreement."""

    file: str
    qualname: str
    position: str  # "forward(x)", "forward -> return", or a parameter's name
    message: str

    def __str__(self) -> str:
        return f"{self.qualname}.{self.position}: {self.message}"


@dataclass(frozen=True)
class Observation:
    """Everything one observation found: the types to write, class by class, and the notes."""

    classes: tuple[ClassTypes, ...]
    notes: tuple[Note, ...]

    def types(self, qualname: str) -> ClassTypes | None:
        """The types observed for the class ``qualname`` (the first, if several files define one)."""
        return next((c for c in self.classes if c.qualname == qualname), None)

    def files(self) -> tuple[str, ...]:
        """The source files with something to write, in the order first observed."""
        return tuple(dict.fromkeys(c.file for c in self.classes))


def known_part(t: SpmdType) -> SpmdType:
    """``t`` on the axes a declaration can state: a constant's axis (weak, zero) and the default are dropped."""
    return SpmdType({axis: kind for axis, kind in t.items() if isinstance(kind, (LocalType, Shard))})


def scaled_dim(local: Shape, whole: Shape, n: int) -> int | None:
    """The one dim along which ``local`` (on ``n`` ranks of an axis) is ``n`` times smaller than ``whole`` (on one).

    ``None`` when the shapes differ in rank, in more than one dim, or by
    another factor.
    """
    if len(local) != len(whole):
        return None
    differing = [d for d, (a, b) in enumerate(zip(local, whole)) if a != b]
    if len(differing) != 1 or local[differing[0]] * n != whole[differing[0]]:
        return None
    return differing[0]


def refine(t: SpmdType, local: Shape, wholes: Mapping[str, tuple[int, Shape]]) -> SpmdType:
    """``t`` with each ``V`` axis made ``S(d)`` where the shapes show the value is sharded along ``d``.

    ``wholes`` maps an axis to its size ``n`` and the shape the same value had
    when that axis had one rank.
    """
    out = t
    for axis, kind in t.items():
        probe = wholes.get(axis)
        if kind is V and probe is not None:
            dim = scaled_dim(local, probe[1], probe[0])
            if dim is not None:
                out = out.with_axis(axis, Shard(dim))
    return out


def settle(seen: Sequence[Value]) -> Value | str:
    """The one value observed at a position over all calls, or why there is none (a message).

    Calls that disagree signal a contract that depends on configuration or
    data: the position is reported, not annotated.  A value that knows no
    axis says nothing.
    """
    distinct = list(dict.fromkeys(seen))
    if not distinct:
        return "never observed"
    if len(distinct) > 1:
        return "the calls disagree (" + "; ".join(_describe(v) for v in distinct) + "): not annotated"
    value = distinct[0]
    if isinstance(value, SpmdType) and value.is_unknown:
        return "no SPMD type was observed (nothing typed flowed into it): not annotated"
    if isinstance(value, tuple) and all(item is None or item.is_unknown for item in value):
        return "no element had an SPMD type: not annotated"
    return value


def _describe(value: Value) -> str:
    if isinstance(value, SpmdType):
        return value.describe()
    return "(" + ", ".join("-" if item is None else item.describe() for item in value) + ")"
