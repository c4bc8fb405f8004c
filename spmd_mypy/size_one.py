"""Code guarded by a test that an axis has one rank, where the axis's SPMD types all fit each other.

The rule is the core's (``spmd_types.typesystem.size_one``); this module finds
the guards and applies it.  A guard is ``if SIZE == 1:`` (its body) or
``if SIZE > 1:`` (its ``else``), and the like, where ``SIZE`` is
``spmd_types.axis_size("tp")``, a library's size getter
(``get_tensor_model_parallel_world_size()``), ``group.size()`` of a group
typed with its axis, or a name the function assigns once from one of these.

Where a guarded branch assigns a variable that another branch also
assigns, its type does not constrain the joined type on that axis
(:func:`settle`): Megatron's embedding masks its ids only with more than one
rank, and the ``V`` and ``R`` branches meet as ``V``.

Inside a guarded branch, the plugin's own violations on that axis are not
reported (:func:`remaining`), and neither are mypy's own type errors between
two SPMD types that differ only on that axis (``return input_`` of a ``V``
where ``R`` is declared), which the error filter of :mod:`spmd_mypy.mismatches` drops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mypy.nodes import CallExpr, Expression, MemberExpr, NameExpr, RefExpr, StrExpr, Var
from mypy.plugin import CheckerPluginInterface, FunctionContext, MethodContext

from spmd_mypy import files, mismatches
from spmd_mypy.compat import assigned_in_checked_function, expression_type, final_str_value
from spmd_mypy.encoding import Divergent, Encoder
from spmd_mypy.fullnames import AXIS_SIZE
from spmd_mypy.session import Session
from spmd_mypy.verdict import Report, Verdict
from spmd_types.typesystem import SIZE_GETTERS, SpmdType, merge_guarded_paths, on_size_one

__all__ = ["axis_counted", "remaining", "settle", "size_getter"]


def axis_counted(session: Session, expr: Expression, values: dict[str, Expression]) -> str | None:
    """The mesh axis whose number of ranks ``expr`` is (see the module docstring); ``None``: not a size."""
    if isinstance(expr, NameExpr) and expr.name in values and not isinstance(values[expr.name], NameExpr):
        return axis_counted(session, values[expr.name], {})
    if not isinstance(expr, CallExpr):
        return None
    callee = expr.callee
    if isinstance(callee, RefExpr) and callee.fullname in SIZE_GETTERS:
        return session.options.library_axis(SIZE_GETTERS[callee.fullname])
    if isinstance(callee, RefExpr) and callee.fullname == AXIS_SIZE and expr.args:
        axis = expr.args[0]
        if isinstance(axis, StrExpr):
            return axis.value
        return final_str_value(axis) if isinstance(axis, RefExpr) else None
    if isinstance(callee, MemberExpr) and callee.name == "size" and not expr.args:
        group = callee.expr
        if isinstance(group, RefExpr) and isinstance(group.node, Var) and group.node.type is not None:
            return Encoder.read_axis(group.node.type)
    return None


def size_getter(session: Session, ctx: FunctionContext | MethodContext) -> Verdict:
    """A call that counts an axis's ranks: mypy's errors are filtered from here on (a guard may follow)."""
    mismatches.watch(session, ctx.api)
    return Verdict()


def remaining(session: Session, api: CheckerPluginInterface, reports: Sequence[Report]) -> list[Report]:
    """``reports`` less the violations on an axis that guarded code runs with one rank on."""
    if not reports:
        return list(reports)
    mismatches.watch(session, api)
    kept = []
    for report in reports:
        axes = files.size_one_axes(session, api, report.at)
        violations = on_size_one(report.violations, axes) if axes else report.violations
        if violations:
            kept.append(report if violations == report.violations else replace(report, violations=violations))
    return kept


def settle(session: Session, api: CheckerPluginInterface, expr: Expression | None,
           found: Divergent) -> SpmdType | Divergent:
    """The type of variable ``expr``, typed by branch ``found``, with its size-one branches set aside.

    Each of ``found``'s types runs with one rank on the axes where every
    assignment of the variable (in its function) that gives it that type is
    guarded; a type no assignment gives (a parameter's) is guarded nowhere.
    What :func:`~spmd_types.typesystem.merge_guarded_paths` cannot merge stays
    ``found``.
    """
    if not isinstance(expr, NameExpr) or not found.types:
        return found
    assigned = []
    for value in assigned_in_checked_function(api, expr.name):
        typ = expression_type(api, value)
        read = Encoder.read(typ) if typ is not None else None
        if isinstance(read, SpmdType):
            assigned.append((read, files.size_one_axes(session, api, value)))
    paths = []
    for t in found.types:
        guards = [axes for read, axes in assigned if read == t]
        paths.append((t, frozenset.intersection(*guards) if guards else frozenset()))
    return merge_guarded_paths(paths) or found

