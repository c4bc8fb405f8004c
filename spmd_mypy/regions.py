"""``@spmd_types.local_region(axes, in_specs=..., out_specs=...)``: the function it wraps, checked against its specs.

The rule is the core's (:mod:`spmd_types.typesystem.regions`).  The call
without its function is typed ``LocalRegionDecorator[Literal[...]]``, which
carries the region's axes and the per-axis types of its specs, so that its
application to the function (``LocalRegionDecorator.__call__``) can check the
function: each SPMD-annotated positional parameter must accept the types its
entry of ``in_specs`` gives, and the declared return type must fit
``out_specs`` (``V`` allowed on the region's axes where the spec cuts a dim
or is partial).  The decorated function then returns the types of
``out_specs``: that is what its callers see.  Inside it, the global rules are
not applied on the region's axes (:class:`spmd_mypy.files.Place`, which
reads them with :func:`region_axes`).

The axes must be written in the call (string literals, ``Final`` strs or a
tuple of them; else ``spmd-axis``) and the specs as ``PartitionSpec(...)``
calls with literal entries or module-level names bound to one (else
``spmd-annotation``); an axis outside the configured ones is ``spmd-axis``.
"""

from __future__ import annotations

from collections.abc import Sequence

from mypy.nodes import ARG_OPT, ARG_POS, CallExpr, Context, Decorator, Expression, RefExpr, TupleExpr
from mypy.plugin import FunctionContext, MethodContext
from mypy.types import AnyType, CallableType, TupleType, Type, TypeOfAny, get_proper_type

from spmd_mypy.axes import axis_name
from spmd_mypy.collectives import by_name
from spmd_mypy.dtensor import is_none
from spmd_mypy.encoding import Encoder, plain_tensor
from spmd_mypy.fullnames import LOCAL_REGION
from spmd_mypy.partition_specs import spec_in_code
from spmd_mypy.session import Session
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import (
    Code,
    PartitionSpec,
    Region,
    SpmdType,
    Violation,
    region_arity,
    region_input,
    region_output,
    region_problem,
)

__all__ = ["check_decorated", "check_local_region", "region_axes"]

_UNREADABLE_AXES = ("cannot tell which mesh axes local_region makes local: write them in the call, as a string "
                    'literal, a Final str, or a tuple of them (local_region(("tp", "cp"), ...))')


def region_axes(call: CallExpr) -> tuple[str, ...] | None:
    """The axes a ``local_region(...)`` call names (its first argument or ``axes=``), where written literally."""
    for k, (arg, name) in enumerate(zip(call.args, call.arg_names)):
        if name == "axes" or (name is None and k == 0):
            return _axes(arg)
    return None


def check_local_region(session: Session, ctx: FunctionContext) -> Verdict:
    """``local_region(axes, in_specs=..., out_specs=...)``: its arguments read, and the decorator typed."""
    args = by_name(ctx)
    verdict = Verdict()
    if not {"axes", "in_specs", "out_specs"} <= args.keys():
        return verdict  # mypy reports the missing argument
    axes = _axes(args["axes"][0])
    if axes is None:
        verdict.report([Violation(Code.AXIS, None, _UNREADABLE_AXES)], ctx.context, "local_region")
        return verdict
    in_specs = _specs(session, args["in_specs"])
    out_specs = _out_specs(session, args["out_specs"])
    for name, specs in (("in_specs", in_specs), ("out_specs", out_specs)):
        if specs is None:
            reason = (f"cannot read local_region's {name}: write it in the call as "
                      f"{'a PartitionSpec(...) or ' if name == 'out_specs' else ''}a tuple of PartitionSpec(...) "
                      f"(literal entries, or a module-level name bound to one) and None")
            verdict.report([Violation(Code.ANNOTATION, None, reason)], ctx.context, "local_region")
    if in_specs is None or out_specs is None:
        return verdict
    problem = region_problem(axes, in_specs, out_specs, session.options.axes or None)
    if problem is not None:
        verdict.report([problem], ctx.context, "local_region")
        return verdict
    region = Region.of(axes, in_specs, out_specs, session.options.axes)
    verdict.returns = Encoder.for_checker(session, ctx.api).local_region_decorator(region)
    return verdict


