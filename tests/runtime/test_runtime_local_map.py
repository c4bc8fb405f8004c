"""DTensor's ``local_map`` on simulated ranks, and DTensor's boundaries under runtime checking.

The column-parallel linear below is wrapped by torch's own ``local_map`` on
the 2x4 mesh: ``x`` replicated, ``w`` sharded on its output dim.  Inside,
``x`` is combined with each rank's shard of ``w``, so it is used as ``R``:
its gradient is a partial sum over ``tp``, which needs
``in_grad_placements=[..., Partial()]``.  With that, local_map computes what
our typed equivalent (``redistribute`` I -> R, the op, ``redistribute``
S(1) -> I) computes, forward and backward, and the single-device gradient;
with the default gradient placements the gradient of ``x`` is wrong, and
that is the call ``tests/plugin/cases/ecosystem_local_map.py`` flags
(``local_map argument "x" of "column"``).  Under runtime checking the same
mistake is reported at ``column``'s declared parameter, from the type
``to_local`` gave the local tensor.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard  # noqa: E402
from torch.distributed.tensor.experimental import local_map  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types.typesystem import SpmdType  # noqa: E402

F64 = torch.float64
TP = 4
X = torch.randn(4, 6, dtype=F64, generator=torch.Generator().manual_seed(3))
W = torch.randn(8, 6, dtype=F64, generator=torch.Generator().manual_seed(4))

RIGHT = ((Replicate(), Partial()), (Replicate(), Shard(0)))
DEFAULT = None  # in_grad_placements left out: Replicate() for x, read as I


@spmd.checked
def column(x: Annotated[Tensor, R["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 1]]:
    return F.linear(x, w)


def _local(value: Any, rank: int) -> torch.Tensor:
    return value._local_tensors[rank]


def _leaves(mode: Any) -> tuple[Any, Any]:
    x = mode.rank_map(lambda r: X.clone()).requires_grad_()
    w = mode.rank_map(lambda r: W.chunk(TP)[r % TP].clone()).requires_grad_()
    return x, w


def _theirs(ranks8: Any, grads: Any) -> tuple[Any, Any, Any]:
    """torch's local_map of ``column``: the full output, and the gradients of ``x`` and of ``w``'s shards."""
    mesh = ranks8.mesh
    x, w = _leaves(ranks8.mode)
    mapped = local_map(column, [Replicate(), Shard(1)], ((Replicate(), Replicate()), (Replicate(), Shard(0))),
                       grads, device_mesh=mesh)
    y = mapped(DTensor.from_local(x, mesh, (Replicate(), Replicate())),
               DTensor.from_local(w, mesh, (Replicate(), Shard(0)))).full_tensor()
    (y**2).sum().backward()
    return y, x.grad, w.grad


def _ours(ranks8: Any) -> tuple[Any, Any, Any]:
    """The same with our calls on local tensors: x made R, the op, the output gathered to I."""
    x, w = _leaves(ranks8.mode)
    y = spmd.redistribute(column(spmd.redistribute(x, "tp", src=I, dst=R), w), "tp", src=S(1), dst=I)
    (y**2).sum().backward()
    return y, x.grad, w.grad


def _reference() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x, w = X.clone().requires_grad_(), W.clone().requires_grad_()
    y = F.linear(x, w)
    (y**2).sum().backward()
    return y, x.grad, w.grad  # type: ignore[return-value]


def test_local_map_with_partial_gradients_is_our_typed_function(ranks8: Any) -> None:
    theirs, ours, (y_ref, gx_ref, gw_ref) = _theirs(ranks8, RIGHT), _ours(ranks8), _reference()
    for rank in range(8):
        for mine, torchs in zip(ours, theirs):
            assert torch.allclose(_local(mine, rank), _local(torchs, rank))
        assert torch.allclose(_local(theirs[0], rank), y_ref)
        assert torch.allclose(_local(theirs[1], rank), gx_ref)
        assert torch.allclose(_local(theirs[2], rank), gw_ref.chunk(TP)[rank % TP])


def test_local_map_with_default_gradients_loses_the_other_ranks_shares(ranks8: Any) -> None:
    """The call the plugin flags: the forward is right, the gradient of ``x`` is one rank's share."""
    y, gx, _ = _theirs(ranks8, DEFAULT)
    y_ref, gx_ref, _ = _reference()
    assert torch.allclose(_local(y, 0), y_ref)
    assert not torch.allclose(_local(gx, 0), gx_ref)


