"""``@global_spmd`` under runtime checking, on simulated ranks: the global rules at run time.

Inside a decorated function an op on shards must keep them (a contraction
over a sharded dim only through ``out_partial_axes=``), and collectives and
casts are only their shard-preserving variants; the errors are the checker's
(``spmd-global``).  The same code outside it is local SPMD and runs.  The
declarations are checked at each call as ``@checked`` checks them; a
``PartitionSpec`` declares ``R`` on the mesh axes it does not name.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import P, PartitionSpec, R, S, V  # noqa: E402
from spmd_types._declarations import OnMesh, tree_of  # noqa: E402
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


Columns = Annotated[Tensor, PartitionSpec(None, "tp")]  # names no dp: replicated there


@spmd.global_spmd
def scaled(x: Columns) -> Columns:
    return x * 2


@spmd.global_spmd
def scaled_markers(x: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, S["tp", 1]]:
    return x * 2


@spmd.global_spmd
def cut_on_dp(x: Columns) -> Columns:
    return spmd.convert(x, "dp", src=R, dst=S(0))


def test_a_spec_annotation_is_replicated_on_the_mesh_axes_it_does_not_name(ranks8: Any) -> None:
    with spmd.runtime_checking() as tracker:
        replicated = ranks8.typed(R["dp"], S["tp", 1], shape=(3, 4))
        y = scaled(replicated)
        assert tracker.type_of(y) == parse("dp:R, tp:S(1)")
        varying = ranks8.typed(V["dp"], S["tp", 1], shape=(3, 4))
        with pytest.raises(SpmdTypeCheckError, match="axis 'dp'") as raised:
            scaled(varying)
    assert raised.value.code == "spmd-boundary"


def test_markers_alone_name_the_axes_they_talk_about(ranks8: Any) -> None:
    with spmd.runtime_checking() as tracker:
        y = scaled_markers(ranks8.typed(V["dp"], S["tp", 1], shape=(3, 4)))
        assert tracker.errors == [] and tracker.type_of(y) == parse("tp:S(1)")


def test_a_returned_value_is_replicated_on_the_axes_the_spec_does_not_name(ranks8: Any) -> None:
    with spmd.runtime_checking(), pytest.raises(SpmdTypeCheckError, match="axis 'dp'") as raised:
        cut_on_dp(ranks8.typed(R["dp"], S["tp", 1], shape=(4, 4)))
    assert raised.value.code == "spmd-boundary"


def test_without_a_current_mesh_a_spec_declares_the_axes_it_names() -> None:
    tree = tree_of(Columns)
    assert isinstance(tree, OnMesh) and tree.on_current_mesh() == parse("tp:S(1)")


@spmd.global_spmd
def transposed(w: Annotated[Tensor, PartitionSpec((2, "tp"), None)]) -> Annotated[Tensor, PartitionSpec(None, (2, "tp"))]:
    return w.t()


def test_a_strided_spec_is_its_per_axis_types_at_the_boundaries(ranks8: Any) -> None:
    with spmd.runtime_checking() as tracker:
        assert tracker.type_of(transposed(ranks8.typed(R["dp"], S["tp", 0], shape=(4, 3)))) == parse("dp:R, tp:S(1)")
        with pytest.raises(SpmdTypeCheckError, match="axis 'dp'"):
            transposed(ranks8.typed(V["dp"], S["tp", 0], shape=(4, 3)))