def check_decorated(session: Session, ctx: MethodContext) -> Verdict:
    """``@local_region(...)`` applied to a function: the function checked against the specs (reported at the
    decorator), and its result given the types of ``out_specs``."""
    region = Encoder.read_region(ctx.type)
    func = get_proper_type(ctx.arg_types[0][0]) if ctx.arg_types and ctx.arg_types[0] else None
    if region is None or not isinstance(func, CallableType):
        return Verdict()
    verdict = Verdict()
    at = _decorator_call(ctx.context) or ctx.context
    name = (func.name or "func").split(" of ")[0]
    positional = [k for k, kind in enumerate(func.arg_kinds) if kind in (ARG_POS, ARG_OPT)]
    returned = _outputs(region, func.ret_type)
    problem = region_arity(region, len(positional), len(returned) if returned is not None else None)
    if problem is not None:
        verdict.report([problem], at, f'local_region of "{name}"')
        return verdict
    for k in positional:
        declared = Encoder.read(func.arg_types[k])
        if isinstance(declared, SpmdType):
            param = func.arg_names[k] or str(k)
            verdict.report(region_input(region, k, None, declared), at,
                           f'local_region parameter "{param}" of "{name}"', value=param)
    outputs = returned or ()
    for j, out in enumerate(outputs):
        declared = Encoder.read(out)
        if isinstance(declared, SpmdType):
            which = f" {j}" if len(outputs) > 1 else ""
            verdict.report(region_output(region, j, declared), at, f'local_region output{which} of "{name}"',
                           value="out")
    verdict.returns = func.copy_modified(ret_type=_restated(session, ctx, region, func.ret_type, outputs))
    return verdict


def _restated(session: Session, ctx: MethodContext, region: Region, ret: Type, outputs: Sequence[Type]) -> Type:
    """The return type ``ret`` with each tensor in it typed by its entry of ``out_specs``."""
    encoder = Encoder.for_checker(session, ctx.api)
    typed: list[Type] = []
    for out, spec in zip(outputs, region.outputs):
        base = plain_tensor(out)
        found = encoder.tensor(spec, base, inferred=False) if base is not None and spec is not None else None
        typed.append(found if found is not None else out)
    if region.one_output:
        return typed[0] if typed else ret
    proper = get_proper_type(ret)
    return proper.copy_modified(items=typed) if isinstance(proper, TupleType) else ret


def _outputs(region: Region, ret: Type) -> list[Type] | None:
    """The returned values ``out_specs`` matches: the one value, or the items of a returned tuple; ``None`` if
    a tuple of specs meets a function that returns no tuple."""
    if region.one_output:
        return [ret]
    proper = get_proper_type(ret)
    return list(proper.items) if isinstance(proper, TupleType) else None


def _axes(expr: Expression) -> tuple[str, ...] | None:
    items = expr.items if isinstance(expr, TupleExpr) else [expr]
    names = [axis_name((item, AnyType(TypeOfAny.special_form))) for item in items]
    return tuple(n for n in names if n is not None) if names and None not in names else None


def _specs(session: Session, arg: tuple[Expression, Type]) -> tuple[PartitionSpec | None, ...] | None:
    """``in_specs`` (or a tuple of ``out_specs``) as written: a tuple of specs and ``None``; else ``None``."""
    if not isinstance(arg[0], TupleExpr):
        return None
    items = arg[0].items
    found = [None if is_none(item) else spec_in_code(item, session.modules) for item in items]
    if any(spec is None and not is_none(item) for spec, item in zip(found, items)):
        return None
    return tuple(found)


def _out_specs(session: Session, arg: tuple[Expression, Type]
               ) -> PartitionSpec | tuple[PartitionSpec | None, ...] | None:
    """``out_specs`` as written: one spec, or a tuple of specs and ``None``; else ``None``."""
    if not isinstance(arg[0], TupleExpr):
        return spec_in_code(arg[0], session.modules)
    return _specs(session, arg)


def _decorator_call(context: Context) -> CallExpr | None:
    """The ``@local_region(...)`` of a decorated function, where reports go."""
    if isinstance(context, Decorator):
        for decorator in context.decorators:
            if isinstance(decorator, CallExpr) and isinstance(decorator.callee, RefExpr) and (
                    decorator.callee.fullname in LOCAL_REGION):
                return decorator
    return None
