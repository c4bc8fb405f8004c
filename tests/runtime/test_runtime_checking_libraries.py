"""Runtime checking types Megatron's mapping functions as the calls the core's ecosystem table says they are.

The plugin types ``copy_to_tensor_model_parallel_region(x)`` as
``reinterpret(x, "tp", src=I, dst=R)``; under runtime checking a call of the
function is checked and typed the same way, through whatever name the caller
bound it to, and the function is put back when checking ends.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
mappings = pytest.importorskip("megatron.core.tensor_parallel.mappings",
                               reason="megatron-core is installed by `make setup`; run the suite through make")
from megatron.core.tensor_parallel import (  # noqa: E402
    copy_to_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
)

import spmd_types as spmd  # noqa: E402
from spmd_types import I, V  # noqa: E402
from spmd_types.typesystem import parse  # noqa: E402

ORIGINAL = mappings.copy_to_tensor_model_parallel_region


def test_a_mapping_function_is_typed_as_its_equivalent_through_an_imported_name(ranks8) -> None:
    with spmd.runtime_checking() as tracker:
        x = ranks8.typed(I["tp"], V["dp"])
        # Called through this module's own name for it, with Megatron's default group: the axis "tp".
        y = copy_to_tensor_model_parallel_region(x)
        assert tracker.type_of(y) == parse("dp:V, tp:R")
        z = mappings.reduce_from_tensor_model_parallel_region(ranks8.typed(V["tp"]), group=ranks8.mesh.get_group("tp"))
        assert tracker.type_of(z) == parse("tp:I")
    assert copy_to_tensor_model_parallel_region is ORIGINAL
    assert mappings.copy_to_tensor_model_parallel_region is ORIGINAL


def test_a_wrong_source_type_is_reported_as_the_plugin_reports_it(ranks8) -> None:
    with spmd.runtime_checking() as tracker, pytest.raises(spmd.SpmdTypeCheckError) as caught:
        reduce_from_tensor_model_parallel_region(ranks8.typed(I["tp"]))
    assert caught.value.code == "spmd-collective"
    assert str(caught.value).startswith(
        "reduce_from_tensor_model_parallel_region (that is, all_reduce(src=P, dst=I)) on axis 'tp': the input is I"
    )
    assert not tracker.errors


def test_the_group_passed_names_the_axis(ranks8) -> None:
    with spmd.runtime_checking() as tracker:
        x = ranks8.typed(I["tp"])
        y = copy_to_tensor_model_parallel_region(x, group=ranks8.mesh.get_group("dp"))
        assert tracker.type_of(y) == parse("dp:R, tp:I")  # x was unknown on dp: any source is accepted there


def test_a_call_without_its_group_runs_on_the_axis_it_is_checked_on(ranks8) -> None:
    """Megatron's parallel state is not set up here: the call gets the mesh's "tp" group, as the checker assumed."""
    with spmd.runtime_checking() as tracker:
        x = ranks8.typed(V["tp"])  # rank + 1 on every rank; tp groups are {4d, ..., 4d + 3}
        y = reduce_from_tensor_model_parallel_region(x)
        assert tracker.type_of(y) == parse("tp:I")
    sums = {rank: float(y._local_tensors[rank][0, 0]) for rank in range(8)}
    assert sums == {rank: 10.0 if rank < 4 else 26.0 for rank in range(8)}
