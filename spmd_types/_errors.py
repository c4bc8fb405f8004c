"""Errors raised by the runtime library.

Every error derives from :class:`SpmdError`, so ``except spmd.SpmdError``
catches them all, and also from the builtin that describes its kind:

* a bad argument (a ``src``/``dst`` pair the call does not accept, a shape the
  axis does not divide, an unknown axis name) is a :class:`ValueError`;
* a problem with the run-time state (no current mesh, a gradient reaching a
  non-differentiable reduction, a failed run-time type check) is a
  :class:`RuntimeError`.

This module imports nothing heavy: the rule core's :class:`Violation` renders
the messages of calls that the type rules reject.
"""

from __future__ import annotations

from collections.abc import Iterable

from spmd_types.typesystem.violations import Violation

__all__ = [
    "CollectiveArgumentError",
    "NoCurrentMeshError",
    "NotDifferentiableError",
    "ShapeError",
    "SpmdError",
    "SpmdRuntimeError",
    "SpmdTypeCheckError",
    "SpmdValueError",
    "UnknownAxisError",
]


class SpmdError(Exception):
    """Base class of every error the runtime library raises."""


class SpmdValueError(SpmdError, ValueError):
    """An argument that cannot be right, whatever the run-time state."""


class SpmdRuntimeError(SpmdError, RuntimeError):
    """Something about the run-time state (mesh, autograd, data) is wrong."""


class CollectiveArgumentError(SpmdValueError):
    """A collective or cast called with ``src``/``dst`` (or dims) it does not accept.

    When the type rules reject the call, :attr:`violation` holds the rule
    core's structured violation, whose rendering lists the calls that would do
    the intended type change and what each costs.
    """

    violation: Violation | None

    def __init__(self, message: str, violation: Violation | None = None) -> None:
        super().__init__(message)
        self.violation = violation

    @classmethod
    def from_violation(cls, where: str, violation: Violation) -> CollectiveArgumentError:
        """The error for ``violation``, rendered as happening in ``where``."""
        return cls(violation.render(where), violation)


class ShapeError(SpmdValueError):
    """A tensor whose shape does not fit the call (a dim the axis size does not divide, ...)."""


class UnknownAxisError(SpmdValueError):
    """An axis name the current mesh does not have, or an object that is not an axis."""

    def __init__(self, message: str, known: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.known = tuple(known)


class NoCurrentMeshError(SpmdRuntimeError):
    """A mesh-axis name was used outside ``with spmd.set_current_mesh(mesh):``."""


class NotDifferentiableError(SpmdRuntimeError):
    """A gradient reached an operation that has none (``all_reduce(op="max")``)."""


class SpmdTypeCheckError(SpmdRuntimeError):
    """A run-time type check (``assert_type`` with checking on) found data that contradicts the type."""
