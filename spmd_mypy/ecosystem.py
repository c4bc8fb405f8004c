"""Calls of other libraries' communication functions, typed as the calls they are equivalent to.

``copy_to_tensor_model_parallel_region(x)`` is checked and typed exactly as
``reinterpret(x, "tp", src=I, dst=R)`` (the table is
:data:`spmd_types.typesystem.EQUIVALENTS`).  The axis is that of the ``group``
argument when its type says it (``Annotated[ProcessGroup, Axis["tp"]]``, or
the result of a group getter such as Megatron's
``get_tensor_model_parallel_group()``); when the argument is left out or
``None``, it is the axis the library's own default group stands for (the
plugin option ``library_axes``).  torch's default group, ``group.WORLD``, is
every axis listed in the option ``axes``, flattened.  A group whose axis
cannot be told makes the result unknown, as an unannotated helper's would be:
nothing is reported.  So does a reduction that cannot be read
(``op=some_op``), and a shard dim that is not a literal leaves the shard a
``V``.  Messages name the function as the call spells it
(``dist_nn.all_reduce``).  A function that takes a list of tensors is
checked on the list's element type; an untyped one (torch's own) returns a
tensor, or a tuple of them, of the result type.

Collectives that overwrite their argument outside autograd
(``torch.distributed.all_reduce(x, group=g)``) are reported when ``x`` has a
known type on the group's axis, with the differentiable call to use instead.
"""

from __future__ import annotations

from mypy.nodes import CallExpr, Expression, MemberExpr, NameExpr, RefExpr, StrExpr
from mypy.plugin import FunctionContext, MethodContext
from mypy.types import Instance, TupleType, Type, get_proper_type

from spmd_mypy import mismatches
from spmd_mypy.collectives import apply_call, by_name, unknown_on
from spmd_mypy.compat import lookup_type_info
from spmd_mypy.encoding import Encoder
from spmd_mypy.fullnames import CONSTANTS, NONE, REDUCE_OP, SEQUENCES, TENSOR, WORLD_GROUP_OWNERS
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.source import source
from spmd_mypy.values import literal_value
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import (
    WORLD,
    Equivalent,
    InPlace,
    SpmdType,
    check_in_place,
    reduction_name,
)

__all__ = ["check_in_place_call", "check_library_call", "group_of_role"]


def check_library_call(session: Session, ctx: FunctionContext | MethodContext, equivalent: Equivalent) -> Verdict:
    """A call of the library function ``equivalent``, checked as the call it is equivalent to."""
    args = by_name(ctx)
    given = args.get(equivalent.tensor)
    if given is None:
        return Verdict()  # mypy reports the missing argument
    tensor: tuple[Expression | None, Type] = given
    if equivalent.tensor_list:  # typed by its elements; a fix cannot wrap the list in one call
        tensor = (None, _element_type(given[1]))
    axis = _group_axis(session, args.get(equivalent.group), equivalent)
    op = _reduction(args.get(equivalent.reduction)) if equivalent.reduction is not None else "sum"
    if axis is None or op is None:  # not known which group, or which reduction: not known what it computes
        return unknown_on(ctx, tensor[1], axis)
    src, dst = equivalent.endpoints(_dim(args, equivalent.src_dim), _dim(args, equivalent.dst_dim))
    if equivalent.variant is not None:
        flag = args.get(equivalent.variant.parameter)
        value = _bool_literal(flag[0]) if flag is not None else True
        if value is None:  # a flag computed at run time: the result could be either type
            return unknown_on(ctx, tensor[1], axis)
        dst = dst if value else equivalent.variant.dst_if_false
    callee = _callee(ctx, equivalent)
    where = f"{callee} (that is, {equivalent.spelled(dst, src, op)})"
    return apply_call(session, ctx, equivalent.call, tensor, axis, src, dst, op, where,
                      _untyped_result(session, ctx, equivalent), written=callee)


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
    """The process group a getter such as ``get_tensor_model_parallel_group()`` returns, with its axis.

    A plain group re-assigned where this one went is accepted (:mod:`spmd_mypy.mismatches`), also in a run
    that reads no SPMD annotation.
    """
    mismatches.watch(session, ctx.api)
    return Verdict(returns=Encoder.for_checker(session, ctx.api).axis_group(session.options.library_axis(role)))


def _group_axis(
    session: Session, arg: tuple[Expression, Type] | None, equivalent: Equivalent
) -> str | tuple[str, ...] | None:
    """The mesh axis (or flattened axes) of the group the call uses; ``None`` when it cannot be told."""
    if arg is None or (isinstance(arg[0], NameExpr) and arg[0].fullname == NONE):
        role = equivalent.default_role
    elif _is_world(arg[0]):
        role = WORLD
    else:
        return Encoder.read_axis(arg[1])
    if role == WORLD:  # every rank: all the mesh's axes, when the configuration lists them
        axes = session.options.axes
        return (axes[0] if len(axes) == 1 else axes) if axes else None
    return session.options.library_axis(role) if role is not None else None


def _is_world(expr: Expression) -> bool:
    """Whether ``expr`` is torch's default group: ``dist.group.WORLD``."""
    return (isinstance(expr, MemberExpr) and expr.name == "WORLD" and isinstance(expr.expr, RefExpr)
            and expr.expr.fullname in WORLD_GROUP_OWNERS)


def _reduction(arg: tuple[Expression, Type] | None) -> str | None:
    """The reduction an ``op``/``reduceOp`` argument names (``None``: cannot be read); a sum when left out."""
    if arg is None:
        return "sum"
    expr = arg[0]
    if isinstance(expr, StrExpr):
        return reduction_name(expr.value)
    if isinstance(expr, MemberExpr) and isinstance(expr.expr, RefExpr) and expr.expr.fullname in REDUCE_OP:
        return reduction_name(expr.name)  # ReduceOp.MAX, ReduceOp.RedOpType.MAX
    return None


def _dim(args: dict[str, tuple[Expression, Type]], parameter: str | None) -> int | None:
    """The literal int of the argument ``parameter`` (a shard dim); ``None`` when there is none."""
    arg = args.get(parameter) if parameter is not None else None
    value = literal_value(arg[0]) if arg is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _element_type(typ: Type) -> Type:
    """The type of a list's (or tuple's) tensors, where they share one; else the list's own type (no SPMD type)."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and proper.type.fullname in SEQUENCES and len(proper.args) == 1:
        return proper.args[0]
    if isinstance(proper, TupleType) and proper.items:
        found = {str(Encoder.read(item)) for item in proper.items}
        return proper.items[0] if len(found) == 1 else typ
    return typ


def _callee(ctx: FunctionContext | MethodContext, equivalent: Equivalent) -> str:
    """The function as the call spells it (``dist_nn.all_reduce``)."""
    call = ctx.context
    return spell(call.callee) if isinstance(call, CallExpr) else equivalent.shown


def _untyped_result(session: Session, ctx: FunctionContext | MethodContext, equivalent: Equivalent) -> Type | None:
    """What the library function returns, for when mypy does not know: a tensor, or a tuple of them."""
    info = lookup_type_info(session.modules, TENSOR)
    if info is None:
        return None
    tensor = Instance(info, [])
    return ctx.api.named_generic_type("builtins.tuple", [tensor]) if equivalent.returns_tuple else tensor


def _bool_literal(expr: Expression) -> bool | None:
    value = CONSTANTS.get(expr.fullname) if isinstance(expr, NameExpr) else None
    return value if isinstance(value, bool) else None
