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

The classes define no ``__init__``: each is constructed from its message
alone, and the extra attributes are set afterwards by the factory functions
below.  ``torch.compile`` (Dynamo) cannot trace a custom exception
constructor that calls ``super().__init__``; plain classes it traces, so
under ``fullgraph=True`` the compile error quotes the message, and without
``fullgraph`` eager fallback raises the error itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from spmd_types.typesystem import Violation

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

    violation: Violation | None = None

    @classmethod
    def from_violation(cls, where: str, violation: Violation) -> CollectiveArgumentError:
        """The error for ``violation``, rendered as happening in ``where``."""
        error = cls(violation.render(where))
        error.violation = violation
        return error


class ShapeError(SpmdValueError):
    """A tensor whose shape does not fit the call (a dim the axis size does not divide, ...)."""


class UnknownAxisError(SpmdValueError):
    """An axis name the current mesh does not have, or an object that is not an axis.

    :attr:`known` lists the current mesh's axis names when a name was not found.
    """

    known: tuple[str, ...] = ()

    @classmethod
    def with_known(cls, message: str, known: Iterable[str]) -> UnknownAxisError:
        """The error with :attr:`known` set to the axis names that do exist."""
        error = cls(message)
        error.known = tuple(known)
        return error


class NoCurrentMeshError(SpmdRuntimeError):
    """A mesh-axis name was used outside ``with spmd.set_current_mesh(mesh):``."""


class NotDifferentiableError(SpmdRuntimeError):
    """A gradient reached an operation that has none (``all_reduce(op="max")``)."""


class SpmdTypeCheckError(SpmdRuntimeError):
    """A run-time type check found data, or a use of a value, that contradicts the SPMD types.

    Raised by ``assert_type`` with data checks on (``set_runtime_checks``),
    and under ``runtime_checking()`` wherever the tracked types break a rule.
    For the latter, :attr:`violation` is the rule core's structured violation
    and :attr:`code` its error code (``"spmd-mix"``, ...), the code the mypy
    plugin reports for the same mistake; the message is the plugin's,
    followed by the code in brackets.
    """

    violation: Violation | None = None

    @property
    def code(self) -> str | None:
        """The error code of :attr:`violation` (``"spmd-partial"``, ...), or ``None`` for a data check."""
        return self.violation.code.value if self.violation is not None else None

    @classmethod
    def from_violation(
        cls, violation: Violation, where: str, operand_names: tuple[str, ...] = (), value: str = "x"
    ) -> SpmdTypeCheckError:
        """The error for ``violation`` at ``where`` (see :meth:`Violation.render`), its code appended."""
        error = cls(f"{violation.render(where, operand_names, value)}  [{violation.code.value}]")
        error.violation = violation
        return error
