"""DTensor's ``from_local``, ``redistribute`` and ``to_local`` compute what the placement table says they do.

The checker gives the local tensor at ``DTensor.from_local(x, mesh, f,
grad_placements=g)`` and ``d.to_local(grad_placements=g)`` the local type of
the pair ``(f, g)`` on each mesh dim (:func:`placement_type`).  If that is
right, then on the same per-rank inputs and cotangents::

    DTensor.from_local(x, mesh, f_in, grad_placements=g_in).redistribute(mesh, f_out).to_local(grad_placements=g_out)

computes the same outputs and input gradients as
``spmd_types.redistribute(x, "tp", src=T_in, dst=T_out)``, for the types
``T_in``, ``T_out`` of the two pairs.  Here it runs on every pair of types that
placements stand for, on 8 simulated ranks (a 2x4 mesh, ``dp`` replicated),
compared by what each value denotes: a partial sum by its sum over the axis,
anything else rank by rank.

The pitfalls the checker reports, run against a single-device gradient:
``to_local()`` of a replicated DTensor (``I``) used as ``R``; ``Partial()``
gradients of a local tensor used as ``I``; an ``R`` tensor passed to
``from_local`` as ``Replicate()``; ``Partial()`` forward with ``Partial()``
gradient.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types.typesystem import (  # noqa: E402
    AxisType,
    I,
    P,
    Placement,
    R,
    S,
    default_grad_placement,
    gradient_type,
    placement_type,
    placements_for,
)

F64 = torch.float64
TP = 4  # the size of "tp" on the 2x4 mesh
TYPES: list[AxisType] = [R, I, P, S(0), S(1)]


def _torch(p: Placement) -> Any:
    return {"Replicate": Replicate(), "Partial": Partial()}.get(p.kind) or Shard(p.dim)


def _on_mesh(p: Placement) -> tuple[Any, Any]:
    """Placements on ("dp", "tp"): replicated on dp (gradient replicated too: I), ``p`` on tp."""
    return Replicate(), _torch(p)


def _per_rank(mode: Any, kind: AxisType, shape: tuple[int, ...], seed: int) -> Any:
    """A tensor of type ``kind`` on tp (and I on dp): the same on every rank for R and I, random otherwise."""
    if kind in (R, I):
        same = torch.randn(shape, dtype=F64, generator=torch.Generator().manual_seed(seed))
        return mode.rank_map(lambda r: same.clone())
    return mode.rank_map(lambda r: torch.randn(shape, dtype=F64, generator=torch.Generator().manual_seed(seed + r % TP)))


def _denotation(value: Any, kind: AxisType) -> list[torch.Tensor]:
    """What a per-rank value of type ``kind`` on tp means: its sum over tp for P, else each rank's tensor."""
    ranks = [value._local_tensors[r] for r in range(8)]
    if kind is P:
        return [sum(ranks[d * TP:(d + 1) * TP], torch.zeros_like(ranks[0])) for d in range(2)]
    return ranks


def _same(a: Any, b: Any, kind: AxisType, what: str) -> None:
    for k, (x, y) in enumerate(zip(_denotation(a, kind), _denotation(b, kind))):
        assert torch.allclose(x, y), f"{what} differs ({kind.code}, piece {k})"


PAIRS = [(a, b) for a in TYPES for b in TYPES if not (b is P and a is not P)]  # DTensor never redistributes to Partial


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=[f"{a.code}->{b.code}" for a, b in PAIRS])
def test_dtensor_round_trip_is_our_redistribute(ranks8: Any, src: AxisType, dst: AxisType) -> None:
    f_in, g_in = placements_for(src)  # type: ignore[misc]
    f_out, g_out = placements_for(dst)  # type: ignore[misc]
    assert placement_type(f_in, g_in) == src and placement_type(f_out, g_out) == dst
    mode, mesh = ranks8.mode, ranks8.mesh
    x = _per_rank(mode, src, (8, 8), seed=1)
    ours_in, theirs_in = x.clone().requires_grad_(), x.clone().requires_grad_()

    ours = spmd.redistribute(ours_in, "tp", src=src, dst=dst)
    d = DTensor.from_local(theirs_in, mesh, _on_mesh(f_in), grad_placements=_on_mesh(g_in))
    theirs = d.redistribute(mesh, _on_mesh(f_out)).to_local(grad_placements=_on_mesh(g_out))
    _same(ours, theirs, dst, "forward")

    cotangent = _per_rank(mode, gradient_type(dst), tuple(ours.shape), seed=100)
    ours.backward(cotangent)
    theirs.backward(cotangent)
    _same(ours_in.grad, theirs_in.grad, gradient_type(src), "input gradient")


