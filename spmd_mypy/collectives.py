"""Collectives and casts of ``spmd_types``: the only calls that change a type on an axis.

For ``all_reduce(x, "tp", src=P, dst=R)`` the handler reads the mesh axis (a
string literal, a ``Final`` string, or a process group annotated with
``Axis["tp"]``), the ``src``/``dst`` markers as written, and the input's type
on that axis; the core checks the call against its table
(:func:`~spmd_types.typesystem.check_call_on_axes` with
:data:`~spmd_types.typesystem.CALLS`), and the result is the input's type with
that axis set to ``dst``.  ``assert_type(x, R["tp"])``
is a checked cast point: ``x`` must fit the asserted type, which it then has.
"""

from __future__ import annotations

from typing import Final

from mypy.nodes import (
    GDEF,
    CallExpr,
    Expression,
    IndexExpr,
    NameExpr,
    RefExpr,
    StrExpr,
    TupleExpr,
)
from mypy.plugin import FunctionContext, MethodContext
from mypy.types import Instance, TupleType, Type, get_proper_type

from spmd_mypy import files, global_mode, summation
from spmd_mypy.axes import axis_name, int_literal
from spmd_mypy.boundaries import report_divergent
from spmd_mypy.encoding import Divergent, Encoder, is_tensor
from spmd_mypy.fullnames import LOCAL_TYPE_MARKERS, SHARD_MARKERS, STR, spmd_function
from spmd_mypy.ops import remember, remembered
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.size_one import settle
from spmd_mypy.source import source
from spmd_mypy.values import contains_tensor
from spmd_mypy.verdict import Producer, Verdict
from spmd_types.typesystem import (
    CALLS,
    LOCAL_TYPES,
    UNKNOWN,
    AnnotationError,
    Code,
    Endpoint,
    Shard,
    SpmdType,
    Violation,
    axis_types_marker,
    bounded_put,
    check_call_on_axes,
    check_fits,
    flattened_axes,
    retargeted,
    shard_marker,
    spmd_type_from_metadata,
)

__all__ = [
    "COLLECTIVES", "apply_call", "axis_name", "by_name", "check_assert_type", "check_collective",
    "unknown_on",
]

COLLECTIVES: Final = {spmd_function(name): name for name in CALLS}
"""The collectives and casts of ``spmd_types`` by full name, each with its name in the core's table."""


class _Unreadable:
    """A ``src``/``dst`` argument that is not written as a marker (a variable, say)."""


UNREADABLE: Final = _Unreadable()


def check_collective(session: Session, ctx: FunctionContext, call: str) -> Verdict:
    """A call of collective or cast ``call``."""
    args = by_name(ctx)
    x_expr, x_type = args.get("x", (None, None))
    if x_type is None:
        return Verdict()
    axis, reason = _axes(args.get("axis"))
    if axis is None:
        verdict = unknown_on(ctx, x_type, None)
        verdict.report([Violation(Code.AXIS, None, reason or "")], ctx.context, call)
        return verdict
    src, dst = _endpoint(args.get("src")), _endpoint(args.get("dst"))
    spec = CALLS[call]
    if (src is None and spec.src_default is None) or (dst is None and spec.dst_default is None):
        return Verdict()  # a missing required argument: mypy reports it
    if isinstance(src, _Unreadable) or isinstance(dst, _Unreadable):
        # Written as a variable: the call cannot be checked, and its result is unknown on the axis.
        return unknown_on(ctx, x_type, axis)
    op = args.get("op")
    reduction = op[0].value if op is not None and isinstance(op[0], StrExpr) else "sum"
    return apply_call(session, ctx, call, (x_expr, x_type), axis, src, dst, reduction)


