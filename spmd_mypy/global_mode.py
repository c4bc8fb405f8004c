"""Global SPMD in the checker: the functions decorated with ``@spmd_types.global_spmd``.

Inside such a function every value must stay global (see
:mod:`spmd_types.typesystem.global_rules`): the checker applies the local
rules as everywhere, then the core's global rules to each op on shards
(:func:`check_op`), to each collective and cast
(:func:`cast_violations`), and, where the decorator is applied, to the
declared types of the parameters and the return value (:func:`check_decorated`):
``V`` there has no global meaning.  Whether a call is in such a function is
a fact of its place in its file (:func:`spmd_mypy.files.place`), and so are the
axes that a ``local_region`` inside it makes local SPMD, on which the global
rules are not applied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mypy.nodes import Context, Expression, NameExpr, Var
from mypy.plugin import CheckerPluginInterface, FunctionContext
from mypy.types import CallableType, TupleType, Type, get_proper_type

from spmd_mypy import files
from spmd_mypy.compat import decorated_returns, expression_type
from spmd_mypy.encoding import Encoder
from spmd_mypy.session import Session
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import (
    RETURN_VALUE,
    Endpoint,
    EntryOrders,
    Operand,
    OpOutcome,
    SpmdType,
    Violation,
    check_global_op,
    global_annotation_violation,
    global_call_violation,
    global_cast_violation,
    order_violation,
    result_orders,
)
from spmd_types.typesystem import result_rank as core_result_rank

__all__ = ["call_result_violations", "cast_violations", "check_decorated", "check_op", "order_violations",
           "result_layout"]


def check_op(
    session: Session,
    api: CheckerPluginInterface,
    where: Context,
    op: str,
    operands: Sequence[Operand],
    result: SpmdType,
    args: Mapping[str, object],
    out_partial_axes: tuple[str, ...] = (),
) -> OpOutcome:
    """Op ``op`` at ``where`` with its local ``result``, checked with the global rules where ``where`` is in a
    global function (:func:`~spmd_types.typesystem.check_global_op`); elsewhere ``result`` as it is."""
    at = files.place(session, api, where)
    if not at.global_mode:
        return OpOutcome(result)
    return check_global_op(op, operands, result, args, out_partial_axes, at.local_axes)


def result_layout(
    session: Session,
    api: CheckerPluginInterface,
    where: Context,
    op: str,
    operands: Sequence[Operand],
    orders: Sequence[EntryOrders],
    args: Mapping[str, object],
    result: SpmdType,
) -> tuple[int | None, EntryOrders, tuple[Violation, ...]]:
    """The rank and entry orders of op ``op``'s result at ``where``, in a global function, where the core can
    tell them, and why the operands' entry orders do not meet (see :func:`~spmd_types.typesystem.result_orders`).

    ``orders`` are the operands' entry orders, ``result`` the op's result.
    Only operands of known rank or order (or an einsum equation) make it worth
    asking whether ``where`` is in a global function: other ops pay one scan of their operands.
    """
    if not (any(o.ndim for o in operands) or any(orders) or "equation" in args) \
            or not files.place(session, api, where).global_mode:
        return None, (), ()
    rank = core_result_rank(op, operands, args)
    found = result_orders(orders, result) if any(orders) else ()
    return (rank, (), (found,)) if isinstance(found, Violation) else (rank, found, ())


def cast_violations(
    session: Session,
    api: CheckerPluginInterface,
    where: Context,
    call: str,
    axes: Sequence[str],
    src: Endpoint | None,
    dst: Endpoint | None,
    have: SpmdType,
) -> tuple[Violation, ...]:
    """Why collective or cast ``call`` at ``where`` is not shard-preserving, in a global function; else nothing.

    ``have`` is the input's type."""
    at = files.place(session, api, where)
    if not at.global_mode:
        return ()
    local = at.local_axes
    found = (global_cast_violation(call, axis, src, dst, have.get(axis)) for axis in axes if axis not in local)
    return tuple(v for v in found if v is not None)


def call_result_violations(
    session: Session, api: CheckerPluginInterface, where: Context, callee: str, returned: Type
) -> tuple[Violation, ...]:
    """Why the value a call of declared callable ``callee`` at ``where`` returns cannot enter a global function.

    ``returned`` is the call's declared result (a tensor, or a tuple of them):
    ``V`` on an axis is reported at the call (:func:`~spmd_types.typesystem.global_call_violation`),
    where the value enters, when ``where`` is in a global function (in a local region, on the axes it keeps
    global).
    """
    at = files.place(session, api, where)
    if not at.global_mode:  # most calls are in local code: nothing to read
        return ()
    proper = get_proper_type(returned)
    found = [Encoder.read(item) for item in (proper.items if isinstance(proper, TupleType) else [proper])]
    typed = [t for t in found if isinstance(t, SpmdType)]
    if not any(global_call_violation(callee, t) for t in typed):
        return ()
    local = at.local_axes  # in a local region, V on its axes is local SPMD
    kept = (SpmdType({axis: kind for axis, kind in t.items() if axis not in local}) for t in typed)
    return tuple(v for t in kept if (v := global_call_violation(callee, t)) is not None)


def check_decorated(session: Session, ctx: FunctionContext) -> Verdict:
    """``@global_spmd`` applied to a function: its declared parameter and return types must be global, and the
    values it returns must order the axes of each multi-axis entry as its declared return type does."""
    verdict = Verdict()
    function = get_proper_type(ctx.arg_types[0][0]) if ctx.arg_types and ctx.arg_types[0] else None
    if not isinstance(function, CallableType):
        return verdict
    declared = [(f'parameter "{name}"' if name else "a parameter", typ)
                for name, typ in zip(function.arg_names, function.arg_types)]
    declared.append((RETURN_VALUE, function.ret_type))
    for what, typ in declared:
        spmd = Encoder.read(typ)
        problem = global_annotation_violation(spmd) if isinstance(spmd, SpmdType) else None
        if problem is not None:
            verdict.report([problem], ctx.context, f"{what} of a global_spmd function")
    ordered = Encoder.orders(function.ret_type)
    for statement in decorated_returns(ctx.context) if ordered else ():
        returned = _known_type(ctx.api, statement.expr) if statement.expr is not None else None
        problem = order_violation(ordered, Encoder.orders(returned)) if returned is not None else None
        if problem is not None:
            verdict.report([problem], statement, RETURN_VALUE)
    return verdict


def _known_type(api: CheckerPluginInterface, expr: Expression) -> Type | None:
    """The type of ``expr`` where the decorator is checked: mypy may check the function's body only after it,
    and a parameter's declared type is known before."""
    found = expression_type(api, expr)
    if found is None and isinstance(expr, NameExpr) and isinstance(expr.node, Var):
        found = expr.node.type
    return found


def order_violations(
    session: Session, api: CheckerPluginInterface, where: Context, declared: Type, value: Type
) -> tuple[Violation, ...]:
    """Why a value of type ``value`` going into declared type ``declared`` at ``where`` orders the axes of a
    multi-axis entry otherwise than the declaration, in a global function
    (:func:`~spmd_types.typesystem.order_violation`)."""
    ordered = Encoder.orders(declared)
    have = Encoder.orders(value) if ordered else ()
    if not have or not files.place(session, api, where).global_mode:
        return ()
    found = order_violation(ordered, have)
    return (found,) if found is not None else ()
