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

from mypy.nodes import CallExpr, Expression, MemberExpr, NameExpr, OpExpr, RefExpr
from mypy.plugin import FunctionContext, MethodContext

from spmd_mypy import files
from spmd_mypy.compat import expression_type
from spmd_mypy.encoding import Encoder
from spmd_mypy.fullnames import public_function_name
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.source import source
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import (
    BIASED_PRODUCTS,
    SUM_OPS,
    AxisType,
    Endpoint,
    SpmdType,
    V,
    is_varying,
    lookup,
    method_name,
    summed_replicated_term,
    sums_over_axis,
)

__all__ = ["check_summed_input"]

Summand = tuple[str, AxisType | None]


def check_summed_input(
    session: Session,
    ctx: FunctionContext | MethodContext,
    verdict: Verdict,
    call: str,
    x: Expression,
    axis: str,
    src: Endpoint,
    dst: Endpoint | None,
    op: str,
    where: str,
) -> None:
    """Report into ``verdict`` when ``call(x, axis, ...)`` sums over ``axis`` a replicated summand of ``x``."""
    if not sums_over_axis(call, src, dst, op):
        return
    built = files.value_of(session, ctx.api, x.name, ctx.context) if isinstance(x, NameExpr) else x
    if built is None:
        return
    terms: list[Expression | _Product] = []
    _split(built, terms)
    if len(terms) < 2:
        return
    summands = [_product(ctx, term, axis) if isinstance(term, _Product) else _summand(ctx, term, axis)
                for term in terms]
    violation = summed_replicated_term(call, axis, summands)
    if violation is not None:
        verdict.report([violation], ctx.context, where, tuple(n for n, _ in summands), source(x))


def _split(expr: Expression, terms: list[Expression | _Product]) -> None:
    """Append the summands of ``expr`` to ``terms``: each is read (spelled, and typed on the axis) only where there
    are two or more.  A list filled by plain recursion: a generator per level cost more than the reading saved."""
    if isinstance(expr, OpExpr) and expr.op in ("+", "-"):
        _split(expr.left, terms)
        _split(expr.right, terms)
        return
    op = _called_op(expr) if isinstance(expr, CallExpr) else None
    if op is None:
        terms.append(expr)
        return
    if op.name in SUM_OPS:
        for operand in (op.argument("input"), op.argument("other")):
            if operand is not None:
                _split(operand, terms)
        return
    bias_param = BIASED_PRODUCTS.get(op.name)
    bias = op.argument(bias_param) if bias_param is not None else None
    if bias_param is not None and bias is not None:
        terms.append(_Product(op, bias_param))
        terms.append(bias)
        return
    terms.append(expr)


def _summand(ctx: FunctionContext | MethodContext, expr: Expression, axis: str) -> Summand:
    return spell(expr), _kind(ctx, expr, axis)


class _Product:
    """The product that a biased op (``F.linear``) adds its bias argument to, a summand of its own."""

    def __init__(self, op: _Op, bias_param: str) -> None:
        self.op = op
        self.bias_param = bias_param


def _product(ctx: FunctionContext | MethodContext, product: _Product, axis: str) -> Summand:
    """``product`` as a summand: varying where one of its factors is."""
    op, bias_param = product.op, product.bias_param
    factors = next(term for term in lookup(op.name).terms if bias_param not in term)
    kinds = [_kind(ctx, e, axis) for e in map(op.argument, factors) if e is not None]
    varying: AxisType | None = V if any(k is not None and is_varying(k) for k in kinds) else None
    return f"{spell(op.callee)}(...) without its {bias_param}", varying


class _Op:
    """A call of a table op: its public name, its callee as written, and its arguments by position and by keyword.

    A plain class, not a dataclass, whose ``__init__`` would run as Python even in the compiled build (one per
    call of an op checked for a partial sum).
    """

    def __init__(self, name: str, callee: Expression, positional: list[Expression],
                 keywords: dict[str, Expression]) -> None:
        self.name = name
        self.callee = callee
        self.positional = positional
        self.keywords = keywords

    def argument(self, param: str) -> Expression | None:
        """The argument passed as parameter ``param`` of the op's table rule."""
        if param in self.keywords:
            return self.keywords[param]
        params = lookup(self.name).params
        position = params.index(param) if param in params else len(self.positional)
        return self.positional[position] if position < len(self.positional) else None


def _called_op(call: CallExpr) -> _Op | None:
    """The op ``call`` is (``torch.add``, ``F.linear``), by public name; a method on a value is a tensor method.

    ``h.add(b)`` is ``torch.Tensor.add`` with ``h`` as its first argument.
    """
    positional = [arg for arg, name in zip(call.args, call.arg_names) if name is None]
    keywords = {name: arg for arg, name in zip(call.args, call.arg_names) if name is not None}
    callee = call.callee
    if isinstance(callee, MemberExpr) and not callee.fullname:
        return _Op(method_name(callee.name), callee, [callee.expr, *positional], keywords)
    public = public_function_name(callee.fullname) if isinstance(callee, RefExpr) else None
    return _Op(public, callee, positional, keywords) if public is not None else None


def _kind(ctx: FunctionContext | MethodContext, expr: Expression, axis: str) -> AxisType | None:
    typ = expression_type(ctx.api, expr)
    found = Encoder.read(typ) if typ is not None else None
    return found.get(axis) if isinstance(found, SpmdType) else None
