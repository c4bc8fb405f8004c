"""DTensor placements and the local SPMD types they stand for.

A DTensor is a global tensor: on each mesh dim it has a *placement*
(``Shard(i)``, ``Replicate()``, ``Partial()``) that says how the ranks' local
tensors make it up.  Code leaves DTensor with ``d.to_local(grad_placements=g)``
and enters it with ``DTensor.from_local(x, mesh, placements,
grad_placements=g)``; at both, the local tensor has a forward placement ``f``
(how its data relates to the global value) and a gradient placement ``g`` (how
DTensor reads the local gradient that comes back).  On one mesh axis the pair
``(f, g)`` is exactly one local SPMD type, since a local type too says both
what the data is and what its gradient is:

=================  ==================  ==========
forward ``f``      gradient ``g``      local type
=================  ==================  ==========
``Shard(i)``       ``Shard(i)``        ``S(i)``
``Replicate()``    ``Partial()``       ``R``
``Replicate()``    ``Replicate()``     ``I``
``Partial()``      ``Replicate()``     ``P``
``Reduced()``      ``Partial()``       ``R``
=================  ==================  ==========

Every other pair has no local type: its gradient does not match its data
(a shard's gradient is a shard of the same dim; a partial sum's gradient is
replicated, and read as ``Partial()`` it would be summed once more).

When ``grad_placements`` is left out, torch 2.13 takes ``g`` from ``f``
(``_normalize_placements_for_grad`` in ``torch/distributed/tensor/_api.py``):
``Partial()`` becomes ``Replicate()``, every other placement stays.  So
``to_local()`` of a replicated DTensor is ``I``: its gradient is taken to be the
same full value on every rank.  Code that uses the local tensor as ``R``
(combines it with per-rank data, so that each rank holds only its own
contribution to the gradient) needs ``grad_placements=[Partial()]`` there;
without it each rank keeps its own contribution and the others are lost.

``Reduced()`` is the placement proposed in
``seeds/reduced-placement-dtensor.md`` (not in torch 2.13): replicated data
whose gradient is ``Partial()``, that is ``R``; its default gradient
placement is ``Partial()``.

The ``tests/runtime/test_runtime_dtensor.py`` tests run DTensor's calls on
simulated ranks and compare forward and backward with ``spmd_types.redistribute``
between the types of this table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from spmd_types.typesystem.codes import Code
from spmd_types.typesystem.collectives import fix
from spmd_types.typesystem.join import fits
from spmd_types.typesystem.local_types import AxisType, I, LocalType, P, R, Shard
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Fix, Violation

__all__ = [
    "PLACEMENT_KINDS",
    "Placement",
    "Placements",
    "check_from_local",
    "default_grad_placement",
    "placement_type",
    "placements_for",
    "retarget_to_local",
    "spell_placements",
    "to_local_type",
]

PLACEMENT_KINDS: Final = ("Shard", "Replicate", "Partial", "Reduced")
"""The placements the checker knows, by class name (``Reduced`` is the seed's proposal)."""


@dataclass(frozen=True)
class Placement:
    """One DTensor placement: ``kind`` is a class name of :data:`PLACEMENT_KINDS`; ``dim`` is a shard's dim."""

    kind: str
    dim: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in PLACEMENT_KINDS:
            raise ValueError(f"unknown placement {self.kind!r}")
        if (self.kind == "Shard") != isinstance(self.dim, int):
            raise ValueError(f"{self.kind} placement with dim {self.dim!r}")

    @property
    def code(self) -> str:
        """As it is written in Python: ``Shard(0)``, ``Replicate()``."""
        return f"{self.kind}({self.dim if self.dim is not None else ''})"

    def __str__(self) -> str:
        return self.code

    @staticmethod
    def parse(code: str) -> Placement:
        """The placement :attr:`code` spells (``"Shard(0)"``, ``"Replicate()"``)."""
        kind, _, rest = code.partition("(")
        return Placement(kind, int(rest[:-1]) if rest[:-1] else None)


def spell_placements(placements: Sequence[Placement]) -> str:
    """A list of placements as it is written in Python: ``[Replicate(), Shard(0)]``."""
    return "[" + ", ".join(p.code for p in placements) + "]"


_REPLICATE: Final = Placement("Replicate")
_PARTIAL: Final = Placement("Partial")


def default_grad_placement(forward: Placement) -> Placement:
    """The gradient placement DTensor assumes when ``grad_placements`` is left out."""
    if forward.kind == "Partial":
        return _REPLICATE
    if forward.kind == "Reduced":
        return _PARTIAL
    return forward


def placement_type(forward: Placement, grad: Placement) -> AxisType | None:
    """The local type of a local tensor with forward placement ``forward`` and gradient placement ``grad``.

    ``None`` when no local type has that data and that gradient.
    """
    if forward.dim is not None:  # only a shard has a dim
        return Shard(forward.dim) if grad == forward else None
    if forward.kind in ("Replicate", "Reduced"):
        return R if grad.kind == "Partial" else I if grad.kind == "Replicate" else None
    return P if grad.kind == "Replicate" else None


def placements_for(t: AxisType) -> tuple[Placement, Placement] | None:
    """The (forward, gradient) placements of local type ``t``; ``None`` for ``V`` and constants."""
    if isinstance(t, Shard):
        return Placement("Shard", t.dim), Placement("Shard", t.dim)
    if t is R:
        return _REPLICATE, _PARTIAL
    if t is I:
        return _REPLICATE, _REPLICATE
    return (_PARTIAL, _REPLICATE) if t is P else None


@dataclass(frozen=True)
class Placements:
    """A DTensor's placements on a mesh whose dims are named: ``dims[k]`` has ``placements[k]``.

    ``str`` gives ``"dp:Replicate(), tp:Shard(0)"``, which :meth:`parse` reads back.
    """

    dims: tuple[str, ...]
    placements: tuple[Placement, ...]

    def __post_init__(self) -> None:
        if len(self.dims) != len(self.placements):
            raise ValueError(f"{len(self.placements)} placements for the mesh dims {self.dims}")

    def __str__(self) -> str:
        return ", ".join(f"{dim}:{p.code}" for dim, p in zip(self.dims, self.placements))

    @staticmethod
    def parse(text: str) -> Placements:
        dims, placements = [], []
        for item in text.split(", "):
            dim, _, code = item.partition(":")
            dims.append(dim)
            placements.append(Placement.parse(code))
        return Placements(tuple(dims), tuple(placements))

    def grads(self, given: Sequence[Placement] | None) -> tuple[Placement, ...]:
        """The gradient placements: ``given``, or DTensor's defaults."""
        return tuple(given) if given is not None else tuple(map(default_grad_placement, self.placements))


Respell = Callable[[tuple[Placement, ...]], str]
"""Writes the checked call with other gradient placements, as a fix template (``{x}``: the tensor)."""


def _no_type(forward: Placement, grad: Placement, given: bool) -> str:
    if forward.kind == "Shard":
        why = f"a shard's gradient is a shard of the same dim, {forward.code}"
    elif forward.kind == "Partial":
        why = "a partial sum's gradient is the same on every rank: read as Partial() it would be summed again"
    else:
        why = "replicated data has a gradient that is Partial() (R) or Replicate() (I)"
    how = "gradient placement" if given else "default gradient placement"
    return f"placement {forward.code} with {how} {grad.code} is no local type: {why}"


def _grad_fixes(forward: Placement, grads: tuple[Placement, ...], k: int, respell: Respell,
                types: Sequence[AxisType]) -> tuple[Fix, ...]:
    """The call with the gradient placement on mesh dim ``k`` that makes it each of ``types``."""
    out = []
    for t in types:
        if not isinstance(t, (LocalType, Shard)):
            continue
        found = placements_for(t)
        if found is None or found[0] != forward:
            continue
        new = grads[:k] + (found[1],) + grads[k + 1:]
        out.append(Fix(respell(new), f"no-op forward, the local gradient read as {_reading(found[1])} in backward"))
    return tuple(out)


def _reading(grad: Placement) -> str:
    return {"Partial": "a pending sum over the axis", "Replicate": "the full gradient on every rank"}.get(
        grad.kind, f"a shard of dim {grad.dim}")


def to_local_type(
    placements: Placements, given: Sequence[Placement] | None, respell: Respell
) -> tuple[SpmdType, tuple[Violation, ...]]:
    """The local type of ``d.to_local(grad_placements=given)`` for a DTensor ``d`` with ``placements``.

    An axis whose pair has no local type is a violation (fixed by the
    gradient placement that fits the data) and unknown in the result.
    """
    grads = placements.grads(given)
    axes: dict[str, AxisType] = {}
    violations = []
    for k, (axis, forward, grad) in enumerate(zip(placements.dims, placements.placements, grads)):
        t = placement_type(forward, grad)
        if t is not None:
            axes[axis] = t
            continue
        wanted = (R, I) if forward.kind == "Replicate" else (placement_type(forward, default_grad_placement(forward)),)
        fixes = _grad_fixes(forward, grads, k, respell, [w for w in wanted if w is not None])
        violations.append(Violation(Code.COLLECTIVE, axis, _no_type(forward, grad, given is not None),
                                    (forward.code, grad.code), (), fixes))
    return SpmdType(axes), tuple(violations)


def check_from_local(
    have: SpmdType, placements: Placements, given: Sequence[Placement] | None, respell: Respell | None
) -> tuple[Violation, ...]:
    """``DTensor.from_local(x, mesh, placements, grad_placements=given)`` with ``x`` of type ``have``.

    On each mesh dim the pair of placements must be ``x``'s type there.  A
    mismatch is fixed by the gradient placement that makes the pair ``x``'s
    type, when the forward placement is already right (``R`` data declared
    ``Replicate()`` needs ``Partial()`` gradients), or else by the cast of
    ``x`` to the type the placements stand for.  ``respell`` is ``None``
    where the gradient placements cannot be given (``local_map``'s outputs).
    """
    grads = placements.grads(given)
    violations = []
    for k, (axis, forward, grad) in enumerate(zip(placements.dims, placements.placements, grads)):
        t, want = have.get(axis), placement_type(forward, grad)
        if t is None:
            continue
        if want is None:
            fixes = _grad_fixes(forward, grads, k, respell, (t,)) if respell is not None else ()
            violations.append(Violation(Code.COLLECTIVE, axis, _no_type(forward, grad, given is not None),
                                        (forward.code, grad.code), (), fixes))
            continue
        if fits(t, want):
            continue
        how = "gradient placement" if given is not None else "default gradient placement"
        reason = (f"the local tensor is {t.code}, but placement {forward.code} with {how} {grad.code} "
                  f"stands for {want.code}")
        fixes = _grad_fixes(forward, grads, k, respell, (t,)) if respell is not None else ()
        cast = fix("redistribute", t, want, axis) if isinstance(t, (LocalType, Shard)) and isinstance(
            want, (LocalType, Shard)) else None
        violations.append(Violation(Code.BOUNDARY, axis, reason, (t.code, want.code), (),
                                    fixes + ((cast,) if cast is not None else ())))
    return tuple(violations)


def retarget_to_local(
    violation: Violation, placements: Placements, given: Sequence[Placement] | None, want: AxisType | None,
    respell: Respell,
) -> Violation:
    """``violation`` of ``to_local``'s result against a declared ``want``, fixed at the call where it can be.

    When the forward placement on the violation's axis already holds ``want``'s
    data (``Replicate()`` where ``R`` is declared), the fix is the gradient
    placement that makes the pair ``want``, as a fix of operand 0 (the
    DTensor), replacing the casts after the call.
    """
    if violation.axis not in placements.dims or want is None:
        return violation
    k = placements.dims.index(violation.axis)
    fixes = _grad_fixes(placements.placements[k], placements.grads(given), k, respell, (want,))
    return replace(violation, fixes=tuple(replace(f, operands=(0,)) for f in fixes)) if fixes else violation
