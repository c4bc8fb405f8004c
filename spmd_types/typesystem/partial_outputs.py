"""Explicit partial outputs: ``out_partial_axes=`` on the package's einsum, matmul, linear and sum.

A contraction over a dim that is split across the ranks of a mesh axis (the
row-parallel matmul of Megatron-style tensor parallelism: activations and
weight both cut along the contracted dim) leaves each rank with one summand of
the global result.  In local SPMD that per-rank result is ``V``; saying that
the ranks' results *are* the summands of one sum is a separate step,
``reinterpret(V -> P)``.  ``spmd_types.matmul(x, w, out_partial_axes="tp")``
is both steps in one call: the local op, then ``reinterpret(V -> P)`` on each
listed axis, with the forward and backward of that reinterpret (no-ops: the
gradient of the ``P`` result is ``R``, which the op's own backward takes as
the ``V`` gradient it is).  In global SPMD it is the only way to write such a
contraction: a partial result is never implicit.

:func:`check_partial_output` is the rule, used by the runtime functions, the
mypy plugin and runtime checking.  On each listed axis the op's result type
(the join of :func:`~spmd_types.typesystem.join.apply_op`) goes through the
collectives table's ``reinterpret(src=V, dst=P)``:

=============================  ==========================================
the op's local result on axis  result
=============================  ==========================================
``V``, zero, unknown           ``P``
``S(i)``                       error: the pieces of one tensor, not summands
``R``, ``I``, a constant       error: counted once per rank
``P``                          error: already a pending sum
the op's own violation         that violation, the result unknown
=============================  ==========================================

A ``S(i)`` result means no contracted dim was split on the axis (the shard
went through to the output): its ranks hold different parts of one tensor,
and their sum means nothing.  A bias (``linear(..., bias=b)``) with
``out_partial_axes`` is an error whatever its type: added on every rank
before the sum is declared pending, it would be counted once per rank; it
belongs after the reduction, or converted to ``P`` and added to the result.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from spmd_types.typesystem.collectives import check_call, flattened_axes
from spmd_types.typesystem.join import Operand, OpOutcome, apply_op
from spmd_types.typesystem.local_types import WEAK, AxisType, P, Shard, V
from spmd_types.typesystem.ops import lookup
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.summation import BIASED_PRODUCTS
from spmd_types.typesystem.violations import Code, Violation

__all__ = [
    "PARTIAL_OUTPUT_FUNCTIONS",
    "PartialOutputFunction",
    "check_partial_output",
    "partial_axes",
    "partial_output_bias",
]


@dataclass(frozen=True)
class PartialOutputFunction:
    """A function of ``spmd_types`` that takes ``out_partial_axes=``: the torch op it runs locally.

    ``renamed`` maps the function's parameter names to the op table's names
    for the op, where they differ (``einsum(equation, *operands)`` passes
    ``operands`` where ``torch.einsum`` has ``*args``).
    """

    name: str
    op: str
    renamed: Mapping[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """How messages name a call of the function: ``spmd_types.matmul``."""
        return f"spmd_types.{self.name}"

    def op_param(self, name: str) -> str:
        """The op table's name for the function's parameter ``name``."""
        return self.renamed.get(name, name)


PARTIAL_OUTPUT_FUNCTIONS: Final[dict[str, PartialOutputFunction]] = {
    f.name: f
    for f in (
        PartialOutputFunction("einsum", "torch.einsum", {"operands": "args"}),
        PartialOutputFunction("matmul", "torch.matmul"),
        PartialOutputFunction("linear", "torch.nn.functional.linear"),
        PartialOutputFunction("sum", "torch.sum"),
    )
}
"""The functions with ``out_partial_axes=``, by their name in ``spmd_types``."""


def partial_axes(value: object) -> tuple[tuple[str, ...] | None, str | None]:
    """``out_partial_axes=`` as a tuple of distinct mesh-axis names (``()``: none), or why it is not one."""
    if isinstance(value, tuple) and not value:
        return (), None
    names = (value,) if isinstance(value, str) else value
    if not (isinstance(names, tuple) and all(isinstance(name, str) and name for name in names)):
        return None, f"out_partial_axes takes a mesh-axis name or a tuple of them, got {value!r}"
    return flattened_axes(names)


def partial_output_bias(function: PartialOutputFunction, axes: tuple[str, ...]) -> Violation:
    """Why a bias may not be passed together with ``out_partial_axes=axes``."""
    spelled = ", ".join(repr(axis) for axis in axes)
    first = axes[0]
    reason = (f"a bias with out_partial_axes would be added on every rank before the sum over {spelled} is "
              f"declared pending, so the result would count it once per rank; call {function.name} without "
              f"the bias and add it after the reduction (all_reduce(y, \"{first}\", src=P, dst=R) + bias), or "
              f"add convert(bias, \"{first}\", src=R, dst=P) to the partial result")
    return Violation(Code.PARTIAL, None, reason)


def check_partial_output(
    function: PartialOutputFunction,
    operands: Sequence[Operand],
    axes: tuple[str, ...],
    passed: Collection[str] = (),
    *,
    autograd: bool = True,
    args: Mapping[str, object] | None = None,
) -> OpOutcome:
    """The result type of ``function(..., out_partial_axes=axes)`` on ``operands``, and what is wrong.

    ``operands`` are named as the op table names the op's parameters (see
    :attr:`PartialOutputFunction.renamed`); ``passed``, ``autograd`` and
    ``args`` are as for :func:`~spmd_types.typesystem.join.apply_op`, which
    gives the op's own result.  On each axis of ``axes`` that result then
    goes through ``reinterpret(src=V, dst=P)``; see the module table.  On an
    axis with a violation the result is unknown.
    """
    outcome = apply_op(lookup(function.op), operands, passed, autograd=autograd, op=function.op, args=args)
    if not axes:
        return outcome
    result = outcome.result
    # A cast of an operand that fixes the op on a listed axis leaves its result no longer V there, which
    # out_partial_axes would then reject: no single fix is right, so none is offered.
    violations = [replace(v, reason=f"{v.reason}; out_partial_axes lists {v.axis!r} too, so the operands and the "
                                    "axes must change together", fixes=())
                  if v.axis in axes else v for v in outcome.violations]
    bias = BIASED_PRODUCTS.get(function.op)
    if bias is not None and any(operand.param == bias for operand in operands):
        violations.append(partial_output_bias(function, axes))
        for axis in axes:
            result = _unknown_on(result, axis)
        return OpOutcome(result, tuple(violations))
    broken = {v.axis for v in outcome.violations}
    for axis in axes:
        if axis in broken:
            continue  # the op itself is wrong on the axis, and said so
        have = result.get(axis)
        problem = _not_summands(axis, have)
        if problem is None:
            reinterpreted = check_call("reinterpret", axis, have, V, P)
            if reinterpreted.violations:
                assert have is not None  # an unknown input is accepted by every src
                problem = _already_replicated_or_partial(axis, have)
        if problem is not None:
            violations.append(problem)
            result = _unknown_on(result, axis)
        else:
            result = result.with_axis(axis, P)
    return OpOutcome(result, tuple(violations))


def _unknown_on(t: SpmdType, axis: str) -> SpmdType:
    """``t`` with ``axis`` unknown; a constant's default (which would say what ``axis`` is) goes too."""
    return SpmdType({name: kind for name, kind in t.items() if name != axis})


