"""mypy's own type-mismatch errors that are no mistake under SPMD typing, and the one filter that drops them.

mypy compares an assigned, returned or passed value with its declaration
itself, and no plugin hook sees that comparison; it reports a mismatch the
plugin would accept.  One error filter, installed in mypy's error reporting
(:func:`spmd_mypy.compat.filter_mismatches`), drops two kinds:

* a plain value where an SPMD type is declared: a tensor of no known SPMD
  type is accepted like ``Any``, and so is a plain ``ProcessGroup`` where a
  group of known axes is (gradual typing, see :mod:`spmd_mypy.gradual`);
* two SPMD types that differ only on axes the line runs with one rank on,
  inside ``if axis_size("tp") == 1:`` and the like (see :mod:`spmd_mypy.size_one`).

Each error is read once (:func:`~spmd_mypy.compat.read_mismatch`) and
dropped when either rule selects it.
"""

from __future__ import annotations

from functools import partial
from typing import Final

from spmd_mypy import files
from spmd_mypy.compat import Mismatch, filter_mismatches, printed_axis_group, printed_spmd
from spmd_mypy.session import Session

__all__ = ["watch"]

# The plain classes as mypy prints them, by the SPMD-typed values they stand in for (see _spmd_kind).
_PLAIN_KIND: Final = {"Tensor": "tensor", "Parameter": "tensor", "ProcessGroup": "group"}


def watch(session: Session, api: object) -> None:
    """Have mypy drop, from now on, its errors that either rule of the module docstring selects.

    Called at every annotation the plugin reads (``api`` a type analyzer), so
    that the filter is in place before mypy checks a module with SPMD types,
    and at the calls that give SPMD types or size guards without one (group and
    size getters).  Once the filter is in place for mypy's errors, a call only
    finds it there.
    """
    session.mismatch_filter = filter_mismatches(api, session.mismatch_filter, partial(_dropped, session))


def _dropped(session: Session, mismatch: Mismatch) -> bool:
    return _plain_into_spmd(mismatch) or _fits_on_one_rank(session, mismatch)


def _plain_into_spmd(mismatch: Mismatch) -> bool:
    """Whether ``mismatch`` is a plain value (or ``None``) returned, assigned or passed where an SPMD type is declared.

    A plain value is a tensor where an SPMD-typed tensor is declared, or a
    ``ProcessGroup`` where a group of known axes (``AxisGroup``, the type of
    ``Annotated[ProcessGroup, Axis["tp"]]`` and of a group getter's result) is.
    An argument reaches mypy's check against the declared SPMD type only in a
    call that no hook relaxed (see :func:`spmd_mypy.boundaries.relax_function`):
    one through ``super()`` (``super().forward(x)``), for which mypy asks no
    plugin.
    """
    if mismatch.into not in ("return", "variable", "argument"):
        return False
    plain = {_PLAIN_KIND.get(item) for item in mismatch.value if item != "None"}
    declared = {_spmd_kind(item) for item in mismatch.declared if item != "None"}
    return (len(plain) == 1 and None not in plain and declared == plain
            and ("None" not in mismatch.value or "None" in mismatch.declared))


def _spmd_kind(printed: str) -> str | None:
    """``"tensor"`` or ``"group"``: which plain values an SPMD type printed as ``printed`` accepts."""
    if printed_spmd(printed) is not None:
        return "tensor"
    return "group" if printed_axis_group(printed) else None


def _fits_on_one_rank(session: Session, mismatch: Mismatch) -> bool:
    """Whether ``mismatch`` is between two SPMD tensor types that differ only on axes its line has one rank on."""
    if len(mismatch.value) != 1 or len(mismatch.declared) != 1:
        return False
    got, expected = printed_spmd(mismatch.value[0]), printed_spmd(mismatch.declared[0])
    if got is None or expected is None or not got[0] == expected[0] == "SpmdTensor":
        return False
    axes = files.size_one_axes_at(session, mismatch.path, mismatch.line)
    return bool(axes) and _outside(got[1], axes) == _outside(expected[1], axes)


def _outside(entries: frozenset[str], axes: frozenset[str]) -> frozenset[str]:
    """The ``axis:type`` ``entries`` on axes other than ``axes``."""
    return frozenset(entry for entry in entries if entry.partition(":")[0] not in axes)
