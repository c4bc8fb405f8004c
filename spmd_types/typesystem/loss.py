"""The rule for ``loss.backward()`` without an explicit gradient.

Autograd seeds the backward pass with a gradient of 1 on every rank, which is
a gradient of type ``R``.  That is right only for a loss whose gradient type
is ``R``: a loss of type ``P`` (the ranks' values sum to the loss) or ``I``
(one value, its gradient kept invariant).  An ``R`` loss would have its
gradient counted once per rank; a ``V`` loss is a different number on every
rank, so the gradient of *which* loss is meant must be said explicitly.
"""

from __future__ import annotations

from spmd_types.typesystem.collectives import fix
from spmd_types.typesystem.local_types import I, P, R, V, is_varying
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Code, Violation

__all__ = ["check_backward"]


def check_backward(loss: SpmdType) -> tuple[Violation, ...]:
    """Violations of the backward rule for a loss of type ``loss``, one per axis."""
    violations = []
    for axis, kind in loss.items():
        if kind is R:
            reason = "the loss is R, so every rank seeds a gradient of 1 and it is counted once per rank"
            fixes = (fix("convert", R, P, axis), fix("convert", R, I, axis))
        elif is_varying(kind):
            reason = "the loss is V, a different value on every rank; say how the ranks' losses combine"
            fixes = (fix("reinterpret", V, P, axis), fix("all_reduce", V, I, axis))
        else:
            continue
        offered = tuple(f for f in fixes if f is not None)
        violations.append(Violation(Code.BACKWARD, axis, reason, (kind.code,), (0,), offered))
    return tuple(violations)
