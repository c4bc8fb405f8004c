"""Summing per-rank values over an axis when one of their summands is the same on every rank.

A row-parallel linear layer computes per-rank products whose sum is the output.
Written in local SPMD with ``V`` (per-rank data) rather than ``P``::

    out = F.linear(x, w) + bias           # V + R is V: nothing wrong yet
    out = all_reduce(out, "tp", src=V, dst=R)

the reduction adds every rank's copy of ``bias``: the output is off by
``(N - 1) * bias``.  The join cannot see it (``V + R`` is a fine ``V``); the
reduction can, if it is told how its input was built.  :func:`summed_replicated_term`
is that rule: when a call sums its input over the axis (an ``all_reduce`` or
``reduce_scatter`` with ``op="sum"``, or ``reinterpret`` to ``P``, which
declares the per-rank values summands) and the input is a sum of varying
summands and a replicated one (``R`` or ``I``), the replicated summand is
counted once per rank.  An average is fine (``mean(v + b) = mean(v) + b``).

No mechanical fix is offered: the right program adds the term after the
reduction, which is a change of the expression, not of the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from spmd_types.typesystem.codes import Code
from spmd_types.typesystem.collectives import Endpoint
from spmd_types.typesystem.local_types import AxisType, I, P, R, is_varying
from spmd_types.typesystem.violations import Violation

__all__ = ["BIASED_PRODUCTS", "SUM_OPS", "summed_replicated_term", "sums_over_axis"]

SUM_OPS: Final = frozenset({"torch.add", "torch.Tensor.add", "torch.sub", "torch.Tensor.sub"})
"""Ops (by public name) whose result is the sum of their tensor arguments: ``a + b`` and ``a - b`` run as these."""

BIASED_PRODUCTS: Final = {"torch.nn.functional.linear": "bias"}
"""Ops whose result is a product of arguments plus a summand argument, and that argument's name."""


def sums_over_axis(call: str, src: Endpoint, dst: Endpoint | None, op: str = "sum") -> bool:
    """Whether ``call(x, axis, src=src, dst=dst, op=op)`` adds the ranks' values of ``x`` together."""
    if call in ("all_reduce", "reduce_scatter"):
        return op == "sum" and (src is P or is_varying(src))
    return call == "reinterpret" and dst is P and is_varying(src)


def summed_replicated_term(
    call: str, axis: str, summands: Sequence[tuple[str, AxisType | None]]
) -> Violation | None:
    """The violation when ``call`` sums over ``axis`` an input built as ``summands`` (name, type on the axis).

    Wrong when at least one summand varies across ranks and another is
    replicated (``R`` or ``I``): that one would be added once per rank.
    """
    if not any(kind is not None and is_varying(kind) for _, kind in summands):
        return None
    for index, (name, kind) in enumerate(summands):
        if kind is R or kind is I:
            then = "declares them the summands of a pending sum" if call == "reinterpret" else "sums them over the axis"
            reason = (f"{name} ({kind.code}) is added to per-rank values before {call} {then}, "
                      f"so it is counted once per rank; add it after the reduction")
            return Violation(Code.PARTIAL, axis, reason, ("V", kind.code), (index,))
    return None
