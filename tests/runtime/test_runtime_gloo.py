"""The collectives on real processes: gloo, started with fork, worlds of 2 and 4.

For each call every table case runs on every rank (each with its own input,
generated from a seed so that every process knows every rank's data); the
ranks then exchange inputs, outputs, cotangents and gradients through the
default group and each checks the whole axis exactly as the simulated tests
do (per-rank semantics, adjoint identity, single-device reference).
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from runtime_oracle import Trial, axis_groups, check, prepare, table_cases  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types.typesystem import CALLS  # noqa: E402

CASES = table_cases()


def _everyone(t: torch.Tensor, world: int) -> dict[int, torch.Tensor]:
    """Every rank's ``t`` (same shape everywhere), with a raw c10d all-gather on the world."""
    flat = t.reshape(1, -1).contiguous()
    out = flat.new_empty((world, flat.shape[1]))
    dist.all_gather_into_tensor(out, flat)
    return {r: out[r].view(t.shape) for r in range(world)}


def _run_call(rank: int, world: int, mesh: Any, call: str) -> int:
    axes = ["dp", "tp"]  # on 2 ranks "dp" has size 1: every call must handle a trivial axis too
    done = 0
    for axis in axes:
        groups = axis_groups(mesh, axis)
        for case in (c for c in CASES if c.call == call):
            trial: Trial = prepare(case, groups)
            x = trial.xs[rank].clone().requires_grad_()
            with spmd.set_current_mesh(mesh):
                y = case.apply(x, axis, trial.n)
                y.backward(trial.gs[rank])
            grad = x.grad if x.grad is not None else torch.zeros_like(x)
            trial.ys = _everyone(y.detach(), world)
            trial.grads = _everyone(grad, world)
            check(trial)
            done += 1
    return done


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("call", list(CALLS))
def test_call_on_gloo(gloo, call: str, world: int) -> None:
    counts = gloo(world, _run_call, call)
    assert counts[0] > 0 and len(set(counts)) == 1


def _uneven_and_stats(rank: int, world: int, mesh: Any) -> None:
    from spmd_types import I, P, R, S, V

    n = world
    sizes = [k + 1 for k in range(n)]
    with spmd.set_current_mesh(mesh):
        axis = "dp" if mesh.size(0) == n else "tp"
        me = spmd.axis_index(axis)
        x = torch.full((sizes[me], 3), float(me + 1), dtype=torch.float64, requires_grad=True)
        y = spmd.all_gather(x, axis, src=S(0), dst=R, split_sizes=sizes)
        want = torch.cat([torch.full((sizes[k], 3), float(k + 1), dtype=torch.float64) for k in range(n)])
        assert torch.equal(y, want)
        # R output: the cotangent is P; reduce-scatter it back with the same sizes
        y.backward(torch.ones_like(y))
        assert torch.equal(x.grad, torch.full_like(x, float(n)))
        z = spmd.reduce_scatter(torch.ones(sum(sizes), 2), axis, src=P, dst=S(0), split_sizes=sizes)
        assert torch.equal(z, torch.full((sizes[me], 2), float(n)))
        m = spmd.all_reduce(torch.tensor([float(me)]), axis, src=V, dst=I, op="max")
        assert m.item() == n - 1


def test_uneven_and_max_on_gloo(gloo) -> None:
    gloo(2, _uneven_and_stats)