def test_default_gradient_placements_are_torchs() -> None:
    """The defaults of the table are what torch 2.13's ``_normalize_placements_for_grad`` does."""
    from torch.distributed.tensor._api import _normalize_placements_for_grad

    for p in (Placement("Shard", 0), Placement("Shard", 1), Placement("Replicate"), Placement("Partial")):
        assert _normalize_placements_for_grad((_torch(p),)) == (_torch(default_grad_placement(p)),)


# -- the pitfalls, against a single-device gradient ------------------------------------------------------------

W = torch.arange(32 * 3, dtype=F64).reshape(32, 3) / 50
DATA = torch.randn(TP, 3, dtype=F64, generator=torch.Generator().manual_seed(7))


def _local(value: Any, rank: int) -> torch.Tensor:
    return value._local_tensors[rank]


def _gathered_weight_grad(ranks8: Any, grad_placements: Any, per_rank_data: bool) -> torch.Tensor:
    """``W`` sharded on tp, gathered by DTensor and taken out with ``to_local``; the gradient of ``W`` (rank order).

    With ``per_rank_data`` each rank multiplies the full weight by its own data
    and the losses add up over tp (the local weight is used as ``R``);
    otherwise every rank computes the same loss from the weight alone, counted
    once (the local weight is used as ``I``).
    """
    mode, mesh = ranks8.mode, ranks8.mesh
    shard = mode.rank_map(lambda r: W.chunk(TP)[r % TP].clone()).requires_grad_()
    full = DTensor.from_local(shard, mesh, (Replicate(), Shard(0))).redistribute(mesh, (Replicate(), Replicate()))
    local = full.to_local(grad_placements=grad_placements)
    if per_rank_data:
        data = mode.rank_map(lambda r: DATA[r % TP].clone())
        (local @ data).sum().backward()
    else:
        (local**2).sum().backward()
    return torch.cat([_local(shard.grad, r) for r in range(TP)])


@pytest.mark.parametrize("used_as", ["R", "I"])
def test_to_local_gradient_placement_must_match_the_use(ranks8: Any, used_as: str) -> None:
    """``to_local()`` of a replicated DTensor is ``I``: right when used as ``I``, wrong when used as ``R``."""
    w = W.clone().requires_grad_()
    if used_as == "R":
        sum((w @ DATA[k]).sum() for k in range(TP)).backward()  # the tp ranks' losses add up
    else:
        (w**2).sum().backward()
    partial = _gathered_weight_grad(ranks8, (Replicate(), Partial()), per_rank_data=used_as == "R")
    default = _gathered_weight_grad(ranks8, None, per_rank_data=used_as == "R")
    right, wrong = (partial, default) if used_as == "R" else (default, partial)
    assert torch.allclose(right, w.grad)
    assert not torch.allclose(wrong, w.grad)


@pytest.mark.parametrize("grad", ["default", "Partial"])
def test_from_local_of_a_replicated_tensor_needs_partial_gradients(ranks8: Any, grad: str) -> None:
    """An ``R`` tensor passed as ``Replicate()``: its gradient must be read as ``Partial()``."""
    mode, mesh = ranks8.mode, ranks8.mesh
    w_ref = W.clone().requires_grad_()
    (w_ref**2).sum().backward()
    w = mode.rank_map(lambda r: W.clone()).requires_grad_()
    x = spmd.reinterpret(w, "tp", src=I, dst=R)  # the backward all-reduces a partial gradient
    grads = (Replicate(), Partial()) if grad == "Partial" else None
    d = DTensor.from_local(x, mesh, (Replicate(), Replicate()), grad_placements=grads)
    (d**2).sum().backward()
    matches = torch.allclose(_local(w.grad, 0), w_ref.grad)
    assert matches == (grad == "Partial")


@pytest.mark.parametrize("grad", ["default", "Partial"])
def test_partial_forward_with_partial_gradient_counts_twice(ranks8: Any, grad: str) -> None:
    """``to_local(grad_placements=[Partial()])`` of a partial DTensor sums a replicated gradient once more."""
    mode, mesh = ranks8.mode, ranks8.mesh
    w_ref = W.clone().requires_grad_()
    (w_ref**2).sum().backward()
    pieces = mode.rank_map(lambda r: W.clone() if r % TP == 0 else torch.zeros_like(W)).requires_grad_()
    d = DTensor.from_local(pieces, mesh, (Replicate(), Partial()))
    grads = (Replicate(), Partial()) if grad == "Partial" else None
    y = spmd.all_reduce(d.to_local(grad_placements=grads), "tp", src=P, dst=I)
    (y**2).sum().backward()
    matches = torch.allclose(_local(pieces.grad, 0), w_ref.grad)
    assert matches == (grad == "default")
