"""``torch.compile(fullgraph=True)`` traces the collectives without graph breaks.

Two gloo processes (fork) compile one function that goes through every kind of
primitive (gathers, reduce-scatters, all-to-all, the converts with their
rank-dependent local slicing and padding, an all-reduce average, a ring
``ppermute``, axes given by name, by process group and by 1-D mesh), run it
forward and backward, and compare values and gradients with eager mode.
``fullgraph=True`` turns any graph break into an error.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402


def _program(x: torch.Tensor, w: torch.Tensor, group: Any, submesh: Any, n: int) -> torch.Tensor:
    full = spmd.all_gather(x, "tp", src=S(0), dst=R)  # [4n, 2n]
    h = spmd.reduce_scatter(full * 2.0, group, src=P, dst=S(1))  # [4n, 2]
    h = spmd.all_to_all(h, "tp", src=S(1), dst=S(0))  # [4, 2n]
    w_local = spmd.convert(w, submesh, src=I, dst=V)  # my row of w: [2n]
    h = h * w_local
    p = spmd.convert(h, "tp", src=S(0), dst=P)  # [4n, 2n]
    avg = spmd.all_reduce(p, "tp", src=P, dst=I, op="avg")
    v = spmd.convert(avg.reshape(n, -1), "tp", src=I, dst=V)  # my row: [8n]
    ring = spmd.ppermute(v, "tp", [(k, (k + 1) % n) for k in range(n)])
    stacked = spmd.all_gather(ring, "tp", src=V, dst=I, gather_dim=1)
    t = spmd.reinterpret(stacked.sum(), "tp", src=I, dst=R)
    return spmd.reinterpret(t, "tp", src=R, dst=P)


def _compare(rank: int, world: int, mesh: Any) -> float:
    n = world
    group = mesh.get_group("tp")
    submesh = mesh["tp"]

    def program(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        with spmd.set_current_mesh(mesh):
            out = _program(x.reshape(4, 2 * n), w, group, submesh, n)
            return out

    gen = torch.Generator().manual_seed(rank)
    x0 = torch.randn(4 * 2 * n, generator=gen, dtype=torch.float64)
    w0 = torch.randn(n, 2 * n, generator=torch.Generator().manual_seed(99), dtype=torch.float64)
    results = []
    # compiled first, so that tracing also meets the first resolution of each axis
    for fn in (torch.compile(program, fullgraph=True), program):
        x = x0.clone().requires_grad_()
        w = w0.clone().requires_grad_()
        loss = fn(x, w)
        loss.backward()
        results.append((loss.detach(), x.grad, w.grad))
    (l2, gx2, gw2), (l1, gx1, gw1) = results
    assert torch.allclose(l1, l2) and torch.allclose(gx1, gx2) and torch.allclose(gw1, gw2)
    assert float(gx1.abs().sum()) > 0 and float(gw1.abs().sum()) > 0
    return float(l1)


def test_compile_fullgraph_matches_eager(gloo) -> None:
    losses = gloo(2, _compare, timeout=300)
    assert len(losses) == 2
