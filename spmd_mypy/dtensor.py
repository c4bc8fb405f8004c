"""DTensor's boundaries with local code: ``from_local``, ``to_local``, ``redistribute``, and named meshes.

A DTensor is a global tensor.  The plugin does not type what happens to it
(DTensor's own ops and their communication); it records its placements where
they are written, as ``PlacedDTensor[Literal["dp:Replicate(), tp:Shard(0)"]]``,
and turns them into local SPMD types where code leaves DTensor:

* ``DTensor.from_local(x, mesh, placements, grad_placements=...)`` checks, on
  each mesh dim, that ``x``'s type is the one the pair of placements stands
  for (:func:`~spmd_types.typesystem.check_from_local`), and gives the result
  those placements;
* ``d.redistribute(mesh, placements)`` gives the result the new placements;
* ``d.to_local(grad_placements=...)`` is typed by the pair of placements on
  each dim (:func:`~spmd_types.typesystem.to_local_type`).

Placements are known when written as a list or tuple of ``Shard(i)``,
``Replicate()``, ``Partial()`` (a sum); the mesh's dim names when it was made
by ``init_device_mesh(..., mesh_dim_names=("dp", "tp"))`` with literal names,
is ``mesh["tp"]`` (or ``mesh["dp", "tp"]``) of a mesh, or is annotated
``Annotated[DeviceMesh, Axis["dp"], Axis["tp"]]``.  Anything else (a
placements variable, an unannotated mesh, a DTensor parameter) leaves the
result unknown and reports nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from mypy.nodes import (
    CallExpr,
    Expression,
    IndexExpr,
    ListExpr,
    MemberExpr,
    RefExpr,
    StrExpr,
    TupleExpr,
)
from mypy.plugin import FunctionContext, MethodContext

from spmd_mypy.axes import int_literal
from spmd_mypy.collectives import by_name
from spmd_mypy.compat import final_str_value
from spmd_mypy.encoding import Encoder
from spmd_mypy.fullnames import NONE, PLACEMENT_CLASSES
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.source import source
from spmd_mypy.verdict import Producer, Verdict
from spmd_types.typesystem import (
    AxisType,
    Placement,
    Placements,
    SpmdType,
    Violation,
    check_from_local,
    retarget_to_local,
    spell_placements,
    to_local_type,
)

__all__ = [
    "UNREADABLE",
    "Unreadable",
    "check_from_local_call",
    "check_init_device_mesh",
    "check_redistribute",
    "check_submesh",
    "check_to_local",
    "is_none",
    "read_placements",
]


class Unreadable:
    """An argument the checker cannot read (a variable, a non-sum ``Partial``)."""


UNREADABLE = Unreadable()


def check_init_device_mesh(session: Session, ctx: FunctionContext) -> Verdict:
    """``init_device_mesh(..., mesh_dim_names=("dp", "tp"))``: a mesh whose dims are named."""
    names = by_name(ctx).get("mesh_dim_names")
    dims = _names(names[0]) if names is not None else None
    return Verdict(returns=Encoder.for_checker(session, ctx.api).named_mesh(dims)) if dims else Verdict()


def check_submesh(session: Session, ctx: MethodContext) -> Verdict:
    """``mesh["tp"]`` or ``mesh["dp", "tp"]``: the mesh of those dims."""
    dims = _names(ctx.args[0][0]) if ctx.args and ctx.args[0] else None
    return Verdict(returns=Encoder.for_checker(session, ctx.api).named_mesh(dims)) if dims else Verdict()


def check_from_local_call(session: Session, ctx: MethodContext) -> Verdict:
    """``DTensor.from_local(x, mesh, placements, grad_placements=...)``."""
    args = by_name(ctx)
    tensor, mesh = args.get("local_tensor"), args.get("device_mesh")
    dims = Encoder.read_mesh(mesh[1]) if mesh is not None else None
    if tensor is None or mesh is None or dims is None:
        return Verdict()
    placements = _placements(args.get("placements"), dims)
    grads = _placements(args.get("grad_placements"), dims)
    if isinstance(placements, Unreadable) or placements is None:
        return Verdict()
    layout = Placements(dims, placements)
    verdict = Verdict(returns=Encoder.for_checker(session, ctx.api).placed_dtensor(layout))
    have = Encoder.read(tensor[1])
    if isinstance(have, SpmdType) and not isinstance(grads, Unreadable):
        call = f"DTensor.from_local({{x}}, {_spell_mesh(mesh[0])}, {spell_placements(placements)}, grad_placements="
        found = check_from_local(have, layout, grads, lambda new: call + spell_placements(new) + ")")
        violations = tuple(v.replacing("from_local") for v in found)
        name = source(tensor[0])
        verdict.report(violations, ctx.context, "DTensor.from_local", (name,), name)
    return verdict


def check_redistribute(session: Session, ctx: MethodContext) -> Verdict:
    """``d.redistribute(mesh, placements)``: the DTensor with the new placements."""
    args = by_name(ctx)
    mesh = args.get("device_mesh")
    before = Encoder.read_placements(ctx.type)
    dims = Encoder.read_mesh(mesh[1]) if mesh is not None and not is_none(mesh[0]) else (
        before.dims if before is not None else None)
    placements = _placements(args.get("placements"), dims) if dims is not None else None
    if dims is None or placements is None or isinstance(placements, Unreadable):
        return Verdict()
    return Verdict(returns=Encoder.for_checker(session, ctx.api).placed_dtensor(Placements(dims, placements)))


def check_to_local(session: Session, ctx: MethodContext) -> Verdict:
    """``d.to_local(grad_placements=...)``: the local type of each dim's pair of placements."""
    layout = Encoder.read_placements(ctx.type)
    callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
    if layout is None or not isinstance(callee, MemberExpr):
        return Verdict()
    grads = _placements(by_name(ctx).get("grad_placements"), layout.dims)
    if isinstance(grads, Unreadable):
        return Verdict()

    def respell(new: tuple[Placement, ...]) -> str:
        return f"{{x}}.to_local(grad_placements={spell_placements(new)})"

    result, violations = to_local_type(layout, grads, respell)
    violations = tuple(v.replacing("to_local") for v in violations)
    receiver = source(callee.expr)

    def retarget(violation: Violation, want: AxisType | None) -> Violation:
        return retarget_to_local(violation, layout, grads, want, respell).replacing("to_local")

    verdict = Verdict(result=result, fit=True, producer=Producer(callee.expr, retarget))
    verdict.report(violations, ctx.context, "to_local", (receiver,), receiver)
    return verdict