def apply_call(
    session: Session,
    ctx: FunctionContext | MethodContext,
    call: str,
    x: tuple[Expression | None, Type],
    axis: str | tuple[str, ...],
    src: Endpoint | None,
    dst: Endpoint | None,
    reduction: str = "sum",
    where: str | None = None,
    returns: Type | None = None,
    written: str | None = None,
) -> Verdict:
    """``call(x, axis, src=src, dst=dst)`` at this call site.

    ``axis`` is one mesh axis or a tuple of them (one call on their flattened
    group: the core checks it on each).  ``where`` names the call in messages
    (by default ``call``): a library function typed as one of these calls
    names itself, and ``returns`` is the result type to give where mypy's has
    no tensor (an untyped library function's ``Any``); ``written`` is how the
    source spells that function, which a fix replacing the call names.

    What a call found where it reported nothing is remembered (see
    :func:`_call_key`): a model makes the same few calls on the same few
    types at thousands of places.  Whether the input is a sum with a
    replicated term is read from the input as written, at every place.
    """
    axes = (axis,) if isinstance(axis, str) else axis
    x_expr, x_type = x
    found = Encoder.read(x_type)
    key = _call_key(session, ctx, call, axes, found, src, dst, reduction, returns)
    known = remembered(key)
    src_used = src if src is not None else CALLS[call].src_default
    # A boundary mismatch is fixed at the call itself (its dst), which a fix can spell for one axis.
    producer = None
    if src_used is not None and len(axes) == 1:
        used: Endpoint = src_used
        producer = Producer(x_expr, lambda v, want: _replacing((retargeted(v, call, axes[0], used, want),), call,
                                                              written)[0])
    if known is not None:
        verdict = _typed_result(ctx, known.result, producer, returns)
        _check_sums(session, ctx, verdict, call, x_expr, axes, src_used, dst, reduction, where or call, ())
        return verdict
    value = source(x_expr) if x_expr is not None else None
    if isinstance(found, Divergent):
        found = settle(session, ctx.api, x_expr, found)
    have = found if isinstance(found, SpmdType) else UNKNOWN
    result, violations = check_call_on_axes(call, axes, have, src, dst, reduction)
    violations = _replacing(violations, call, written)
    verdict = _typed_result(ctx, result, producer, returns)
    if isinstance(found, Divergent) and x_expr is not None:
        report_divergent(verdict, x_expr, found)  # a branch or loop iteration the call may mistake
    verdict.report(violations, ctx.context, where or call, (value,), value)
    not_global = global_mode.cast_violations(session, ctx.api, ctx.context, call, axes, src_used,
                                             dst if dst is not None else CALLS[call].dst_default, have)
    verdict.report(_replacing(not_global, call, written), ctx.context, where or call, (value,), value)
    _check_sums(session, ctx, verdict, call, x_expr, axes, src_used, dst, reduction, where or call, violations)
    return remember(key, verdict)


def _call_key(
    session: Session,
    ctx: FunctionContext | MethodContext,
    call: str,
    axes: tuple[str, ...],
    found: SpmdType | Divergent | None,
    src: Endpoint | None,
    dst: Endpoint | None,
    reduction: str,
    returns: Type | None,
) -> tuple[object, ...] | None:
    """Everything :func:`apply_call` decides its verdict from but the input's summands; ``None`` where an
    input that differs by branch (``found``) takes the full check at each place.

    That is the call, its axes, ``src``, ``dst`` and reduction as read, the
    input's SPMD type (its rank and entry orders are not read: the result
    keeps mypy's type, which carries them, at each place), whether the result
    is a typed tensor (what :func:`_typed_result` reads), and the facts of the
    place that :func:`~spmd_mypy.global_mode.cast_violations` consults: whether
    it is global code, and on which axes a region makes it local.
    """
    if isinstance(found, Divergent):
        return None
    typed = (returns is not None and not contains_tensor(ctx.default_return_type)) or is_tensor(
        ctx.default_return_type)
    at = files.place(session, ctx.api, ctx.context)
    local = at.local_axes if at.global_mode else frozenset()
    return (_COLLECTIVE, call, axes, found, src, dst, reduction, typed, at.global_mode, local)


