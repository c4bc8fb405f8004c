"""A reduction's input read as a sum: a replicated term added to per-rank values before they are summed.

The rule is the core's (:mod:`spmd_types.typesystem.summation`); this adapter
finds the summands where users write them.  It reads the reduction's input
expression, or, when that is a variable, the value last assigned to it in the
same function before the call, and splits it at ``+`` and ``-``,
``torch.add``/``Tensor.add`` and the ``bias`` of ``F.linear``, each summand
with its type on the axis from mypy's type map::

    out = F.linear(x, w) + self.bias            # or F.linear(x, w, self.bias)
    return all_reduce(out, "tp", src=V, dst=R)  # spmd-partial: self.bias counted once per rank
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from mypy.nodes import CallExpr, Expression, MemberExpr, NameExpr, OpExpr, RefExpr
from mypy.plugin import FunctionContext

from spmd_mypy.compat import expression_type
from spmd_mypy.encoding import Encoder
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_types.typesystem import SpmdType, summed_replicated_term, sums_over_axis
from spmd_types.typesystem.collectives import Endpoint
from spmd_types.typesystem.local_types import AxisType, V, is_varying

__all__ = ["check_summed_input"]

_ADD: Final = frozenset({"torch._C._VariableFunctions.add", "torch._C.TensorBase.add"})
_LINEAR: Final = frozenset({"torch._C._nn.linear", "torch.nn.functional.linear"})

Summand = tuple[str, AxisType | None]


def check_summed_input(
    session: Session,
    ctx: FunctionContext,
    call: str,
    x: Expression,
    axis: str,
    src: Endpoint,
    dst: Endpoint | None,
    op: str,
    where: str,
) -> None:
    """Report ``call(x, axis, ...)`` when it sums over ``axis`` a replicated summand of ``x``."""
    if not sums_over_axis(call, src, dst, op):
        return
    built = session.value_of(ctx.api, x.name, ctx.context) if isinstance(x, NameExpr) else x
    if built is None:
        return
    summands = list(_summands(session, ctx, built, axis))
    if len(summands) < 2:
        return
    violation = summed_replicated_term(call, axis, summands)
    if violation is not None:
        session.reporter.violations(ctx.api, [violation], ctx.context, where, tuple(n for n, _ in summands),
                                    spell(x))


def _summands(session: Session, ctx: FunctionContext, expr: Expression, axis: str) -> Iterator[Summand]:
    if isinstance(expr, OpExpr) and expr.op in ("+", "-"):
        yield from _summands(session, ctx, expr.left, axis)
        yield from _summands(session, ctx, expr.right, axis)
        return
    if isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr):
        name = expr.callee.fullname
        callee = expr.callee
        if name in _ADD or (isinstance(callee, MemberExpr) and callee.name == "add" and not name):
            operands = ([callee.expr] if isinstance(callee, MemberExpr) and name not in _ADD else []) + expr.args[:2]
            for operand in operands[:2]:
                yield from _summands(session, ctx, operand, axis)
            return
        if name in _LINEAR:
            bias = _argument(expr, 2, "bias")
            if bias is not None:
                factors = [e for e in (_argument(expr, 0, "input"), _argument(expr, 1, "weight")) if e is not None]
                kinds = [_kind(ctx, e, axis) for e in factors]
                product: AxisType | None = V if any(k is not None and is_varying(k) for k in kinds) else None
                yield f"{spell(expr.callee)}(...) without its bias", product
                yield spell(bias), _kind(ctx, bias, axis)
                return
    yield spell(expr), _kind(ctx, expr, axis)


def _argument(call: CallExpr, position: int, name: str) -> Expression | None:
    for index, (arg_name, arg) in enumerate(zip(call.arg_names, call.args)):
        if arg_name == name or (arg_name is None and index == position):
            return arg
    return None


def _kind(ctx: FunctionContext, expr: Expression, axis: str) -> AxisType | None:
    typ = expression_type(ctx.api, expr)
    found = Encoder.read(typ) if typ is not None else None
    return found.get(axis) if isinstance(found, SpmdType) else None