# -- reading arguments -------------------------------------------------------------------------------------------


def _names(expr: Expression) -> tuple[str, ...] | None:
    """Mesh dim names written as a string, or a tuple or list of them (literals or ``Final`` strs)."""
    items = expr.items if isinstance(expr, (TupleExpr, ListExpr)) else [expr]
    names = [_name(item) for item in items]
    return tuple(n for n in names if n is not None) if names and None not in names else None


def _name(expr: Expression) -> str | None:
    if isinstance(expr, StrExpr):
        return expr.value
    return final_str_value(expr) if isinstance(expr, RefExpr) else None


def _placements(
    arg: tuple[Expression, object] | None, dims: Sequence[str]
) -> tuple[Placement, ...] | Unreadable | None:
    """The placements a list or tuple of placement calls writes; ``None`` when the argument is left out or ``None``."""
    if arg is None or is_none(arg[0]):
        return None
    found = read_placements(arg[0], dims)
    return found if found is not None else UNREADABLE


def read_placements(expr: Expression, dims: Sequence[str]) -> tuple[Placement, ...] | None:
    """The placements ``expr`` writes as a list or tuple of placement calls, one per mesh dim; else ``None``."""
    if not isinstance(expr, (ListExpr, TupleExpr)) or len(expr.items) != len(dims):
        return None
    out = [_placement(item) for item in expr.items]
    return tuple(p for p in out if p is not None) if None not in out else None


def _placement(expr: Expression) -> Placement | None:
    if not (isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr)):
        return None
    kind = PLACEMENT_CLASSES.get(expr.callee.fullname)
    if kind == "Shard":
        dim = int_literal(expr.args[0]) if len(expr.args) == 1 else None
        return Placement("Shard", dim) if dim is not None else None
    if kind == "Partial" and expr.args and not (isinstance(expr.args[0], StrExpr) and expr.args[0].value == "sum"):
        return None  # another reduction than the sum: no local type
    return Placement(kind) if kind is not None else None


def is_none(expr: Expression) -> bool:
    """Whether ``expr`` is the literal ``None``."""
    return isinstance(expr, RefExpr) and expr.fullname == NONE



def _spell_mesh(expr: Expression) -> str:
    if isinstance(expr, IndexExpr) and (names := _names(expr.index)):
        return f"{spell(expr.base)}[{', '.join(repr(n) for n in names)}]".replace("'", '"')
    return spell(expr)
