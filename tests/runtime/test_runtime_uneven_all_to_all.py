"""Uneven ``all_to_all`` (``split_sizes=``, ``out_split_sizes=``): mixture-of-experts token exchange.

A size matrix ``M[s][d]`` says how many rows rank ``s`` of the axis sends to
rank ``d`` (zeros included).  For every case, on simulated ranks
(``LocalTensorMode``, sizes given as per-rank ``SymInt`` from ``tolist()``,
as in a real routing step) and on gloo (plain ints):

* forward: rank ``d`` receives, in source order, exactly the rows rank ``s``
  cut out for it (compared with a single-device reference that builds the
  same pieces from the concatenated inputs, bit for bit);
* backward against the same single-device reference run through autograd;
* the adjoint identity ``<A x, g> = <x, A^T g>`` summed over the ranks
  (``A`` the exchange, ``A^T`` what the runtime's backward computes), to
  ``1e-12`` relative in float64.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import spmd_types as spmd  # noqa: E402
from spmd_types import S, V  # noqa: E402
from spmd_types._errors import CollectiveArgumentError, ShapeError  # noqa: E402

F64 = torch.float64


def _matrix(n: int, seed: int) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    m = torch.randint(0, 4, (n, n), generator=gen).tolist()
    m[0][n - 1] = 0  # an empty piece
    return m


def _reference(xs: list[torch.Tensor], gs: list[torch.Tensor], m: list[list[int]], dim: int
               ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Outputs and input gradients of the exchange on one device, through plain autograd."""
    n = len(xs)
    leaves = [x.detach().clone().requires_grad_() for x in xs]
    pieces = [list(torch.split(leaf, m[s], dim=dim)) for s, leaf in enumerate(leaves)]
    ys = [torch.cat([pieces[s][d] for s in range(n)], dim=dim) for d in range(n)]
    torch.autograd.backward(ys, gs)
    return [y.detach() for y in ys], [leaf.grad for leaf in leaves]


def _inputs(n: int, m: list[list[int]], dim: int, seed: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)

    def shaped(rows: int) -> tuple[int, ...]:
        return (rows, 3) if dim == 0 else (2, rows, 3)

    xs = [torch.randn(shaped(sum(m[s])), generator=gen, dtype=F64) for s in range(n)]
    gs = [torch.randn(shaped(sum(m[s][d] for s in range(n))), generator=gen, dtype=F64) for d in range(n)]
    return xs, gs


def _check(n: int, m: list[list[int]], dim: int, xs, gs, ys, grads, where: str) -> None:
    want_y, want_grad = _reference(xs, gs, m, dim)
    for k in range(n):
        assert torch.equal(ys[k], want_y[k]), f"{where}: output of rank {k}"
        assert torch.equal(grads[k], want_grad[k]), f"{where}: gradient of rank {k}"
    forward = sum(float((y * g).sum()) for y, g in zip(ys, gs))
    adjoint = sum(float((x * gx).sum()) for x, gx in zip(xs, grads))
    assert abs(forward - adjoint) <= 1e-12 * max(1.0, abs(forward)), f"{where}: <Ax, g> {forward} != <x, A^T g> {adjoint}"


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("given", ["both", "split_sizes only"])
@pytest.mark.parametrize("axis", ["tp", "dp"])
def test_uneven_all_to_all_on_simulated_ranks(sim8, axis: str, given: str, dim: int) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    groups = sim8.groups(axis)
    n = len(groups[0])
    position = {r: (g, k) for g, members in enumerate(groups) for k, r in enumerate(members)}
    matrices = [_matrix(n, 11 + g) for g in range(len(groups))]
    data = [_inputs(n, matrices[g], dim, 5 + g) for g in range(len(groups))]
    with LocalTensorMode(sim8.world) as mode, spmd.set_current_mesh(sim8.mesh):

        def mine(fn: Any) -> Any:
            return mode.rank_map(lambda r: fn(*position[r]))

        x = mine(lambda g, k: data[g][0][k].clone()).requires_grad_()
        sends = mine(lambda g, k: torch.tensor(matrices[g][k])).tolist()
        gets = mine(lambda g, k: torch.tensor([row[k] for row in matrices[g]])).tolist()
        kwargs = {"split_sizes": sends} if given == "split_sizes only" else {"split_sizes": sends, "out_split_sizes": gets}
        y = spmd.all_to_all(x, axis, src=S(dim), dst=S(dim), **kwargs)
        y.backward(mine(lambda g, k: data[g][1][k].clone()))
        for g, members in enumerate(groups):
            _check(n, matrices[g], dim, data[g][0], data[g][1], [y._local_tensors[r] for r in members],
                   [x.grad._local_tensors[r] for r in members], f"{axis} group {members}")


def test_even_sizes_give_the_even_exchange(sim8) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.arange(8.0).reshape(8, 1) + 10 * r)
        even = spmd.all_to_all(x, "tp", src=S(0), dst=S(0))
        sized = spmd.all_to_all(x, "tp", src=S(0), dst=S(0), split_sizes=[2, 2, 2, 2], out_split_sizes=[2, 2, 2, 2])
        for r in range(8):
            assert torch.equal(even._local_tensors[r], sized._local_tensors[r])


