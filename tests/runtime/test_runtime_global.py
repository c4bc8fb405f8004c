"""``@global_spmd`` under runtime checking, on simulated ranks: the global rules at run time.

Inside a decorated function an op on shards must keep them (a contraction
over a sharded dim only through ``out_partial_axes=``), and collectives and
casts are only their shard-preserving variants; the errors are the checker's
(``spmd-global``).  The same code outside it is local SPMD and runs.  The
declarations are checked at each call as ``@checked`` checks them.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import P, PartitionSpec, R, S, V  # noqa: E402
from spmd_types._errors import SpmdTypeCheckError  # noqa: E402
from spmd_types.typesystem import parse  # noqa: E402

Rows = Annotated[Tensor, PartitionSpec(None, "tp"), R["dp"]]


def product(x: Tensor, w: Tensor) -> Tensor:
    return F.linear(x, w)


global_product = spmd.global_spmd(product)


@spmd.global_spmd
def explicit_product(x: Rows, w: Rows) -> Annotated[Tensor, PartitionSpec(None, None, partial="tp"), R["dp"]]:
    return spmd.linear(x, w, out_partial_axes="tp")


@spmd.global_spmd
def gathered_as_varying(x: Tensor) -> Tensor:
    return spmd.all_gather(x, "tp", src=V, dst=R)


@spmd.global_spmd
def gathered(x: Tensor) -> Tensor:
    return spmd.all_gather(x, "tp", src=S(1), dst=R)


def _operands(ranks: Any) -> tuple[Tensor, Tensor]:
    return ranks.typed(R["dp"], S["tp", 1], shape=(3, 4)), ranks.typed(R["dp"], S["tp", 1], shape=(5, 4))


def test_an_implicit_pending_sum_is_an_error_in_global_mode_only(ranks8: Any) -> None:
    with spmd.runtime_checking() as tracker:
        x, w = _operands(ranks8)
        assert tracker.type_of(product(x, w)) == parse("dp:R, tp:V")  # local SPMD: each rank's product
        with pytest.raises(SpmdTypeCheckError, match="dim 'k' is summed over and cut on 'tp'") as raised:
            global_product(x, w)
    assert raised.value.code == "spmd-global"
    assert 'spmd_types.linear(..., out_partial_axes="tp")' in str(raised.value)


def test_the_explicit_pending_sum_runs(ranks8: Any) -> None:
    with spmd.runtime_checking() as tracker:
        x, w = _operands(ranks8)
        y = explicit_product(x, w)
        assert tracker.type_of(y) == parse("dp:R, tp:P")
        assert tracker.errors == []


def test_only_shard_preserving_collectives(ranks8: Any) -> None:
    with spmd.runtime_checking() as tracker:
        x = ranks8.typed(R["dp"], S["tp", 1], shape=(3, 4))
        assert tracker.type_of(gathered(x)) == parse("dp:R, tp:R")
        with pytest.raises(SpmdTypeCheckError, match="only the shard-preserving variants of all_gather") as raised:
            gathered_as_varying(x)
    assert raised.value.code == "spmd-global"


def test_a_partial_declaration_is_checked_at_the_boundary(ranks8: Any) -> None:
    with spmd.runtime_checking():
        x = ranks8.typed(R["dp"], P["tp"], shape=(3, 4))
        w = ranks8.typed(R["dp"], S["tp", 1], shape=(5, 4))
        with pytest.raises(SpmdTypeCheckError) as raised:
            explicit_product(x, w)
    assert raised.value.code == "spmd-boundary"


def test_without_runtime_checking_it_is_the_function(ranks8: Any) -> None:
    x, w = _operands(ranks8)
    assert global_product(x, w).shape == (3, 5)
