"""How violations become mypy errors, and how the source is spelled in them.

Each class of mistake has its own code under ``spmd-`` (:mod:`spmd_mypy.error_codes`),
so one line can be silenced with ``# type: ignore[spmd-partial]`` and a whole
class turned off with ``disable_error_code``.  The wording of every rule comes
from the core's :class:`~spmd_types.typesystem.Violation`; this module only
places it, naming the operands as the source spells them.
"""

from __future__ import annotations

from collections.abc import Sequence

from mypy.nodes import (
    CallExpr,
    Expression,
    FloatExpr,
    IndexExpr,
    IntExpr,
    MemberExpr,
    NameExpr,
    OpExpr,
    UnaryExpr,
)
from mypy.plugin import CheckerPluginInterface

from spmd_mypy.compat import past_speculation
from spmd_mypy.error_codes import CODES
from spmd_mypy.verdict import Report

__all__ = ["emit", "spell"]


def spell(expr: Expression) -> str:
    """A short source-like spelling of ``expr`` for fix suggestions (``x``, ``self.w``)."""
    if isinstance(expr, NameExpr):
        return expr.name
    if isinstance(expr, MemberExpr):
        return f"{spell(expr.expr)}.{expr.name}"
    if isinstance(expr, CallExpr):
        return f"{spell(expr.callee)}(...)"
    if isinstance(expr, IndexExpr):
        return f"{spell(expr.base)}[...]"
    if isinstance(expr, OpExpr):
        return f"{spell(expr.left)} {expr.op} {spell(expr.right)}"
    if isinstance(expr, UnaryExpr):
        return f"{expr.op}{spell(expr.expr)}"
    if isinstance(expr, (IntExpr, FloatExpr)):
        return str(expr.value)
    return "x"


def emit(api: CheckerPluginInterface, reports: Sequence[Report]) -> None:
    """Report each violation of ``reports`` as a mypy error, with the error code of its class."""
    for report in reports:
        if report.speculative:
            with past_speculation(api):
                _emit(api, report)
        else:
            _emit(api, report)


def _emit(api: CheckerPluginInterface, report: Report) -> None:
    for violation in report.violations:
        message = violation.render(report.where, report.operands, report.value)
        api.fail(message, report.at, code=CODES[violation.code])