_COLLECTIVE: Final = "collective"
"""The first part of a collective's key, apart from every op's (:func:`spmd_mypy.ops.remember`)."""


def _check_sums(
    session: Session,
    ctx: FunctionContext | MethodContext,
    verdict: Verdict,
    call: str,
    x_expr: Expression | None,
    axes: tuple[str, ...],
    src: Endpoint | None,
    dst: Endpoint | None,
    reduction: str,
    where: str,
    violations: tuple[Violation, ...],
) -> None:
    """Report into ``verdict`` a replicated summand added to per-rank values, counted once per rank on each
    axis summed over that has no other ``violations``."""
    if x_expr is None or src is None:
        return
    for name in axes:
        if not any(v.axis == name for v in violations):
            summation.check_summed_input(session, ctx, verdict, call, x_expr, name, src, dst, reduction, where)


def _replacing(violations: tuple[Violation, ...], call: str, written: str | None) -> tuple[Violation, ...]:
    """``violations`` with each fix that replaces ``call`` naming it as the source writes it, ``written``."""
    return violations if written is None else tuple(v.replacing(written, instead_of=call) for v in violations)


def unknown_on(ctx: FunctionContext | MethodContext, x_type: Type, axis: str | tuple[str, ...] | None) -> Verdict:
    """The input's type with ``axis`` unknown (every axis when ``axis`` is ``None``): an unreadable call."""
    found = Encoder.read(x_type)
    have = found if isinstance(found, SpmdType) else None
    if have is None:
        return Verdict()
    if axis is None or have.default is not None:
        return _typed_result(ctx, UNKNOWN, None)
    for name in (axis,) if isinstance(axis, str) else axis:
        have = have.with_axis(name, None)
    return _typed_result(ctx, have, None)


def check_assert_type(session: Session, ctx: FunctionContext) -> Verdict:
    """``assert_type(x, R["dp"], V["tp"])``: ``x`` must fit; the result has that type."""
    if not ctx.args or not ctx.args[0]:
        return Verdict()
    x_expr, x_type = ctx.args[0][0], ctx.arg_types[0][0]
    try:
        declared = spmd_type_from_metadata(_marker(e) for group in ctx.args[1:] for e in group)
    except (AnnotationError, ValueError) as error:
        verdict = Verdict()
        verdict.report([Violation(Code.ANNOTATION, None, str(error))], ctx.context, "assert_type")
        return verdict
    if declared is None:
        return Verdict()
    verdict = _typed_result(ctx, declared, None)
    value = Encoder.read(x_type)
    if isinstance(value, SpmdType):
        verdict.report(check_fits(value, declared), ctx.context, "assert_type", value=source(x_expr))
    return verdict


def _typed_result(ctx: FunctionContext | MethodContext, result: SpmdType | None, producer: Producer | None,
                  returns: Type | None = None) -> Verdict:
    """The call's tensor result typed ``result`` and fitted to the declaration it goes into (none if not a tensor).

    ``returns`` replaces mypy's result type when that has no tensor.
    """
    if returns is not None and contains_tensor(ctx.default_return_type):
        returns = None
    if result is None or not (returns is not None or is_tensor(ctx.default_return_type)):
        return Verdict()
    return Verdict(returns=returns, result=result, fit=True, producer=producer)


def by_name(ctx: FunctionContext | MethodContext) -> dict[str, tuple[Expression, Type]]:
    """The first actual argument of each formal parameter, by the parameter's name."""
    return {
        name: (exprs[0], types[0])
        for name, exprs, types in zip(ctx.callee_arg_names, ctx.args, ctx.arg_types)
        if name is not None and exprs
    }


