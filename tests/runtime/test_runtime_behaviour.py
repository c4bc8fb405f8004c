"""Properties beyond the table: double backward, Megatron's regions, no-op routes, statistics."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch.distributed._local_tensor import LocalTensorMode  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from tests.runtime.runtime_oracle import Case, expected, local_values, noncontiguous, prepare, table_cases  # noqa: E402

CASES = table_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_double_backward_is_the_forward(sim8, case: Case) -> None:
    """The backward of the backward runs the forward again (every call is linear).

    With ``B(g) = A*(g)`` the first backward, differentiating ``B`` at ``g`` along
    ``v`` gives ``A(v)``: computed here through autograd on the runtime's own
    backward Functions, and compared with the runtime forward of ``v``.
    """
    trial = prepare(case, sim8.groups("tp"))
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: trial.xs[r].clone()).requires_grad_()
        g = mode.rank_map(lambda r: noncontiguous(trial.gs[r])).requires_grad_()
        y = case.apply(x, "tp", trial.n)
        (gx,) = torch.autograd.grad(y, x, g, create_graph=True)
        if not gx.requires_grad:  # a no-op route: the backward is the identity
            assert y is x
            return
        v = mode.rank_map(lambda r: trial.xs[r] * 0.5 - 1.0)
        (back,) = torch.autograd.grad(gx, g, v)
        forward_v = case.apply(v, "tp", trial.n)
        got, want = local_values(back), local_values(forward_v)
    for r in want:
        assert torch.allclose(got[r], want[r]), f"rank {r}"


@pytest.mark.parametrize("call", ["reinterpret", "convert"])
def test_megatron_copy_to_tensor_parallel_region(sim8, call) -> None:
    """I -> R: no-op forward, all-reduce (sum over tp) in backward, under both names."""
    fn = getattr(spmd, call)
    groups = sim8.groups("tp")
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.full((3,), float(r // 4))).requires_grad_()
        y = fn(x, "tp", src=I, dst=R)
        assert {r: t.tolist() for r, t in local_values(y).items()} == {r: [float(r // 4)] * 3 for r in range(8)}
        y.backward(mode.rank_map(lambda r: torch.full((3,), float(r))))
        grads = local_values(x.grad)
    for members in groups:
        for r in members:
            assert grads[r].tolist() == [float(sum(members))] * 3


def test_megatron_reduce_from_region_has_identity_backward(sim8) -> None:
    """P -> I all-reduce: the invariant gradient passes through unchanged."""
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.full((2,), float(r))).requires_grad_()
        y = spmd.all_reduce(x, "tp", dst=I)
        y.backward(mode.rank_map(lambda r: torch.full((2,), 7.0)))
        assert all(t.tolist() == [7.0, 7.0] for t in local_values(x.grad).values())


def test_no_op_routes_return_the_input(sim8) -> None:
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.randn(4, 4))
        for src, dst in ((R, R), (V, S(0)), (S(1), V), (S(1), S(1)), (P, P)):
            assert spmd.redistribute(x, "tp", src=src, dst=dst) is x
        for src, dst in ((R, V), (V, P), (R, P)):
            assert spmd.reinterpret(x, "tp", src=src, dst=dst) is x


def test_inputs_without_grad_give_outputs_without_grad(sim8) -> None:
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.randn(4, 4))
        assert not spmd.all_gather(x, "tp", src=S(0), dst=R).requires_grad
        assert not spmd.convert(x, "tp", src=R, dst=V).requires_grad


@pytest.mark.parametrize("op", ["max", "min", "avg"])
def test_statistics(sim8, op) -> None:
    groups = sim8.groups("tp")
    case = Case("all_reduce", V, I, (("op", op),))
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        data = {r: torch.randn(5, generator=torch.Generator().manual_seed(r)) for r in range(8)}
        y = spmd.all_reduce(mode.rank_map(lambda r: data[r]), "tp", src=V, dst=I, op=op)
        got = local_values(y)
    for members in groups:
        want = expected(case, [data[r] for r in members], len(members))
        for r, w in zip(members, want):
            assert torch.allclose(got[r], w)


def test_ppermute_ring_and_partial(sim8) -> None:
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.tensor([float(r)]))
        ring = local_values(spmd.ppermute(x, "tp", [(0, 1), (1, 2), (2, 3), (3, 0)]))
        partial = local_values(spmd.ppermute(x, "tp", [(3, 0)]))
    assert {r: t.item() for r, t in ring.items()} == {0: 3, 1: 0, 2: 1, 3: 2, 4: 7, 5: 4, 6: 5, 7: 6}
    assert {r: t.item() for r, t in partial.items()} == {0: 3, 1: 0, 2: 0, 3: 0, 4: 7, 5: 0, 6: 0, 7: 0}


@pytest.mark.parametrize(
    "case",
    [
        Case("all_gather", S(1), R),
        Case("reduce_scatter", P, S(1)),
        Case("all_to_all", S(1), S(0)),
        Case("all_reduce", P, R),
        Case("convert", R, S(1)),
        Case("ppermute", V, V, (("perm", "ring"),)),
    ],
    ids=lambda c: c.id,
)
def test_non_contiguous_inputs_give_the_contiguous_results(sim8, case: Case) -> None:
    """Same values in transposed strides: same outputs and gradients, bit for bit."""
    from tests.runtime.runtime_oracle import run_simulated

    results = []
    for layout in (lambda t: t.clone(), noncontiguous):
        trial = prepare(case, sim8.groups("tp"))
        assert not layout(trial.xs[0]).is_contiguous() or layout is not noncontiguous
        run_simulated(trial, 8, sim8.mesh, "tp", layout=layout)
        results.append((trial.ys, trial.grads))
    (y1, g1), (y2, g2) = results
    assert all(torch.equal(y1[r], y2[r]) and torch.equal(g1[r], g2[r]) for r in range(8))