def _not_summands(axis: str, have: AxisType | None) -> Violation | None:
    """Local results that ``reinterpret(src=V)`` takes but that are not the summands of a contraction."""
    if isinstance(have, Shard):
        reason = (f"out_partial_axes lists {axis!r}, but the local result is {have.code} there: the ranks hold "
                  f"pieces of one tensor, not summands of it (the op sums over no dim split on {axis!r}); "
                  f"drop {axis!r} from out_partial_axes, or all_gather the result if it is needed whole")
        return Violation(Code.PARTIAL, axis, reason, (have.code,))
    if have is WEAK:
        return _already_replicated_or_partial(axis, have)
    return None


def _already_replicated_or_partial(axis: str, have: AxisType) -> Violation:
    if have is P:
        reason = (f"out_partial_axes lists {axis!r}, but the local result is already P there (a pending sum); "
                  f"drop {axis!r} from out_partial_axes")
    else:
        reason = (f"out_partial_axes lists {axis!r}, but the local result is {have.code} there: every rank "
                  f"computes the same value, which as a pending sum would be counted once per rank; drop "
                  f"{axis!r} from out_partial_axes (the local result is V on an axis that splits a dim "
                  f"the op sums over)")
    return Violation(Code.PARTIAL, axis, reason, (have.code,))
