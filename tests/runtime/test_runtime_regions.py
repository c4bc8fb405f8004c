"""``@local_region`` under runtime checking, on simulated ranks (the 2x4 mesh ``("dp", "tp")``).

A row-parallel linear layer written as a global function that drops to
local SPMD on ``tp`` for its hand-written reduction: its result matches the
single-device product, and the same program with the region's out spec or
body wrong is caught where the region returns.  Inside the region the global
rules do not apply on ``tp`` (``reinterpret`` from ``V`` to ``P`` is a local
cast), and still do on ``dp``.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import P, PartitionSpec, R, S, SpmdValueError, V  # noqa: E402
from spmd_types._errors import SpmdTypeCheckError  # noqa: E402
from spmd_types.typesystem import parse  # noqa: E402

X_SPEC = PartitionSpec("dp", "tp")
W_SPEC = PartitionSpec(None, "tp")
ROWS = PartitionSpec("dp", None)
DP, TP = 2, 4


@spmd.local_region("tp", in_specs=(X_SPEC, W_SPEC), out_specs=ROWS)
def reduced_product(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, R["tp"]]:
    y = F.linear(x, w)  # V on tp: each rank's product over its features
    return spmd.all_reduce(spmd.reinterpret(y, "tp", src=V, dst=P), "tp", src=P, dst=R)


@spmd.local_region("tp", in_specs=(X_SPEC, W_SPEC), out_specs=ROWS)
def unreduced_product(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]]) -> Tensor:
    return F.linear(x, w)  # V on tp, where out_specs replicates


@spmd.local_region("tp", in_specs=(X_SPEC, W_SPEC), out_specs=PartitionSpec("dp", None, partial="tp"))
def pending_product(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]]) -> Tensor:
    return F.linear(x, w)  # V on tp, re-stated as summands


@spmd.local_region("tp", in_specs=(X_SPEC,), out_specs=ROWS)
def softmax_over_batch(x: Tensor) -> Tensor:
    return spmd.all_gather(torch.softmax(x, dim=0), "tp", src=S(1), dst=R)  # dp cuts dim 0: still global on dp


@spmd.global_spmd
def row_parallel(x: Annotated[Tensor, X_SPEC], w: Annotated[Tensor, W_SPEC, R["dp"]]
                 ) -> Annotated[Tensor, ROWS, R["tp"]]:
    return reduced_product(x, w)


@spmd.global_spmd
def row_parallel_unreduced(x: Annotated[Tensor, X_SPEC], w: Annotated[Tensor, W_SPEC, R["dp"]]) -> Tensor:
    return unreduced_product(x, w)


@spmd.global_spmd
def row_parallel_pending(x: Annotated[Tensor, X_SPEC], w: Annotated[Tensor, W_SPEC, R["dp"]]) -> Tensor:
    return pending_product(x, w)


def _global_operands() -> tuple[Tensor, Tensor]:
    gen = torch.Generator().manual_seed(0)
    return (torch.randn(DP * 3, TP * 2, generator=gen, dtype=torch.float64),
            torch.randn(5, TP * 2, generator=gen, dtype=torch.float64))


def _laid_out(ranks: Any, value: Tensor, rows: bool) -> Any:
    """Each rank's piece of ``value``: columns cut over tp, rows over dp where ``rows``."""
    def piece(rank: int) -> Tensor:
        d, t = divmod(rank, TP)
        cols = value.chunk(TP, dim=1)[t]
        return (cols.chunk(DP, dim=0)[d] if rows else cols).clone()
    return ranks.mode.rank_map(piece)


def _typed_operands(ranks: Any, gx: Tensor, gw: Tensor) -> tuple[Tensor, Tensor]:
    """The ranks' pieces of ``gx`` and ``gw``, typed as X_SPEC and W_SPEC say (under runtime checking)."""
    x, w = _laid_out(ranks, gx, True), _laid_out(ranks, gw, False)
    return spmd.assert_type(x, S["dp", 0], S["tp", 1]), spmd.assert_type(w, R["dp"], S["tp", 1])


