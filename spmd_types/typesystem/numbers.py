"""Python numbers that are not constants: read out of tensors, computed from the rank's index, or a shard's length.

A Python number in a tensor op is usually a constant every rank shares, a
learning rate or ``1 / hidden``: ``weak`` on every axis.  Numbers a program
reads out of its tensors, or computes from the rank's position on an axis,
are not, and typing them as constants would accept wrong programs: the mean
of a ``V`` loss read with ``.item()`` and multiplied into an ``R`` weight
gives every rank a different weight.  Their types, on each axis:

* a number read out of a tensor, ``t.item()``, ``float(t)``, ``int(t)``,
  ``t.tolist()[k]`` (:func:`read_out`): where ``t`` is ``R`` or ``I``, weak (the
  same number on every rank, outside autograd); ``V`` or ``S(i)``: ``V`` (this
  rank's piece); ``P``: ``P`` (this rank's summand of the sum); ``zero`` and
  ``weak`` stay what they are;
* the rank's index on an axis, ``axis_index(a)`` or a library's rank getter
  (:func:`rank_index`): ``V`` on that axis, weak on the others;
* a length of a tensor, ``t.shape[d]``, ``t.size(d)``, ``len(t)`` (:func:`length`),
  ``t.numel()`` (:func:`element_count`): ``V`` on each axis where ``t`` is a
  shard on that dim (on any dim, for ``numel``), weak on the others.  Every rank
  holds the same number there, but it is the length of the rank's piece, and a
  single-device program reading the same expression gets the global length:
  on one device the number means something else, so it is this rank's own
  number, usable with the rank's own (``V``) data and nowhere else.  The length
  of a dim no axis shards, and of an ``R``, ``I``, ``V`` or ``P`` tensor, is a
  constant;
* a shard's length times the number of ranks on its axis, ``t.shape[0] *
  axis_size("tp")`` (:func:`global_length`): the global length, weak there.

Numbers combine as tensors do, by the op table's rules for the operators
(:func:`arithmetic`: ``p * 2`` is still a summand, ``p + 1`` counts the ``1``
once per rank), and a function of them that is not linear (``math.exp``,
``abs``, ``round``, ``max``) by the rule of a non-linear op
(:func:`through_function`: a pending sum through it is an error).  None of
them carries a gradient.

Sizes passed to ``view``, ``reshape`` or ``zeros`` are not numbers in this
sense: they describe the rank's own piece, and the plugin does not read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final

from spmd_types.typesystem.join import Operand, OpOutcome, apply_op
from spmd_types.typesystem.local_types import WEAK, I, R, Shard, V
from spmd_types.typesystem.ops import NONLINEAR, lookup, method_name
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Violation

__all__ = [
    "NUMBER_OPERATORS", "arithmetic", "element_count", "global_length", "length", "on_a_length", "rank_index",
    "read_out", "through_function",
]

NUMBER_OPERATORS: Final[dict[str, str]] = {
    "+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "//": "__floordiv__", "%": "__mod__",
    "**": "__pow__", "unary -": "__neg__", "unary +": "__pos__",
}
"""Python's arithmetic operators on numbers, by symbol, as the tensor operators whose rules they follow."""


def read_out(t: SpmdType) -> SpmdType:
    """The type of a number read out of a tensor of type ``t`` (``t.item()``): see the module's table."""
    return SpmdType({axis: WEAK if kind in (R, I) else V if isinstance(kind, Shard) else kind
                     for axis, kind in t.items()}, t.default)


def length(t: SpmdType, dim: int | None, ndim: int | None = None) -> SpmdType:
    """The type of ``t.shape[dim]`` of a tensor of type ``t`` and rank ``ndim``: see the module's table.

    ``dim`` is ``None`` where it is not known, and a shard counted from the
    other end than ``dim`` (``S(1)`` and ``shape[-1]``) is the same dim unless
    ``ndim`` says it is not: where it cannot be told, the length is taken as
    the piece's (``V``), never as a constant it may not be.
    """
    return SpmdType({axis: V for axis, kind in t.items() if isinstance(kind, Shard) and _same_dim(kind.dim, dim, ndim)},
                    default=WEAK)


def element_count(t: SpmdType) -> SpmdType:
    """The type of ``t.numel()``: ``V`` on each axis where ``t`` is a shard, weak elsewhere."""
    return length(t, None)


def global_length(local: SpmdType, axes: Iterable[str]) -> SpmdType:
    """The type of a length of type ``local`` (:func:`length`) times the number of ranks on each of ``axes``.

    The ranks' pieces of a shard are equally long (the runtime's collectives
    require it), so the piece's length times the number of pieces is the
    global length, on every rank: weak on ``axes``.
    """
    counted = set(axes)
    return SpmdType({axis: WEAK if axis in counted and kind is V else kind for axis, kind in local.items()},
                    local.default)


def on_a_length(violation: Violation, spelled: str) -> Violation:
    """``violation`` of an op one of whose operands is the shard length ``spelled``, said so, without fixes.

    The fixes the op's rule offers reduce or convert a tensor operand; the
    mistake is more likely the length, the piece's where the global one is meant.
    """
    axis = f'axis_size("{violation.axis}")' if violation.axis is not None else "the number of ranks"
    return replace(violation, fixes=(), reason=(
        f"{violation.reason}: {spelled} reads the length of this rank's piece of a shard; for the global "
        f"length, multiply it by {axis}"))


def _same_dim(shard: int, dim: int | None, ndim: int | None) -> bool:
    if dim is None or shard == dim:
        return True
    if (shard < 0) == (dim < 0):
        return False
    return ndim is None or shard % ndim == dim % ndim


def rank_index(axes: Iterable[str]) -> SpmdType:
    """The type of a number computed from the rank's index on each of ``axes``: ``V`` there, weak elsewhere."""
    return SpmdType(dict.fromkeys(axes, V), default=WEAK)


def arithmetic(symbol: str, operands: Sequence[SpmdType]) -> OpOutcome:
    """``a <symbol> b`` (or ``<symbol> a``) of numbers of types ``operands``, by the tensor operator's rule.

    A symbol outside :data:`NUMBER_OPERATORS` (bit operations, comparisons)
    is taken as a function of its operands that is not linear.
    """
    name = NUMBER_OPERATORS.get(symbol)
    if name is None:
        return through_function(operands)
    params = ("input", "other")[:len(operands)]
    return _on_numbers(apply_op(lookup(method_name(name)), [Operand(p, t, 0) for p, t in zip(params, operands)],
                                autograd=False))


def through_function(operands: Sequence[SpmdType]) -> OpOutcome:
    """A function of numbers of types ``operands`` that is not linear in them (``math.exp``, ``round``, ``max``)."""
    return _on_numbers(apply_op(NONLINEAR, [Operand(f"arg{k}", t, 0) for k, t in enumerate(operands)],
                                autograd=False))


def _on_numbers(outcome: OpOutcome) -> OpOutcome:
    """``outcome`` with its violations worded for numbers, and without fixes.

    A fix is a collective on a tensor; a Python number has left the tensors,
    so the fix is to reduce the tensor before reading the number out of it.
    """
    if not outcome.violations:
        return outcome
    return OpOutcome(outcome.result, tuple(
        replace(v, reason=f"{v.reason}, in a Python number: reduce the tensor before reading the number out of it",
                fixes=())
        for v in outcome.violations))