def test_uneven_all_to_all_in_bfloat16(sim8) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    m = _matrix(4, 3)
    xs, _ = _inputs(4, m, 0, 1)
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: xs[r % 4].float())
        sends = mode.rank_map(lambda r: torch.tensor(m[r % 4])).tolist()
        y = spmd.all_to_all(x, "tp", src=S(0), dst=S(0), split_sizes=sends, comm_dtype=torch.bfloat16)
    rounded = [t.float().to(torch.bfloat16).float() for t in xs]
    for d in range(4):
        expected = torch.cat([torch.split(rounded[s], m[s])[d] for s in range(4)])
        assert y.dtype == torch.float32 and torch.equal(y._local_tensors[d], expected)


# -- bad sizes ----------------------------------------------------------------------------


@pytest.fixture
def ctx(sim8):
    from torch.distributed._local_tensor import LocalTensorMode

    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        yield mode


@pytest.mark.parametrize(
    "kwargs, cls, pattern",
    [
        ({"src": S(0), "dst": S(1), "split_sizes": [2, 2, 2, 2]}, CollectiveArgumentError,
         r"all_to_all: split_sizes= and out_split_sizes= cut pieces of uneven length along one dim, so they need "
         r"src=S\(i\) and dst=S\(i\) with the same i .*got src=S\(0\), dst=S\(1\)"),
        ({"src": V, "dst": V, "split_sizes": [2, 2, 2, 2]}, CollectiveArgumentError, r"got src=V, dst=V"),
        ({"src": S(0), "dst": S(0), "out_split_sizes": [2, 2, 2, 2]}, CollectiveArgumentError,
         r"out_split_sizes= needs split_sizes="),
        ({"src": S(0), "dst": S(0), "split_sizes": [2, 2, 4]}, CollectiveArgumentError,
         r"split_sizes must be 4 non-negative ints \(one per rank of axis 'tp'\), got \[2, 2, 4\]"),
        ({"src": S(0), "dst": S(0), "split_sizes": [2, 2, 5, -1]}, CollectiveArgumentError, r"non-negative"),
        ({"src": S(0), "dst": S(0), "split_sizes": "2222"}, CollectiveArgumentError, r"got '2222'"),
        ({"src": S(0), "dst": S(0), "split_sizes": [2, 2, 2, 3]}, ShapeError,
         r"all_to_all on rank 0: split_sizes \[2, 2, 2, 3\] add up to 9, but dim 0 has size 8"),
        ({"src": S(0), "dst": S(0), "split_sizes": [2, 2, 2, 2], "out_split_sizes": [1, 2, 2, 2, 1]},
         CollectiveArgumentError, r"out_split_sizes must be 4"),
    ],
)
def test_bad_sizes_are_rejected(ctx, kwargs, cls, pattern) -> None:
    x = ctx.rank_map(lambda r: torch.ones(8, 2))
    with pytest.raises(cls, match=pattern):
        spmd.all_to_all(x, "tp", **kwargs)


def test_sizes_the_senders_do_not_send_are_named(ctx) -> None:
    """Every rank sends 2 rows to every rank, but rank 1 (global) expects 3 from rank 0 of its group."""
    x = ctx.rank_map(lambda r: torch.ones(8, 2))
    gets = ctx.rank_map(lambda r: torch.tensor([3 if r == 1 else 2, 2, 2, 2])).tolist()
    with pytest.raises(ShapeError, match=r"all_to_all on axis 'tp': rank 0 sends 2 to rank 1 \(its split_sizes\[1\]\), "
                                         r"but rank 1 expects 3 from it \(its out_split_sizes\[0\]\)"):
        spmd.all_to_all(x, "tp", src=S(0), dst=S(0), split_sizes=[2, 2, 2, 2], out_split_sizes=gets)


# -- real processes ---------------------------------------------------------------------


def _exchange_on_gloo(rank: int, world: int, mesh: Any, checks: bool) -> list[int]:
    spmd.set_runtime_checks(checks)
    with spmd.set_current_mesh(mesh):
        n, me = spmd.axis_size("tp"), spmd.axis_index("tp")
        group = rank - me  # the first global rank of this rank's group on "tp"
        m = _matrix(n, 40 + group)
        outputs = []
        for dim in (0, 1):
            xs, gs = _inputs(n, m, dim, 9 + group + dim)
            for given in ("both", "split_sizes only"):
                x = xs[me].clone().requires_grad_()
                out = {"out_split_sizes": [row[me] for row in m]} if given == "both" else {}
                y = spmd.all_to_all(x, "tp", src=S(dim), dst=S(dim), split_sizes=m[me], **out)
                y.backward(gs[me])
                want_y, want_grad = _reference(xs, gs, m, dim)
                assert torch.equal(y, want_y[me]), f"output of rank {rank}, dim {dim}, {given}"
                assert torch.equal(x.grad, want_grad[me]), f"gradient of rank {rank}, dim {dim}, {given}"
                outputs.append(y.shape[dim])
        if checks:  # a receiver that expects the wrong sizes is named on every rank
            bad = [row[me] + (1 if me == 1 else 0) for row in m]
            with pytest.raises(ShapeError, match=r"but rank \d+ expects"):
                spmd.all_to_all(torch.ones(sum(m[me]), 2), "tp", src=S(0), dst=S(0), split_sizes=m[me],
                                out_split_sizes=bad)
    spmd.set_runtime_checks(False)
    return outputs


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("checks", [False, True])
def test_uneven_all_to_all_on_gloo(gloo, world: int, checks: bool) -> None:
    sizes = gloo(world, _exchange_on_gloo, checks)
    assert all(len(s) == 4 for s in sizes)
