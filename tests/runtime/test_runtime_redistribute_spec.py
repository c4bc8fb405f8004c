"""``redistribute_spec`` on simulated ranks: every pair of specs of a 2-D tensor, on 2x2 and 2x4 meshes.

For every pair of the rule core's :func:`all_specs` (30 specs per mesh: each
axis replicated, partial or sharding a dim, both axes on one dim in both
orders, strided entries), with a random global tensor ``X`` (float64):

1. Forward, against the denotation: each rank's input is ``X`` restricted to
   the indices ``src`` gives it (:func:`local_indices`), split into random
   summands over ``src``'s partial axes; each rank's output restricted the
   same way by ``dst`` must be ``X`` (summed over ``dst``'s partial axes).
2. Backward, against the single-device reference: the global function is the
   identity, so for a random global cotangent ``G`` laid out as the gradient
   spec of ``dst`` (:func:`dual`), the input's gradient must be ``G`` laid
   out as the gradient spec of ``src`` (a replicated gradient equal on every
   rank, a partial one summing to ``G``).
3. The adjoint identity: ``sum_r <grad_r, x_r> = sum_r <g_r, y_r>`` over all
   ranks (no spec has an invariant axis, so every rank's pairing counts).
4. The collectives that run, forward and backward, are exactly the plan's
   and their backwards, in order (a recording backend).

On gloo (4 processes, 2x2) a few pairs run on real process groups; and under
runtime checking a plan raises nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import PartitionSpec as PS  # noqa: E402
from spmd_types.typesystem import all_specs, dual, local_indices, per_axis_types, plan_redistribute  # noqa: E402
from tests.runtime.recording import Recorder, expected_calls  # noqa: E402

F64 = torch.float64
SHAPE = (8, 16)
AXES = {4: (("dp", 2), ("tp", 2)), 8: (("dp", 2), ("tp", 4))}
# The same kinds of spec on both meshes, in the same order; the test ids name the 2x4 ones (on 2x2 a
# strided entry's block count is 2 where it is 4 here).
SPECS = all_specs(AXES[8], 2)
IDS = [s.describe(SHAPE) for s in SPECS]


def _coords(axes: tuple[tuple[str, int], ...], rank: int) -> dict[str, int]:
    """The mesh coordinates of a global rank (row-major over the axes, as init_device_mesh lays them out)."""
    out: dict[str, int] = {}
    for name, size in reversed(axes):
        rank, out[name] = divmod(rank, size)
    return out


def _piece(t: torch.Tensor, indices: tuple[tuple[int, ...], ...]) -> torch.Tensor:
    return t[torch.tensor(indices[0])][:, torch.tensor(indices[1])]


def _lay_out(value: torch.Tensor, spec: PS, axes: Any, world: int, seed: int) -> dict[int, torch.Tensor]:
    """Per-rank tensors of ``spec`` denoting ``value``: random summands over the partial axes."""
    gen = torch.Generator().manual_seed(seed)
    out: dict[int, torch.Tensor] = {}
    for rank in range(world):
        coords = _coords(axes, rank)
        piece = _piece(value, local_indices(spec, axes, value.shape, coords))
        if any(coords[a] for a in spec.partial):
            out[rank] = torch.randn(piece.shape, generator=gen, dtype=F64)
        else:
            out[rank] = piece.clone()
    for rank in range(world):  # the first summand of each group makes the group add up
        coords = _coords(axes, rank)
        if spec.partial and not any(coords[a] for a in spec.partial):
            others = [r for r in range(world) if r != rank and all(
                _coords(axes, r)[a] == v for a, v in coords.items() if a not in spec.partial)]
            out[rank] = out[rank] - sum((out[r] for r in others), torch.zeros_like(out[rank]))
    return out


def _read(values: dict[int, torch.Tensor], spec: PS, axes: Any, world: int, want: torch.Tensor, what: str) -> None:
    """Assert that per-rank ``values`` of ``spec`` denote ``want`` (summing over the partial axes)."""
    groups: dict[tuple[tuple[str, int], ...], list[int]] = {}
    for rank in range(world):
        coords = _coords(axes, rank)
        groups.setdefault(tuple((a, v) for a, v in coords.items() if a not in spec.partial), []).append(rank)
    for members in groups.values():
        total = sum((values[r] for r in members), torch.zeros_like(values[members[0]]))
        expected = _piece(want, local_indices(spec, axes, want.shape, _coords(axes, members[0])))
        assert total.shape == expected.shape and torch.allclose(total, expected, rtol=1e-10, atol=1e-10), (
            f"{what}: ranks {members} hold {total}, the spec's piece of the global value is {expected}"
        )


@pytest.mark.parametrize("src_index", range(len(SPECS)), ids=IDS)
def test_every_destination_from_one_source(sim, src_index: int) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    world, axes = sim.world, AXES[sim.world]
    specs = all_specs(axes, 2)
    src = specs[src_index]
    gen = torch.Generator().manual_seed(src_index)
    value = torch.randn(SHAPE, generator=gen, dtype=F64)
    cotangent = torch.randn(SHAPE, generator=gen, dtype=F64)
    xs = _lay_out(value, src, axes, world, seed=1)
    for dst_index, dst in enumerate(specs):
        plan = plan_redistribute(axes, SHAPE, src, dst)
        what = f"{src.describe(SHAPE)} -> {dst.describe(SHAPE)} on {dict(axes)}, plan:\n{plan.describe()}\n"
        gs = _lay_out(cotangent, dual(dst, axes), axes, world, seed=2 + dst_index)
        recorder = Recorder(dist)
        with LocalTensorMode(world) as mode, spmd.set_current_mesh(sim.mesh), spmd.use_dist(recorder):
            x = mode.rank_map(lambda r: xs[r].clone()).requires_grad_()
            y = spmd.redistribute_spec(x, src, dst)
            forward = recorder.take()
            y.backward(mode.rank_map(lambda r, gs=gs: gs[r].clone()))
            backward = recorder.take()
            ys = {r: t.detach() for r, t in y._local_tensors.items()}
            grads = {r: t.detach() for r, t in x.grad._local_tensors.items()}
        _read(ys, dst, axes, world, value, what + "forward")
        _read(grads, dual(src, axes), axes, world, cotangent, what + "gradient")
        lhs = sum(float((grads[r] * xs[r]).sum()) for r in range(world))
        rhs = sum(float((gs[r] * ys[r]).sum()) for r in range(world))
        assert abs(lhs - rhs) <= 1e-9 * (1 + abs(lhs)), f"{what}adjoint identity: {lhs} != {rhs}"
        calls = [expected_calls(step.call, step.src, step.dst) for step in plan.steps]
        assert forward == [name for fwd, _ in calls for name in fwd], f"{what}forward ran {forward}"
        assert backward == [name for _, back in reversed(calls) for name in back], f"{what}backward ran {backward}"


# -- real process groups ---------------------------------------------------------------------

GLOO_PAIRS = [
    (PS(("dp", "tp"), None), PS(("tp", "dp"), None)),
    (PS(None, None, partial=("dp", "tp")), PS(("tp", "dp"), None)),
    (PS((2, "dp"), "tp"), PS(None, None)),
    (PS("dp", "tp", partial=()), PS("tp", "dp")),
    (PS(("tp", "dp"), None), PS(None, "dp", partial="tp")),
]


def _on_rank(rank: int, world: int, mesh: Any, pairs: list[tuple[PS, PS]]) -> list[tuple[Any, Any]]:
    """Each pair's output and input gradient on this rank (gloo), for the parent to check."""
    axes = AXES[world]
    out = []
    with spmd.set_current_mesh(mesh):
        for k, (src, dst) in enumerate(pairs):
            value = torch.randn(SHAPE, generator=torch.Generator().manual_seed(k), dtype=F64)
            cotangent = torch.randn(SHAPE, generator=torch.Generator().manual_seed(100 + k), dtype=F64)
            x = _lay_out(value, src, axes, world, seed=1)[rank].requires_grad_()
            y = spmd.redistribute_spec(x, src, dst)
            y.backward(_lay_out(cotangent, dual(dst, axes), axes, world, seed=2)[rank])
            out.append((y.detach().tolist(), x.grad.tolist()))  # plain lists survive the worker's exit
    return out


