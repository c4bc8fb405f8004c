"""The classes of SPMD mistake, one error code each.

This module imports nothing of the rest of the package, so that mypy's plugin
entry point can register the codes when mypy loads it (mypy validates
``disable_error_code`` right after loading plugins) without paying for the
rule core on a warm run.
"""

from __future__ import annotations

import enum

__all__ = ["Code"]


class Code(enum.Enum):
    """One error code per class of mistake; the value is the mypy error code."""

    MIX = "spmd-mix"
    """Types that cannot meet in one op: I with R/V/P, or P with V."""
    PARTIAL = "spmd-partial"
    """A partial sum used where its pending sum would be miscounted."""
    COLLECTIVE = "spmd-collective"
    """A collective or cast called with a src/dst its input or table forbids."""
    AXIS = "spmd-axis"
    """A mesh axis that cannot be determined, or is unknown."""
    BOUNDARY = "spmd-boundary"
    """A value whose type differs from a declared parameter, return or variable."""
    BRANCH = "spmd-branch"
    """A variable whose type differs between branches, without a declaration."""
    INPLACE = "spmd-inplace"
    """An in-place op or ``out=`` that would change its target's type."""
    BACKWARD = "spmd-backward"
    """``loss.backward()`` on a loss whose gradient would be miscounted."""
    ANNOTATION = "spmd-annotation"
    """A malformed SPMD annotation."""
    GLOBAL = "spmd-global"
    """In global SPMD: a value or op whose result is not the single-device result partitioned."""

    @property
    def description(self) -> str:
        """One line describing the class of mistake (for docs and mypy)."""
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Code.MIX: "SPMD types that cannot meet in one operation",
    Code.PARTIAL: "a partial sum used where its pending sum would be miscounted",
    Code.COLLECTIVE: "collective or cast with a src/dst that does not fit",
    Code.AXIS: "mesh axis that cannot be determined or is not declared",
    Code.BOUNDARY: "SPMD type differs from the declared one",
    Code.BRANCH: "SPMD type of a variable differs between branches",
    Code.INPLACE: "in-place operation that would change its target's SPMD type",
    Code.BACKWARD: "backward() from a loss whose gradient would be miscounted",
    Code.ANNOTATION: "malformed SPMD annotation",
    Code.GLOBAL: "in global SPMD, a result that is not the single-device result partitioned",
}
