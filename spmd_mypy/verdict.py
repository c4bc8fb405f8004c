"""What a handler decides about one call or attribute, for the dispatcher to apply.

Every handler (:mod:`spmd_mypy.ops`, :mod:`spmd_mypy.collectives`, ...) reads
its operands, asks the rule core, and returns a :class:`Verdict`.  What every
handler would otherwise end with is then done once, by
:func:`spmd_mypy.hooks.finish`: report the violations, in the order they were
found; give mypy the result type; and, for a call, compare that type with the
declaration the value flows into (:func:`spmd_mypy.boundaries.fit_declared`).
A handler that finds nothing to say returns ``Verdict()``: mypy's own result
type, untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mypy.nodes import Context, Expression
from mypy.types import Type

from spmd_mypy.source import source
from spmd_types.typesystem import AxisType, EntryOrders, SpmdType, Violation

__all__ = ["Producer", "Report", "Verdict", "add_report"]


@dataclass(frozen=True)
class Report:
    """Violations to report at ``at``, worded for the place they occur.

    ``where`` names the op or boundary (``+``, ``argument "x" of "f"``);
    ``operands`` spell the operands, for fixes that apply to one of them;
    ``value`` spells the value a fix applies to otherwise (``None``: it has no
    spelling, and a fix that needs one is not printed).  ``speculative``
    marks an expression that mypy only tries (an operator's dunder and its
    reflection, the overloads of a function): see
    :func:`spmd_mypy.compat.past_speculation`.
    """

    violations: tuple[Violation, ...]
    at: Context
    where: str
    operands: tuple[str | None, ...] = ()
    value: str | None = None
    speculative: bool = False


class Producer:
    """The call whose result is being fitted, and how a mismatch is fixed at that call instead of after it.

    ``written`` is the call's input as written (a fix of operand 0 applies to
    it; ``None``: it cannot be written back), spelled by :attr:`x` only where a
    mismatch is reported;
    ``retarget`` rewrites a violation on one axis given the declared type
    there (a collective: the same call with that ``dst``).

    A plain class, as :class:`Verdict` is: one is made at every collective checked.
    """

    def __init__(self, written: Expression | None, retarget: Callable[[Violation, AxisType | None], Violation]) -> None:
        self.written = written
        self.retarget = retarget

    @property
    def x(self) -> str | None:
        """The input as source text; ``None`` where it cannot be written back."""
        return source(self.written) if self.written is not None else None


class Verdict:
    """The outcome of checking one call or attribute.

    ``returns`` replaces mypy's result type (``None``: mypy's own), and
    ``result``, when known, is the SPMD type every tensor in it gets (and
    ``rank`` and ``orders``, when known, the rank and entry orders a single
    tensor result has, in a global function).  With
    ``fit`` the typed result is compared with the declaration it flows into,
    where ``speculative`` says whether mypy is only trying the expression and
    ``producer`` names the collective that computed it (its fix is then that
    call with another ``dst``).  ``reports`` starts empty (see :meth:`report`).
    Once its handler has returned it, a verdict is not changed
    (:func:`~spmd_mypy.hooks.finish` keeps the declaration's report apart), so
    that a call mypy checks twice can be given the same one
    (:mod:`spmd_mypy.repeats`).

    A plain class, not a dataclass: mypyc compiles a written ``__init__``, where
    a dataclass's is generated at import and runs as Python at each of the
    thousands of verdicts a model's check makes.
    """

    def __init__(self, *, returns: Type | None = None, result: SpmdType | None = None, rank: int | None = None,
                 orders: EntryOrders = (), fit: bool = False, speculative: bool = False,
                 producer: Producer | None = None) -> None:
        self.reports: list[Report] = []
        self.returns = returns
        self.result = result
        self.rank = rank
        self.orders = orders
        self.fit = fit
        self.speculative = speculative
        self.producer = producer

    def report(
        self,
        violations: Sequence[Violation],
        at: Context,
        where: str,
        operands: Sequence[str | None] = (),
        value: str | None = None,
        *,
        speculative: bool = False,
    ) -> None:
        """Add ``violations`` (if any) to what is reported; see :class:`Report`."""
        add_report(self.reports, violations, at, where, operands, value, speculative)


def add_report(reports: list[Report], violations: Sequence[Violation], at: Context, where: str,
               operands: Sequence[str | None], value: str | None, speculative: bool) -> None:
    """Add ``violations`` (if any) to ``reports``, as :meth:`Verdict.report` does to a verdict's own."""
    if violations:
        reports.append(Report(tuple(violations), at, where, tuple(operands), value, speculative))
