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

import spmd_types as spmd  # noqa: E402
from spmd_types.typesystem import CALLS  # noqa: E402
from tests.runtime.runtime_oracle import Trial, axis_groups, check, prepare, table_cases  # noqa: E402

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


def _complex_calls(rank: int, world: int, mesh: Any) -> None:
    from spmd_types import P, R, S, V

    def data(r: int) -> torch.Tensor:
        return torch.complex(torch.arange(16.0) + r, -torch.arange(16.0) * (r + 1)).reshape(4, 4)

    with spmd.set_current_mesh(mesh):
        n = spmd.axis_size("tp")
        x = data(rank)
        everyone = [data(r) for r in range(world)]  # "tp" spans the whole world on 2 ranks
        assert n == world
        torch.testing.assert_close(spmd.all_reduce(x, "tp", src=V, dst=R), sum(everyone), rtol=0, atol=0)
        torch.testing.assert_close(spmd.all_gather(x, "tp", src=S(0), dst=R), torch.cat(everyone), rtol=0, atol=0)
        torch.testing.assert_close(
            spmd.reduce_scatter(x, "tp", src=P, dst=S(0)), sum(everyone).chunk(n)[rank], rtol=0, atol=0
        )
        torch.testing.assert_close(
            spmd.all_to_all(x, "tp", src=S(0), dst=S(1)),
            torch.cat([e.chunk(n, dim=1)[rank] for e in everyone]),
            rtol=0,
            atol=0,
        )
        ring = spmd.ppermute(x, "tp", [(k, (k + 1) % n) for k in range(n)])
        torch.testing.assert_close(ring, everyone[(rank - 1) % n], rtol=0, atol=0)


def test_complex_on_gloo(gloo) -> None:
    gloo(2, _complex_calls)


def _disagreeing_ranks(rank: int, world: int, mesh: Any, case: str) -> str:
    from spmd_types import R, S, V

    spmd.set_runtime_checks(True)
    try:
        with spmd.set_current_mesh(mesh):
            if case == "shape":
                spmd.all_gather(torch.ones(2 + rank, 3), "tp", src=V, dst=R)
            elif case == "dtype":
                spmd.all_reduce(torch.ones(4, dtype=torch.float64 if rank else torch.float32), "tp", src=V, dst=R)
            elif case == "call":
                spmd.all_gather(torch.ones(4, 2), "tp", src=S(0) if rank == 0 else V, dst=R)
            elif case == "sizes":  # each rank's shard fits its own split_sizes, but they differ
                spmd.all_gather(torch.ones(2, 3), "tp", src=S(0), dst=R, split_sizes=[2, 3] if rank == 0 else [3, 2])
    except spmd.SpmdError as e:
        return f"{type(e).__name__}: {e}"
    finally:
        spmd.set_runtime_checks(False)
    return "no error"


@pytest.mark.parametrize(
    "case, error, pattern",
    [
        ("shape", "ShapeError", r"all_gather\(V -> R\) on axis 'tp': .*rank 0 has float32\[2, 3\]; rank 1 has float32\[3, 3\]"),
        ("dtype", "ShapeError", r"all_reduce\(P -> R\) .*rank 0 has float32\[4\]; rank 1 has float64\[4\]"),
        ("call", "CollectiveArgumentError", r"all_gather\((S\(0\)|V) -> R\) on axis 'tp': this rank runs .*rank\(s\) \d run a different"),
        ("sizes", "CollectiveArgumentError", r"all_gather\(S\(0\) -> R\) .*split_sizes or permutation \((2, 3|3, 2)\)"),
    ],
)
def test_ranks_that_disagree_raise_instead_of_aborting(gloo, case, error, pattern) -> None:
    """With runtime checks on, a mismatch that kills a gloo rank (SIGABRT) or computes garbage is an error on every rank."""
    import re

    messages = gloo(2, _disagreeing_ranks, case)
    for message in messages:
        assert message.startswith(error + ":") and re.search(pattern, message), messages
