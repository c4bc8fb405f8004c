"""DTensor's ``local_map``: the function it wraps checked against its placements.

``local_map(func, out_placements, in_placements, in_grad_placements,
device_mesh)`` hands ``func`` local tensors and makes DTensors of what it
returns (:mod:`spmd_types.typesystem.local_map` says which local types that
gives).  When the mesh's dim names are known (as for ``DTensor.from_local``:
see :mod:`spmd_mypy.dtensor`) and the placements are written as lists of
placement calls, each SPMD-annotated positional parameter of ``func`` is
checked against the local type its entry of ``in_placements`` and
``in_grad_placements`` gives, and its declared return type against
``out_placements`` with DTensor's default gradients.

Both spellings are checked: ``local_map(func, ...)``, and the decorator
``@local_map(out_placements=..., ...)``, whose call without ``func`` is typed
``LocalMapDecorator[Literal[...]]`` so that its application to the function
(``LocalMapDecorator.__call__``) can be checked.  The wrapped function keeps
mypy's own type.  Anything not known (a mesh without dim names or left out,
placements in a variable, a parameter that ``local_map`` would flatten, such
as a tuple of tensors) leaves that part unchecked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mypy.nodes import (
    ARG_NAMED,
    ARG_OPT,
    ARG_POS,
    CallExpr,
    Context,
    Decorator,
    Expression,
    ListExpr,
    RefExpr,
    TupleExpr,
)
from mypy.plugin import FunctionContext, MethodContext
from mypy.types import CallableType, Instance, NoneType, TupleType, Type, get_proper_type

from spmd_mypy.collectives import by_name
from spmd_mypy.dtensor import UNREADABLE, Unreadable, is_none, read_placements
from spmd_mypy.encoding import Encoder, is_tensor
from spmd_mypy.fullnames import DEVICE_MESH, LOCAL_MAP
from spmd_mypy.session import Session
from spmd_mypy.source import source
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import LocalMap, Placement, SpmdType, Violation, local_map_input, local_map_output

__all__ = ["check_decorated", "check_local_map"]

_LEAVES = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.str", "builtins.complex"})
"""Argument types that ``local_map`` passes as one flattened argument (with tensors and meshes)."""

_Entries = tuple[tuple[Placement, ...] | None, ...]

_PARAMETERS = ("func", "out_placements", "in_placements", "in_grad_placements", "device_mesh")
"""``local_map``'s positional parameters, in order (torch 2.13)."""


def check_local_map(session: Session, ctx: FunctionContext) -> Verdict:
    """``local_map(func, ...)`` checks ``func``; ``local_map(...)`` without it is a decorator that will."""
    args = by_name(ctx)
    spec = _spec(args)
    if spec is None:
        return Verdict()
    func = args.get("func")
    if func is None or is_none(func[0]):
        return Verdict(returns=Encoder.for_checker(session, ctx.api).local_map_decorator(spec))
    verdict = Verdict()
    if isinstance(ctx.context, CallExpr):
        _check_function(spec, func[1], ctx.context, verdict)
    return verdict


def check_decorated(session: Session, ctx: MethodContext) -> Verdict:
    """``@local_map(...)`` applied to a function: the function checked, reported at the decorator."""
    spec = Encoder.read_local_map(ctx.type)
    if spec is None or not ctx.arg_types or not ctx.arg_types[0]:
        return Verdict()
    call = _decorator_call(ctx.context)
    verdict = Verdict()
    if call is not None:
        _check_function(spec, ctx.arg_types[0][0], call, verdict)
    return verdict


def _check_function(spec: LocalMap, typ: Type, at: CallExpr, verdict: Verdict) -> None:
    """``func`` of type ``typ`` wrapped by the ``local_map`` call ``at``, whose placements are ``spec``."""
    func = get_proper_type(typ)
    if not isinstance(func, CallableType):
        return

    def rewrite(parameter: str, value: str) -> str:
        return _rewritten(at, parameter, value) or ""

    spelled = _rewritten(at, "func", "func") is not None  # a fix is the whole call written anew
    name = (func.name or "func").split(" of ")[0]
    for k, (kind, param, param_type) in enumerate(zip(func.arg_kinds, func.arg_names, func.arg_types)):
        if kind not in (ARG_POS, ARG_OPT) or not _is_leaf(param_type):
            break  # later arguments are no longer matched one to one with in_placements
        declared = Encoder.read(param_type)
        if isinstance(declared, SpmdType):
            _, violations = local_map_input(spec, k, declared, rewrite)
            verdict.report(_fixable(violations, spelled), at, f'local_map argument "{param or k}" of "{name}"',
                           value=name)
    outputs = _outputs(spec, func.ret_type)
    for j, out in enumerate(outputs):
        declared = Encoder.read(out)
        if isinstance(declared, SpmdType):
            which = f" {j}" if len(outputs) > 1 else ""
            violations = local_map_output(spec, j, declared, rewrite)
            verdict.report(_fixable(violations, spelled), at, f'local_map output{which} of "{name}"', value=name)


