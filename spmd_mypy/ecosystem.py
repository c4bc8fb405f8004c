"""Calls of other libraries' communication functions, typed as the calls they are equivalent to.

``copy_to_tensor_model_parallel_region(x)`` is checked and typed exactly as
``reinterpret(x, "tp", src=I, dst=R)`` (the table is
:data:`spmd_types.typesystem.EQUIVALENTS`).  The axis is that of the ``group``
argument when its type says it (``Annotated[ProcessGroup, Axis["tp"]]``, or
the result of a group getter such as Megatron's
``get_tensor_model_parallel_group()``); when the argument is left out or
``None``, it is the axis the library's own default group stands for (the
plugin option ``library_axes``).  A group whose axis cannot be told makes the
result unknown, as an unannotated helper's would be: nothing is reported.

Collectives that overwrite their argument outside autograd
(``torch.distributed.all_reduce(x, group=g)``) are reported when ``x`` has a
known type on the group's axis, with the differentiable call to use instead.
"""

from __future__ import annotations

from mypy.nodes import Expression, NameExpr
from mypy.plugin import FunctionContext
from mypy.types import Type

from spmd_mypy.collectives import apply_call, by_name, unknown_on
from spmd_mypy.encoding import Encoder
from spmd_mypy.fullnames import CONSTANTS, NONE
from spmd_mypy.session import Session
from spmd_mypy.source import source
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import (
    Equivalent,
    InPlace,
    SpmdType,
    check_in_place,
)

__all__ = ["check_in_place_call", "check_library_call", "group_of_role"]


def check_library_call(session: Session, ctx: FunctionContext, equivalent: Equivalent) -> Verdict:
    """A call of the library function ``equivalent``, checked as the call it is equivalent to."""
    args = by_name(ctx)
    tensor = args.get(equivalent.tensor)
    if tensor is None:
        return Verdict()  # mypy reports the missing argument
    axis = _group_axis(session, args.get(equivalent.group), equivalent)
    if axis is None:
        return unknown_on(ctx, tensor[1], None)
    dst = equivalent.dst
    if equivalent.variant is not None:
        flag = args.get(equivalent.variant.parameter)
        value = _bool_literal(flag[0]) if flag is not None else True
        if value is None:  # a flag computed at run time: the result could be either type
            return unknown_on(ctx, tensor[1], axis)
        dst = dst if value else equivalent.variant.dst_if_false
    where = f"{equivalent.name} (that is, {equivalent.spelled(dst)})"
    return apply_call(session, ctx, equivalent.call, tensor, axis, equivalent.src, dst, where=where)


def check_in_place_call(session: Session, ctx: FunctionContext, entry: InPlace) -> Verdict:
    """``torch.distributed.all_reduce(x, group=g)`` on a tensor with a known type on ``g``'s axis: reported."""
    verdict = Verdict()
    args = by_name(ctx)
    tensor, group = args.get(entry.tensor), args.get(entry.group)
    axis = Encoder.read_axis(group[1]) if group is not None else None
    found = Encoder.read(tensor[1]) if tensor is not None else None
    have = found.get(axis) if isinstance(found, SpmdType) and axis is not None else None
    if tensor is not None and axis is not None and have is not None:
        name = source(tensor[0])
        verdict.report([check_in_place(entry, axis, have)], ctx.context, entry.name, (name,), name)
    return verdict


def group_of_role(session: Session, ctx: FunctionContext, role: str) -> Verdict:
    """The process group a getter such as ``get_tensor_model_parallel_group()`` returns, with its axis."""
    return Verdict(returns=Encoder.for_checker(session, ctx.api).axis_group(session.options.library_axis(role)))


def _group_axis(session: Session, arg: tuple[Expression, Type] | None, equivalent: Equivalent) -> str | None:
    """The mesh axis of the group the call uses; ``None`` when it cannot be told."""
    if arg is None or (isinstance(arg[0], NameExpr) and arg[0].fullname == NONE):
        role = equivalent.default_role
        return session.options.library_axis(role) if role is not None else None
    return Encoder.read_axis(arg[1])


def _bool_literal(expr: Expression) -> bool | None:
    value = CONSTANTS.get(expr.fullname) if isinstance(expr, NameExpr) else None
    return value if isinstance(value, bool) else None