@pytest.mark.parametrize("grads", ["right", "default"])
def test_runtime_checking_types_local_map_inputs(ranks8: Any, grads: str) -> None:
    with spmd.runtime_checking(raise_errors=False) as tracker:
        _theirs(ranks8, RIGHT if grads == "right" else DEFAULT)
    codes = [(e.code, str(e)) for e in tracker.errors]
    if grads == "right":
        assert codes == []
    else:
        assert len(codes) == 1 and codes[0][0] == "spmd-boundary", codes
        assert 'argument "x" of "column" on axis \'tp\': expected R, got I' in codes[0][1]


def test_runtime_checking_checks_local_map_outputs(ranks8: Any) -> None:
    """An ``R`` output wrapped as ``Replicate()`` (read back as I) is reported where local_map calls from_local."""

    @spmd.checked
    def summed(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, R["tp"]]:
        return spmd.all_reduce(spmd.reinterpret(F.linear(x, w), "tp", src=V, dst=P), "tp", src=P, dst=R)

    mesh = ranks8.mesh
    x = ranks8.mode.rank_map(lambda r: X.chunk(2, dim=1)[0].clone())
    w = ranks8.mode.rank_map(lambda r: W.chunk(2, dim=1)[0].clone())
    mapped = local_map(summed, [Replicate(), Replicate()], ((Replicate(), Shard(1)), (Replicate(), Shard(1))),
                       device_mesh=mesh)
    with spmd.runtime_checking(raise_errors=False) as tracker:
        mapped(DTensor.from_local(x, mesh, (Replicate(), Shard(1))), DTensor.from_local(w, mesh, (Replicate(), Shard(1))))
    assert [e.code for e in tracker.errors] == ["spmd-boundary"]
    assert ("DTensor.from_local on axis 'tp': the local tensor is R, but placement Replicate() with default "
            "gradient placement Replicate() stands for I") in str(tracker.errors[0])


def test_to_local_is_typed_by_its_placements(ranks8: Any) -> None:
    mesh = ranks8.mesh
    with spmd.runtime_checking() as tracker:
        full = DTensor.from_local(ranks8.mode.rank_map(lambda r: W.clone()), mesh, (Replicate(), Replicate()))
        assert tracker.type_of(full.to_local()) == SpmdType({"dp": I, "tp": I})
        assert tracker.type_of(full.to_local(grad_placements=(Replicate(), Partial()))) == SpmdType(
            {"dp": I, "tp": R})
        shard = DTensor.from_local(ranks8.mode.rank_map(lambda r: W.clone()), mesh, (Replicate(), Shard(0)))
        assert tracker.type_of(shard.to_local()) == SpmdType({"dp": I, "tp": S(0)})


def test_boundary_mistakes_are_the_plugins(ranks8: Any) -> None:
    """The errors and fixes the plugin gives for the same calls (tests/plugin/cases/ecosystem_dtensor.py)."""
    mesh, mode = ranks8.mesh, ranks8.mode
    with spmd.runtime_checking(raise_errors=False) as tracker:
        partial = DTensor.from_local(ranks8.typed(P["tp"], I["dp"]), mesh, (Replicate(), Partial()))
        partial.to_local(grad_placements=(Replicate(), Partial()))
        r = spmd.assert_type(mode.rank_map(lambda _: W.clone()), R["tp"], I["dp"])
        DTensor.from_local(r, mesh, (Replicate(), Replicate()))
        DTensor.from_local(r, mesh, (Replicate(), Replicate()), grad_placements=(Replicate(), Partial()))
    assert [e.code for e in tracker.errors] == ["spmd-collective", "spmd-boundary"]
    assert "summed again; fix: d.to_local(grad_placements=[Replicate(), Replicate()])" in str(tracker.errors[0])
    assert ("fix: DTensor.from_local(x, mesh, [Replicate(), Replicate()], grad_placements=[Replicate(), Partial()])"
            in str(tracker.errors[1]))