def test_pairs_on_gloo(gloo) -> None:
    world, axes = 4, AXES[4]
    results = gloo(world, _on_rank, GLOO_PAIRS)
    for k, (src, dst) in enumerate(GLOO_PAIRS):
        value = torch.randn(SHAPE, generator=torch.Generator().manual_seed(k), dtype=F64)
        cotangent = torch.randn(SHAPE, generator=torch.Generator().manual_seed(100 + k), dtype=F64)
        what = f"gloo: {src.describe(SHAPE)} -> {dst.describe(SHAPE)}"
        ys = {r: torch.tensor(results[r][k][0], dtype=F64) for r in range(world)}
        grads = {r: torch.tensor(results[r][k][1], dtype=F64) for r in range(world)}
        _read(ys, dst, axes, world, value, what)
        _read(grads, dual(src, axes), axes, world, cotangent, what)


# -- runtime checking and errors -------------------------------------------------------------


def _local_shape(spec: PS, axes: Any) -> tuple[int, ...]:
    sizes = dict(axes)
    cuts = [[sizes[f] for f in spec.factors(dim) if isinstance(f, str)] for dim in range(len(SHAPE))]
    return tuple(length // int(torch.tensor(cut or [1]).prod()) for length, cut in zip(SHAPE, cuts))


def test_a_plan_passes_runtime_checking(ranks8) -> None:
    """Each step's src is the type its axes have: runtime checking follows the plans without an error."""
    pairs = [(PS(None, None, partial=("dp", "tp")), PS(("tp", "dp"), None)),
             (PS(("tp", "dp"), None), PS(None, "dp", partial="tp")),
             (PS((4, "dp"), "tp"), PS("tp", "dp"))]
    for src, dst in pairs:
        markers = [spmd.S[a, d] for a, d in src.shard_dims().items()]
        markers += [spmd.P[a] for a in src.partial]
        markers += [spmd.R[a] for a in ("dp", "tp") if a not in src.shard_dims() and a not in src.partial]
        with spmd.runtime_checking() as tracker:
            x = ranks8.typed(*markers, shape=_local_shape(src, AXES[8]))
            y = spmd.redistribute_spec(x, src, dst)
        assert tracker.errors == []
        assert tracker.type_of(y) == per_axis_types(dst, AXES[8])
        assert tuple(y.shape) == _local_shape(dst, AXES[8])


def test_errors(ranks8) -> None:
    x = ranks8.typed(spmd.R["dp", "tp"], shape=SHAPE)
    with pytest.raises(spmd.CollectiveArgumentError, match="src must be a PartitionSpec"):
        spmd.redistribute_spec(x, ("dp", None), PS(None, None))  # type: ignore[arg-type]
    with pytest.raises(spmd.CollectiveArgumentError, match="cannot be cut into 32 equal blocks"):
        spmd.redistribute_spec(x, PS(None, None), PS(None, (8, "tp")))
    with pytest.raises(spmd.CollectiveArgumentError, match="does not have"):
        spmd.redistribute_spec(x, PS("ep", None), PS(None, None))


def test_needs_a_mesh() -> None:
    with pytest.raises(spmd.NoCurrentMeshError):
        spmd.redistribute_spec(torch.zeros(2, 2), PS(None, None), PS(None, None))
