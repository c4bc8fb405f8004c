"""The rule for ``loss.backward()``, with or without an explicit gradient.

Autograd seeds the backward pass with a gradient of 1 on every rank, which is
a gradient of type ``R``.  That is right only for a loss whose gradient type
is ``R``: a loss of type ``P`` (the ranks' values sum to the loss) or ``I``
(one value, its gradient kept invariant).  An ``R`` loss would have its
gradient counted once per rank; a ``V`` loss is a different number on every
rank, so the gradient of *which* loss is meant must be said explicitly.
"""

from __future__ import annotations

from typing import Final

from spmd_types.typesystem.collectives import fix
from spmd_types.typesystem.local_types import (
    Constant,
    I,
    LocalType,
    P,
    R,
    Shard,
    V,
    gradient_type,
    is_varying,
    local_type,
)
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Code, Violation

__all__ = ["AUTOGRAD_FUNCTIONS", "check_backward"]

AUTOGRAD_FUNCTIONS: Final = {
    "torch.autograd.backward": ("tensors", "grad_tensors"),
    "torch.autograd.grad": ("outputs", "grad_outputs"),
}
"""torch's functions that start a backward pass: the parameter naming what is differentiated, and its seeds'."""


def check_backward(loss: SpmdType, seed: SpmdType | None = None) -> tuple[Violation, ...]:
    """Violations of the backward rule for a loss of type ``loss``, one per axis.

    ``seed`` is the type of an explicit gradient (``loss.backward(gradient=g)``,
    ``torch.autograd.grad(loss, xs, grad_outputs=g)``); ``None`` when autograd
    seeds ones.  A constant seed is the same on every rank, like the ones.  A
    typed seed must be the gradient type of the loss (``P`` for ``R``, ``R`` for
    ``P``, ``I`` for ``I``, ``V`` for ``V``); on an axis where it is unknown
    nothing is checked.
    """
    violations = []
    for axis, kind in loss.items():
        given = seed.get(axis) if seed is not None else None
        if seed is not None and isinstance(given, LocalType | Shard) and isinstance(kind, LocalType | Shard):
            wanted = gradient_type(kind)
            if local_type(given) is not local_type(wanted):
                reason = (f"the gradient given is {given.code}, but a loss of type {kind.code} needs a gradient "
                          f"of type {local_type(wanted).code}")
                violations.append(Violation(Code.BACKWARD, axis, reason, (kind.code, given.code), (0,)))
            continue
        if seed is not None and not isinstance(given, Constant):
            continue  # an unknown seed
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
