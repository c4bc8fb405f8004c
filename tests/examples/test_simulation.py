"""The layouts of ``examples/simulation.py`` on a 2-D mesh: they invert, and they agree with the runtime.

The example checks trust ``World.distribute`` and ``World.collect``; the
examples themselves use one-axis meshes, so the two-axis paths are checked
here, and the per-rank layout is compared with what ``spmd_types``'
own ``convert`` cuts out of a replicated tensor.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from examples.simulation import ReplicasDiffer, simulated_mesh  # noqa: E402
from spmd_types import I, P, R, S, V, convert  # noqa: E402
from spmd_types.typesystem import SpmdType  # noqa: E402

LAYOUTS = [
    {"dp": R, "tp": I},
    {"dp": S(0), "tp": S(1)},
    {"dp": S(1), "tp": S(1)},
    {"dp": V, "tp": S(0)},
    {"dp": P, "tp": R},
    {"dp": S(0), "tp": P},
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: ",".join(f"{a}:{t.code}" for a, t in layout.items()))
def test_collect_inverts_distribute(layout: dict) -> None:
    spmd_type = SpmdType(layout)
    generator = torch.Generator().manual_seed(0)
    with simulated_mesh(dp=2, tp=2) as world:
        with world.one_device():
            value = torch.randn(2, 4, 8, generator=generator)
        local = world.distribute(value, spmd_type, generator)
        assert world.global_shape(local.shape, spmd_type) == value.shape
        with world.one_device():
            assert torch.allclose(world.collect(local, spmd_type), value)


@pytest.mark.parametrize("target", [V, S(0), S(1)], ids=lambda t: t.code)
def test_shards_are_the_runtimes_shards(target) -> None:
    """Rank k's piece is what ``convert(R -> target)`` keeps on rank k, on either axis."""
    generator = torch.Generator().manual_seed(1)
    with simulated_mesh(dp=2, tp=2) as world:
        with world.one_device():
            value = torch.randn(2, 4, generator=generator)
        for axis in ("dp", "tp"):
            replicated = world.distribute(value, SpmdType({"dp": R, "tp": R}), generator)
            expected = convert(replicated, axis, src=R, dst=target)
            laid_out = world.distribute(value, SpmdType({"dp": R, "tp": R}).with_axis(axis, target), generator)
            with world.one_device():
                for rank in range(world.size):
                    assert torch.equal(laid_out._local_tensors[rank], expected._local_tensors[rank]), (axis, rank)


def test_replicas_that_differ_are_reported() -> None:
    with simulated_mesh(dp=2, tp=2) as world:
        by_rank = world.mode.rank_map(lambda rank: torch.full((3,), float(rank)))
        with world.one_device():
            with pytest.raises(ReplicasDiffer, match="axis 'tp'"):
                world.collect(by_rank, SpmdType({"dp": S(0), "tp": I}))
            stacked = world.collect(by_rank, SpmdType({"dp": V, "tp": V}))
            assert torch.equal(stacked, torch.arange(4.0).view(2, 2, 1).expand(2, 2, 3))