def test_a_region_computes_the_single_device_product(ranks8: Any) -> None:
    gx, gw = _global_operands()
    with spmd.runtime_checking() as tracker:
        y = row_parallel(*_typed_operands(ranks8, gx, gw))
        assert tracker.type_of(y) == parse("dp:S(0), tp:R")
        assert tracker.errors == []
    expected = F.linear(gx, gw)
    for rank in range(DP * TP):
        d = rank // TP
        assert torch.allclose(y._local_tensors[rank], expected.chunk(DP, dim=0)[d])


def test_per_rank_data_restated_as_pending_sums(ranks8: Any) -> None:
    gx, gw = _global_operands()
    with spmd.runtime_checking() as tracker:
        y = row_parallel_pending(*_typed_operands(ranks8, gx, gw))
        assert tracker.type_of(y) == parse("dp:S(0), tp:P")
    expected = F.linear(gx, gw)
    for d in range(DP):
        total = sum(y._local_tensors[d * TP + t] for t in range(TP))
        assert torch.allclose(total, expected.chunk(DP, dim=0)[d])


@pytest.mark.parametrize(("x_dim", "call", "message"), [
    (1, row_parallel_unreduced, r"local_region \"unreduced_product\" output 0.*out_specs says R on 'tp'.*returns V"),
    (0, reduced_product, r"in_specs\[0\] says S\(1\), the argument is S\(0\)"),
], ids=["V returned where out_specs replicates", "an argument laid out otherwise"])
def test_a_wrong_region_is_caught_on_entry_or_exit(ranks8: Any, x_dim: int, call: Any, message: str) -> None:
    with spmd.runtime_checking():
        x = ranks8.typed(S["dp", 0], S["tp", x_dim], shape=(3, 8))
        w = ranks8.typed(R["dp"], S["tp", 1], shape=(5, 8))
        with pytest.raises(SpmdTypeCheckError, match=message) as raised:
            call(x, w)
    assert raised.value.code == "spmd-boundary"


def test_the_global_rules_still_apply_on_the_other_axes(ranks8: Any) -> None:
    with spmd.runtime_checking():
        x = ranks8.typed(S["dp", 0], S["tp", 1], shape=(3, 8))
        with pytest.raises(SpmdTypeCheckError, match="'dp'") as raised:
            spmd.global_spmd(softmax_over_batch)(x)
    assert raised.value.code == "spmd-global"


def test_outside_a_region_the_same_cast_is_a_global_error(ranks8: Any) -> None:
    @spmd.global_spmd
    def cast(y: Tensor) -> Tensor:
        return spmd.reinterpret(y, "tp", src=V, dst=P)

    with spmd.runtime_checking():
        y = ranks8.typed(R["dp"], V["tp"], shape=(3, 8))
        with pytest.raises(SpmdTypeCheckError) as raised:
            cast(y)
    assert raised.value.code == "spmd-global"


@pytest.mark.parametrize(("axes", "in_specs", "out_specs", "message"), [
    ((), (X_SPEC,), ROWS, "non-empty tuple"),
    (("tp", "tp"), (X_SPEC,), ROWS, "twice"),
    ("tp", X_SPEC, ROWS, "in_specs takes a tuple"),
    ("tp", (X_SPEC,), "dp", "out_specs takes a PartitionSpec"),
])
def test_malformed_arguments(axes: Any, in_specs: Any, out_specs: Any, message: str) -> None:
    with pytest.raises(SpmdValueError, match=message):
        spmd.local_region(axes, in_specs=in_specs, out_specs=out_specs)


def test_an_axis_outside_the_mesh(ranks8: Any) -> None:
    region = spmd.local_region("cp", in_specs=(X_SPEC,), out_specs=ROWS)(lambda x: x)
    with spmd.runtime_checking(), pytest.raises(SpmdValueError, match="'cp', which is not an axis of the mesh"):
        region(ranks8.typed(S["dp", 0], S["tp", 1], shape=(3, 8)))


def test_without_runtime_checking_it_is_the_function(ranks8: Any) -> None:
    x = ranks8.typed(S["dp", 0], S["tp", 1], shape=(3, 8))
    w = ranks8.typed(R["dp"], S["tp", 1], shape=(5, 8))
    assert unreduced_product(x, w).shape == (3, 5)