def _axes(arg: tuple[Expression, Type] | None) -> tuple[str | tuple[str, ...] | None, str | None]:
    """The mesh axis, or tuple of axes, an ``axis`` argument names; else ``None`` and why it cannot be read."""
    if arg is None:
        return None, _unknown_axis(arg)
    expr, typ = arg
    proper = get_proper_type(typ)
    if isinstance(expr, TupleExpr) or isinstance(proper, TupleType):
        items = (list(zip(expr.items, proper.items)) if isinstance(expr, TupleExpr) and isinstance(proper, TupleType)
                 else [(expr, t) for t in proper.items] if isinstance(proper, TupleType) else [])
        names = tuple(axis_name(item) for item in items)
        if not names or any(name is None for name in names):
            return None, ("cannot tell which mesh axes this tuple names: write each as a string literal or a "
                          'Final str, e.g. ("dp", "cp")')
        axes, problem = flattened_axes(names)
        return axes, problem
    axis = axis_name(arg)
    return axis, None if axis is not None else _unknown_axis(arg)


def _unknown_axis(arg: tuple[Expression, Type] | None) -> str:
    """Why the axis argument cannot be read, and how to write it."""
    reason = "cannot tell which mesh axis this is"
    if arg is not None and isinstance(arg[0], NameExpr) and arg[0].kind == GDEF and _is_str(arg[1]):
        name = arg[0].name
        return (f"{reason}: {name} is a module-level str variable, whose value the checker does not follow; "
                f'make it a constant ({name}: Final = "...", with Final from typing) or pass the name itself')
    return (f"{reason}: pass a string literal, a Final str, a tuple of them for several axes, "
            'mesh["tp"] of a DeviceMesh, '
            'or a ProcessGroup annotated Annotated[ProcessGroup, Axis["tp"]]')


def _is_str(typ: Type) -> bool:
    proper = get_proper_type(typ)
    return isinstance(proper, Instance) and proper.type.fullname == STR


def _endpoint(arg: tuple[Expression, Type] | None) -> Endpoint | _Unreadable | None:
    """The marker a ``src=``/``dst=`` argument names; ``None`` if it was not passed."""
    if arg is None:
        return None
    expr = arg[0]
    if isinstance(expr, RefExpr) and expr.fullname in LOCAL_TYPE_MARKERS:
        return LOCAL_TYPES[LOCAL_TYPE_MARKERS[expr.fullname]]
    if isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname in SHARD_MARKERS:
        dim = int_literal(expr.args[0]) if len(expr.args) == 1 else None
        if dim is not None:
            shard = _SHARDS.get(dim)
            return shard if shard is not None else bounded_put(_SHARDS, dim, Shard(dim), _SHARDS_MAX)
    return UNREADABLE


_SHARDS: Final[dict[int, Shard]] = {}
"""``S(dim)`` by dim, made once: ``Shard`` is immutable and interpreted in the compiled build (its ``__init__``
costs a call into Python), and a model writes the same one or two at every collective."""
_SHARDS_MAX: Final = 64


def _marker(expr: Expression) -> object:
    """The annotation marker an ``assert_type`` argument such as ``R["dp"]`` evaluates to."""
    if not isinstance(expr, IndexExpr) or not isinstance(expr.base, RefExpr):
        raise ValueError("assert_type takes markers such as R['dp'] or S['tp', 0]")
    items = expr.index.items if isinstance(expr.index, TupleExpr) else [expr.index]
    values = [item.value if isinstance(item, StrExpr) else int_literal(item) for item in items]
    code = LOCAL_TYPE_MARKERS.get(expr.base.fullname)
    if code is not None:
        if not all(isinstance(v, str) for v in values):
            raise ValueError("mesh-axis names must be string literals")
        return axis_types_marker(LOCAL_TYPES[code], tuple(v for v in values if isinstance(v, str)))
    if expr.base.fullname in SHARD_MARKERS:
        return shard_marker(tuple(values))
    raise ValueError(f"{spell(expr.base)} is not an SPMD marker")
