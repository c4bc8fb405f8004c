"""Uneven shards (``split_sizes=``) for the calls with an ``S(i)`` end, under LocalTensorMode.

Rank ``k`` of the axis holds ``k + 1`` rows (so every rank's shard differs in
length); the same checks as the table tests apply, the single-device reference
splitting the global tensor by the same sizes.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from spmd_types import I, P, R, S, V  # noqa: E402
from tests.runtime.runtime_oracle import Case, check, prepare, run_simulated  # noqa: E402


def _cases(n: int) -> list[Case]:
    sizes = tuple(k + 1 for k in range(n))
    kw = (("split_sizes", sizes),)
    return [
        Case("all_gather", S(0), R, kw),
        Case("all_gather", S(1), I, kw),
        Case("reduce_scatter", P, S(0), kw),
        Case("reduce_scatter", V, S(1), kw),
        Case("convert", R, S(0), kw),
        Case("convert", I, S(1), kw),
        Case("convert", S(0), P, kw),
    ]


@pytest.mark.parametrize("index", range(7))
@pytest.mark.parametrize("axis", ["dp", "tp"])
def test_uneven(sim, axis: str, index: int) -> None:
    groups = sim.groups(axis)
    n = len(groups[0])
    case = _cases(n)[index]
    total = n * (n + 1) // 2
    dim = case.src.dim if isinstance(case.src, type(S(0))) else case.dst.dim

    def shape_at(pos: int) -> tuple[int, ...]:
        rows = pos + 1 if isinstance(case.src, type(S(0))) else total  # a shard, or the whole tensor
        return (rows, 3) if dim == 0 else (2, rows)

    trial = prepare(case, groups, shape_at)
    check(run_simulated(trial, sim.world, sim.mesh, axis))
