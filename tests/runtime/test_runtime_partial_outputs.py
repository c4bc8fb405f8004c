"""``out_partial_axes=`` on ``spmd_types.einsum``, ``matmul``, ``linear`` and ``sum``, on simulated ranks.

Each case contracts (or sums) global tensors whose contracted dim is cut into
one piece per rank of the partial axes: ``"tp"`` (the pieces repeat on every
``dp`` row) or ``("dp", "tp")`` (one piece per rank of the whole mesh).  Each
rank runs the function on its pieces; for every group of ranks the result is
partial over:

1. Forward, against the single-device reference: the ranks' results add up to
   the op on the whole tensors.
2. Backward, against the same reference through plain autograd: with the
   result's cotangent ``G`` replicated (the gradient type of ``P`` is ``R``),
   each rank's gradient is its piece of the reference gradient.
3. The adjoint identity, operand by operand (each op is linear in each
   operand): ``sum_r <grad_r, x_r> = <G, global result>``.
4. Communication: exactly what the rule core's ``reinterpret(V -> P)`` runs
   forward and backward (nothing), recorded on the backend.

Then under runtime checking: the result's tracked type is ``P`` on the listed
axes, and a result that is not ``V`` there, a bias, or malformed axes raise
the errors the checker reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types._errors import CollectiveArgumentError, SpmdTypeCheckError, UnknownAxisError  # noqa: E402
from spmd_types.typesystem import parse  # noqa: E402
from tests.runtime.recording import Recorder, expected_calls  # noqa: E402

F64 = torch.float64


@dataclass(frozen=True)
class Case:
    """``call(pieces, axes)`` on each rank, ``reference(wholes)`` on one device; ``cut[i]``: the dim of operand i cut."""

    id: str
    shapes: tuple[tuple[int, ...], ...]
    cut: tuple[int, ...]
    call: Callable[..., Any]
    reference: Callable[..., Any]


CASES = [
    Case("matmul", ((3, 8), (8, 5)), (1, 0),
         lambda x, w, axes: spmd.matmul(x, w, out_partial_axes=axes), torch.matmul),
    Case("einsum", ((3, 8), (8, 5)), (1, 0),
         lambda x, w, axes: spmd.einsum("bk,kn->bn", x, w, out_partial_axes=axes),
         lambda x, w: torch.einsum("bk,kn->bn", x, w)),
    Case("einsum-batched", ((2, 3, 8), (5, 8)), (2, 1),
         lambda x, w, axes: spmd.einsum("bsk,nk->bsn", x, w, out_partial_axes=axes),
         lambda x, w: torch.einsum("bsk,nk->bsn", x, w)),
    Case("linear", ((2, 3, 8), (5, 8)), (2, 1),
         lambda x, w, axes: spmd.linear(x, w, out_partial_axes=axes), F.linear),
    Case("sum-dim", ((8, 3),), (0,),
         lambda x, axes: spmd.sum(x, 0, out_partial_axes=axes), lambda x: x.sum(0)),
    Case("sum-all", ((8, 3),), (0,),
         lambda x, axes: spmd.sum(x, out_partial_axes=axes), lambda x: x.sum()),
    Case("sum-keepdim", ((2, 8, 3),), (1,),
         lambda x, axes: spmd.sum(x, (1, 2), True, out_partial_axes=axes), lambda x: x.sum((1, 2), keepdim=True)),
]

AXES = ["tp", ("dp", "tp")]


def _layout(sim: Any, axes: str | tuple[str, ...]) -> tuple[dict[int, int], int, list[list[int]]]:
    """Which piece each rank holds, how many pieces there are, and the groups whose results add up."""
    if axes == "tp":
        groups = sim.groups("tp")
        return {rank: k for group in groups for k, rank in enumerate(group)}, len(groups[0]), groups
    everyone = list(range(sim.world))
    return {rank: rank for rank in everyone}, sim.world, [everyone]


@pytest.mark.parametrize("axes", AXES, ids=["tp", "dp+tp"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_partial_sum_is_the_whole_contraction(sim: Any, case: Case, axes: str | tuple[str, ...]) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    piece_of, pieces, groups = _layout(sim, axes)
    gen = torch.Generator().manual_seed(len(case.id))
    wholes = [torch.randn(shape, generator=gen, dtype=F64) for shape in case.shapes]
    leaves = [w.clone().requires_grad_() for w in wholes]
    want = case.reference(*leaves)
    cotangent = torch.randn(want.shape, generator=gen, dtype=F64)
    want.backward(cotangent)
    cut = [list(w.chunk(pieces, dim)) for w, dim in zip(wholes, case.cut)]
    grad_cut = [list(leaf.grad.chunk(pieces, dim)) for leaf, dim in zip(leaves, case.cut)]

    recorder = Recorder(dist)
    with LocalTensorMode(sim.world) as mode, spmd.set_current_mesh(sim.mesh), spmd.use_dist(recorder):
        xs = [mode.rank_map(lambda r, p=p: p[piece_of[r]].clone()).requires_grad_() for p in cut]
        y = case.call(*xs, axes)
        forward = recorder.take()
        y.backward(mode.rank_map(lambda r: cotangent.clone()))
        backward = recorder.take()
        ys = {r: t.detach() for r, t in y._local_tensors.items()}
        grads = [{r: t.detach() for r, t in x.grad._local_tensors.items()} for x in xs]

    named = (axes,) if isinstance(axes, str) else axes
    expected = [expected_calls("reinterpret", V, P) for _ in named]
    assert forward == [c for fwd, _ in expected for c in fwd] and backward == [c for _, b in expected for c in b]
    global_value = want.detach()
    for group in groups:
        total = sum((ys[r] for r in group), torch.zeros_like(global_value))
        assert torch.allclose(total, global_value, rtol=1e-10, atol=1e-10), f"{case.id} on {group}: {total}"
        for i, per_rank in enumerate(grads):
            for r in group:
                assert torch.allclose(per_rank[r], grad_cut[i][piece_of[r]], rtol=1e-10, atol=1e-10), (
                    f"{case.id}: gradient of operand {i} on rank {r}")
            lhs = sum(float((per_rank[r] * cut[i][piece_of[r]]).sum()) for r in group)
            rhs = float((cotangent * total).sum())
            assert abs(lhs - rhs) <= 1e-9 * (1 + abs(rhs)), f"{case.id}: adjoint identity of operand {i}"


def test_without_axes_it_is_the_torch_op() -> None:
    """No ``out_partial_axes``: the plain op, no mesh needed, a bias allowed."""
    x, w, b = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5)
    assert torch.equal(spmd.linear(x, w, b), F.linear(x, w, b))
    assert torch.equal(spmd.matmul(x, w.T), x @ w.T)
    assert torch.equal(spmd.einsum("ik,jk->ij", x, w), torch.einsum("ik,jk->ij", x, w))
    assert torch.equal(spmd.sum(x, 1, True), x.sum(1, keepdim=True))


@pytest.mark.parametrize(("axes", "message"), [
    (("tp", "tp"), "name 'tp' twice"),
    (3, "out_partial_axes takes a mesh-axis name or a tuple of them"),
    (("tp", ""), "out_partial_axes takes a mesh-axis name or a tuple of them"),
])
def test_malformed_axes(axes: Any, message: str) -> None:
    with pytest.raises(CollectiveArgumentError, match=message):
        spmd.matmul(torch.ones(2, 2), torch.ones(2, 2), out_partial_axes=axes)


def test_a_bias_is_rejected(ranks8: Any) -> None:
    x, w = ranks8.typed(V["tp"], shape=(3, 4)), ranks8.typed(V["tp"], shape=(5, 4))
    with pytest.raises(CollectiveArgumentError, match="would count it once per rank") as raised:
        spmd.linear(x, w, torch.ones(5), out_partial_axes="tp")
    assert raised.value.violation is not None and raised.value.violation.code.value == "spmd-partial"


def test_an_axis_of_the_current_mesh(ranks8: Any) -> None:
    with pytest.raises(UnknownAxisError, match="no axis 'pp'"):
        spmd.sum(ranks8.typed(V["tp"]), out_partial_axes="pp")


# -- runtime checking ---------------------------------------------------------------------


def test_checking_types_the_result(ranks8: Any) -> None:
    with spmd.runtime_checking() as tracker:
        x = ranks8.typed(R["dp"], V["tp"], shape=(3, 8))
        w = ranks8.typed(R["dp"], S["tp", 0], shape=(8, 5))
        assert tracker.type_of(spmd.matmul(x, w, out_partial_axes="tp")) == parse("dp:R, tp:P")
        assert tracker.type_of(spmd.linear(x, w.T, out_partial_axes="tp")) == parse("dp:R, tp:P")
        assert tracker.type_of(spmd.einsum("bk,kn->bn", x, w, out_partial_axes="tp")) == parse("dp:R, tp:P")
        summed = spmd.sum(ranks8.typed(V["dp"], S["tp", 0]), out_partial_axes=("dp", "tp"))
        assert tracker.type_of(summed) == parse("dp:P, tp:P")
        y = spmd.all_reduce(spmd.matmul(x, w, out_partial_axes="tp"), "tp", src=P, dst=R)
        assert tracker.type_of(y) == parse("dp:R, tp:R")


@pytest.mark.parametrize(("x_type", "w_type", "message"), [
    (R, R, "the local result is R there"),
    (I, I, "the local result is I there"),
    (P, R, "the local result is already P there"),
])
def test_checking_rejects_a_result_that_is_not_varying(ranks8: Any, x_type: Any, w_type: Any, message: str) -> None:
    with spmd.runtime_checking():
        x, w = ranks8.typed(x_type["tp"], shape=(3, 4)), ranks8.typed(w_type["tp"], shape=(4, 5))
        with pytest.raises(SpmdTypeCheckError, match=message) as raised:
            spmd.matmul(x, w, out_partial_axes="tp")
    assert raised.value.code == "spmd-partial"
    assert str(raised.value).startswith("spmd_types.matmul on axis 'tp': ")


def test_checking_rejects_a_shard_that_survives(ranks8: Any) -> None:
    """A sum over another dim keeps the shard: its pieces are not summands."""
    with spmd.runtime_checking():
        x = ranks8.typed(S["tp", 0], shape=(8, 4))
        with pytest.raises(SpmdTypeCheckError, match="the local result is S\\(0\\) there") as raised:
            spmd.sum(x, 1, out_partial_axes="tp")
    assert raised.value.code == "spmd-partial"
