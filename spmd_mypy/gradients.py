"""Where a backward pass is started: ``loss.backward()``, ``torch.autograd.backward`` and ``torch.autograd.grad``.

Each seeds the backward pass of its outputs, with ones or with the gradient
given (``gradient=``, ``grad_tensors=``, ``grad_outputs=``); the rule for the
seed is the core's :func:`~spmd_types.typesystem.check_backward`.  Outputs and
gradients passed as a list or tuple display are checked pairwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from mypy.nodes import CallExpr, Expression, ListExpr, MemberExpr, TupleExpr
from mypy.plugin import FunctionContext, MethodContext

from spmd_mypy.collectives import by_name
from spmd_mypy.compat import expression_type
from spmd_mypy.encoding import Encoder
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.source import source
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import AUTOGRAD_FUNCTIONS, SpmdType, check_backward

__all__ = ["AUTOGRAD_FUNCTIONS", "check_autograd_call", "check_backward_method"]


def check_backward_method(session: Session, ctx: MethodContext) -> Verdict:
    """``loss.backward()`` or ``loss.backward(gradient=g)``."""
    verdict = Verdict()
    loss = Encoder.read(ctx.type)
    if isinstance(loss, SpmdType):
        receiver = ctx.context.callee.expr if isinstance(ctx.context, CallExpr) and isinstance(
            ctx.context.callee, MemberExpr) else None
        seed, _ = by_name(ctx).get("gradient", (None, None))
        where = f"{spell(receiver) if receiver is not None else 'loss'}.backward()"
        _check(ctx, verdict, loss, seed, where, source(receiver) if receiver is not None else None)
    return verdict


def check_autograd_call(session: Session, ctx: FunctionContext, name: str) -> Verdict:
    """``torch.autograd.backward(losses, grads)`` or ``torch.autograd.grad(losses, inputs, grads)``."""
    verdict = Verdict()
    outputs_param, seeds_param = AUTOGRAD_FUNCTIONS[name]
    arguments = by_name(ctx)
    if outputs_param not in arguments:
        return verdict
    outputs, _ = arguments[outputs_param]
    seeds, _ = arguments.get(seeds_param, (None, None))
    output_items = _items(outputs)
    seed_items: Sequence[Expression | None] = _items(seeds) if seeds is not None else [None] * len(output_items)
    if len(seed_items) != len(output_items):
        return verdict  # not written pairwise: nothing to match up
    where = f"{name}(...)"
    for output, seed in zip(output_items, seed_items):
        typ = expression_type(ctx.api, output)
        loss = Encoder.read(typ) if typ is not None else None
        if isinstance(loss, SpmdType):
            _check(ctx, verdict, loss, seed, where, source(output))
    return verdict


def _check(ctx: FunctionContext | MethodContext, verdict: Verdict, loss: SpmdType, seed: Expression | None,
           where: str, value: str | None) -> None:
    if seed is None:
        violations = check_backward(loss)
    else:
        typ = expression_type(ctx.api, seed)
        found = Encoder.read(typ) if typ is not None else None
        if not isinstance(found, SpmdType):
            return  # a seed of unknown type
        violations = check_backward(loss, found)
    verdict.report(violations, ctx.context, where, value=value)


def _items(expr: Expression) -> list[Expression]:
    """The elements of a list or tuple display; the expression itself otherwise."""
    return list(expr.items) if isinstance(expr, (ListExpr, TupleExpr)) else [expr]
