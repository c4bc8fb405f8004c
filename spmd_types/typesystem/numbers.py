"""Python numbers that are not constants: read out of tensors, or computed from the rank's index.

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
  (:func:`rank_index`): ``V`` on that axis, weak on the others.

Numbers combine as tensors do, by the op table's rules for the operators
(:func:`arithmetic`: ``p * 2`` is still a summand, ``p + 1`` counts the ``1``
once per rank), and a function of them that is not linear (``math.exp``,
``abs``, ``round``, ``max``) by the rule of a non-linear op
(:func:`through_function`: a pending sum through it is an error).  None of
them carries a gradient.

A shard's local length (``t.shape[d]`` along its sharded dim) is the same on
every rank, yet not the global length the single-device program would see;
no local type says so, and it is taken as a constant (see the soundness page).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final

from spmd_types.typesystem.join import Operand, OpOutcome, apply_op
from spmd_types.typesystem.local_types import WEAK, I, R, Shard, V
from spmd_types.typesystem.ops import NONLINEAR, lookup, method_name
from spmd_types.typesystem.spmd_type import SpmdType

__all__ = ["NUMBER_OPERATORS", "arithmetic", "rank_index", "read_out", "through_function"]

NUMBER_OPERATORS: Final[dict[str, str]] = {
    "+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "//": "__floordiv__", "%": "__mod__",
    "**": "__pow__", "unary -": "__neg__", "unary +": "__pos__",
}
"""Python's arithmetic operators on numbers, by symbol, as the tensor operators whose rules they follow."""


def read_out(t: SpmdType) -> SpmdType:
    """The type of a number read out of a tensor of type ``t`` (``t.item()``): see the module's table."""
    return SpmdType({axis: WEAK if kind in (R, I) else V if isinstance(kind, Shard) else kind
                     for axis, kind in t.items()}, t.default)


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
