"""mypy error codes for SPMD violations, and how violations become mypy errors.

Each class of mistake has its own code under ``spmd-``, so one line can be
silenced with ``# type: ignore[spmd-partial]`` and a whole class turned off with
``disable_error_code``.  The wording of every rule comes from the core's
:class:`~spmd_types.typesystem.Violation`; this module only places it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from mypy.nodes import (
    CallExpr,
    Context,
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
from spmd_mypy.error_codes import CODES, INTERNAL
from spmd_types.typesystem import Violation

__all__ = ["Reporter", "spell"]


C = TypeVar("C")
R = TypeVar("R")


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


class Reporter:
    """Turns violations into mypy errors; guards hooks against internal failures."""

    def __init__(self, debug: bool) -> None:
        self._debug = debug

    def violations(
        self,
        api: CheckerPluginInterface,
        violations: Sequence[Violation],
        context: Context,
        where: str,
        operand_names: Sequence[str] = (),
        value: str = "x",
        *,
        speculative: bool = False,
    ) -> None:
        """Report each violation at ``context``; ``where`` names the op or boundary.

        ``speculative`` marks a hook that mypy runs under an error filter while
        it tries alternatives: an operator's dunder and its reflection, or the
        overloads of a function (see :func:`spmd_mypy.compat.past_speculation`).
        """
        if not violations:
            return
        if speculative:
            with past_speculation(api):
                self.violations(api, violations, context, where, operand_names, value)
            return
        for violation in violations:
            message = violation.render(where, tuple(operand_names), value)
            api.fail(message, context, code=CODES[violation.code])

    def guard(self, hook: Callable[[C], R], fallback: Callable[[C], R]) -> Callable[[C], R]:
        """``hook``, except that an internal failure falls back instead of crashing mypy.

        With the ``debug`` option the failure is also reported as a note
        (code ``spmd-internal``) at the expression being checked.
        """
        debug = self._debug

        def guarded(ctx: C) -> R:
            try:
                return hook(ctx)
            except Exception as error:  # the plugin must never crash mypy
                if debug:
                    api = getattr(ctx, "api", None)
                    context = getattr(ctx, "context", None)
                    if api is not None and context is not None:
                        note = getattr(api, "note", None) or api.msg.note
                        note(f"spmd plugin: {type(error).__name__}: {error}; treated as unknown", context,
                             code=INTERNAL)
                return fallback(ctx)

        return guarded
