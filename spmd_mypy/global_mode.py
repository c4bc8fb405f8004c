"""Global SPMD in the checker: the functions decorated with ``@spmd_types.global_spmd``.

Inside such a function every value must stay global (see
:mod:`spmd_types.typesystem.global_rules`): the checker applies the local
rules as everywhere, then the core's global rules to each op on shards
(:func:`check_op`), to each collective and cast
(:func:`cast_violations`), and, where the decorator is applied, to the
declared types of the parameters and the return value (:func:`check_decorated`):
``V`` there has no global meaning.  Whether a call is in such a function is
a fact of its file (:func:`spmd_mypy.files.in_global_mode`), and so are the axes
that a ``local_region`` inside it makes local SPMD, on which the global rules
are not applied (:func:`spmd_mypy.files.local_axes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mypy.nodes import Context
from mypy.plugin import CheckerPluginInterface, FunctionContext
from mypy.types import CallableType, get_proper_type

from spmd_mypy import files
from spmd_mypy.encoding import Encoder
from spmd_mypy.session import Session
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import (
    RETURN_VALUE,
    Endpoint,
    Operand,
    OpOutcome,
    SpmdType,
    Violation,
    check_global_op,
    global_annotation_violation,
    global_cast_violation,
)

__all__ = ["cast_violations", "check_decorated", "check_op"]


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
    if not files.in_global_mode(session, api, where):
        return OpOutcome(result)
    return check_global_op(op, operands, result, args, out_partial_axes, files.local_axes(session, api, where))


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
    if not files.in_global_mode(session, api, where):
        return ()
    local = files.local_axes(session, api, where)
    found = (global_cast_violation(call, axis, src, dst, have.get(axis)) for axis in axes if axis not in local)
    return tuple(v for v in found if v is not None)


def check_decorated(session: Session, ctx: FunctionContext) -> Verdict:
    """``@global_spmd`` applied to a function: its declared parameter and return types must be global."""
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
    return verdict