def _fixable(violations: Sequence[Violation], spelled: bool) -> tuple[Violation, ...]:
    """``violations``, without their fixes where the call cannot be spelled."""
    return tuple(violations) if spelled else tuple(replace(v, fixes=()) for v in violations)


def _rewritten(call: CallExpr, parameter: str, value: str) -> str | None:
    """``call`` written with its argument ``parameter`` (by name or position) as ``value``, added if left out."""
    callee = source(call.callee)
    args = []
    found = False
    for k, (arg, kind, name) in enumerate(zip(call.args, call.arg_kinds, call.arg_names)):
        spelled = source(arg)
        if callee is None or spelled is None or kind not in (ARG_POS, ARG_NAMED):
            return None
        if name == parameter or (name is None and k < len(_PARAMETERS) and _PARAMETERS[k] == parameter):
            spelled, found = value, True
        args.append(f"{name}={spelled}" if name else spelled)
    if not found:
        args.append(f"{parameter}={value}")
    return f"{callee}({', '.join(args)})"


def _outputs(spec: LocalMap, ret: Type) -> Sequence[Type]:
    """The flattened outputs of a function returning ``ret``, one per entry of ``out_placements``; else none."""
    proper = get_proper_type(ret)
    items = proper.items if isinstance(proper, TupleType) else [ret]
    if len(items) != len(spec.outputs) or not all(map(_is_leaf, items)):
        return ()
    return items


def _is_leaf(typ: Type) -> bool:
    """Whether a value of type ``typ`` is one flattened argument or output (not a container ``local_map`` flattens)."""
    proper = get_proper_type(typ)
    if isinstance(proper, NoneType):
        return True
    return isinstance(proper, Instance) and (
        is_tensor(proper) or proper.type.fullname in _LEAVES or proper.type.has_base(DEVICE_MESH))


def _decorator_call(context: Context) -> CallExpr | None:
    """The ``@local_map(...)`` of a decorated function, where reports go."""
    if isinstance(context, Decorator):
        for decorator in context.decorators:
            if isinstance(decorator, CallExpr) and isinstance(decorator.callee, RefExpr) and (
                    decorator.callee.fullname == LOCAL_MAP):
                return decorator
    return None


# -- reading the placements ---------------------------------------------------------------------------------------


def _spec(args: dict[str, tuple[Expression, Type]]) -> LocalMap | None:
    """The call's placements on its mesh; ``None`` when the mesh's dim names or the output placements are unknown."""
    mesh = args.get("device_mesh")
    dims = Encoder.read_mesh(mesh[1]) if mesh is not None else None
    out = args.get("out_placements")
    if dims is None or out is None:
        return None
    one = isinstance(out[0], ListExpr)
    outputs = ((read_placements(out[0], dims),) if one else _entries(out[0], dims))
    if outputs is None or (one and outputs[0] is None):
        return None
    inputs, grads = (_argument(args.get(name), dims) for name in ("in_placements", "in_grad_placements"))
    if isinstance(inputs, Unreadable) or isinstance(grads, Unreadable):
        return LocalMap(dims, None, None, outputs, one)  # the parameters' types are not known
    return LocalMap(dims, inputs, grads, outputs, one)


def _argument(arg: tuple[Expression, Type] | None, dims: Sequence[str]) -> _Entries | Unreadable | None:
    """``in_placements`` or ``in_grad_placements``; ``None`` when left out."""
    if arg is None or is_none(arg[0]):
        return None
    found = _entries(arg[0], dims)
    return found if found is not None else UNREADABLE


def _entries(expr: Expression, dims: Sequence[str]) -> _Entries | None:
    """A tuple (or list) of entries, each ``None`` or a list of placements; ``None`` when unreadable."""
    if not isinstance(expr, (TupleExpr, ListExpr)):
        return None
    out: list[tuple[Placement, ...] | None] = []
    for item in expr.items:
        if is_none(item):
            out.append(None)
            continue
        found = read_placements(item, dims)
        if found is None:
            return None
        out.append(found)
    return tuple(out)
