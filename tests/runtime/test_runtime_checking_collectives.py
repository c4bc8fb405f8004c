"""Runtime checking, collectives and casts: ``src=`` against the tracked type, the result from the core's table.

Runs on the simulated 2x4 ``("dp", "tp")`` mesh under ``LocalTensorMode``.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types.typesystem import WEAK, SpmdType, parse  # noqa: E402


def test_a_reduction_of_replicated_data_is_refused_before_it_runs(ranks8) -> None:
    with spmd.runtime_checking():
        r = ranks8.typed(R["tp"])
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            spmd.all_reduce(r, "tp", src=P, dst=R)
    assert caught.value.code == "spmd-collective"
    assert str(caught.value).startswith(
        "all_reduce on axis 'tp': the input is R but all_reduce was told src=P; summing R data over the axis "
        "multiplies it by the axis size; the input is already R, so the call is not needed"
    )


@pytest.mark.parametrize(
    ("call", "have", "kwargs", "want"),
    [
        ("all_reduce", P["tp"], {"dst": R}, "dp:V, tp:R"),
        ("all_reduce", V["tp"], {"src": V, "dst": I}, "dp:V, tp:I"),
        ("all_reduce", V["tp"], {"src": V, "dst": R, "op": "max"}, "dp:V, tp:weak"),
        ("all_gather", S["tp", 1], {"src": S(1), "dst": R}, "dp:V, tp:R"),
        ("all_gather", V["tp"], {"dst": I}, "dp:V, tp:I"),
        ("reduce_scatter", P["tp"], {"dst": S(1)}, "dp:V, tp:S(1)"),
        ("all_to_all", S["tp", 1], {"src": S(1), "dst": S(0)}, "dp:V, tp:S(0)"),
        ("convert", I["tp"], {"src": I, "dst": R}, "dp:V, tp:R"),
        ("convert", R["tp"], {"src": R, "dst": S(0)}, "dp:V, tp:S(0)"),
        ("reinterpret", V["tp"], {"src": V, "dst": P}, "dp:V, tp:P"),
        ("redistribute", P["tp"], {"src": P, "dst": R}, "dp:V, tp:R"),
    ],
)
def test_the_result_has_dst_on_the_axis_and_keeps_the_other_axes(ranks8, call, have, kwargs, want) -> None:
    with spmd.runtime_checking() as tracker:
        x = ranks8.typed(have, V["dp"])
        out = getattr(spmd, call)(x, "tp", **kwargs)
        assert tracker.type_of(out) == parse(want)


def test_ppermute_keeps_a_varying_type_and_refuses_a_replicated_one(ranks8) -> None:
    ring = [(k, (k + 1) % 4) for k in range(4)]
    with spmd.runtime_checking() as tracker:
        assert tracker.type_of(spmd.ppermute(ranks8.typed(S["tp", 0]), "tp", ring)) == parse("tp:V")
        with pytest.raises(spmd.SpmdTypeCheckError, match="the input is R but ppermute was told src=V"):
            spmd.ppermute(ranks8.typed(R["tp"]), "tp", ring)


def test_an_untracked_input_gets_a_known_type_from_the_call(ranks8) -> None:
    with spmd.runtime_checking() as tracker:
        x = ranks8.mode.rank_map(lambda rank: torch.full((4, 8), float(rank)))
        assert tracker.type_of(spmd.all_reduce(x, "tp", src=V, dst=R)) == parse("tp:R")
        constant = torch.arange(4.0)
        assert tracker.type_of(spmd.convert(constant, "tp", src=R, dst=V)) == SpmdType({"tp": V}, default=WEAK)


def test_a_process_group_or_a_one_dim_mesh_names_its_axis(ranks8) -> None:
    device_mesh = ranks8.mesh
    with spmd.runtime_checking() as tracker:
        p = ranks8.typed(P["tp"], V["dp"])
        assert tracker.type_of(spmd.all_reduce(p, device_mesh.get_group("tp"), dst=R)) == parse("dp:V, tp:R")
        assert tracker.type_of(spmd.all_reduce(p, device_mesh["tp"], dst=I)) == parse("dp:V, tp:I")
        s = ranks8.typed(S["dp", 1])
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            spmd.all_gather(s, device_mesh.get_group("dp"), src=S(0), dst=R)
    assert "axis 'dp': the input is S(1) but all_gather was told src=S(0) (sharded along another dim)" in str(
        caught.value)


def test_the_ops_inside_a_collective_are_not_checked(ranks8) -> None:
    with spmd.runtime_checking(raise_errors=False) as tracker:
        x = ranks8.typed(I["tp"])
        spmd.convert(x, "tp", src=I, dst=P)  # masks with zeros_like and per-rank selects on I data
        spmd.convert(ranks8.typed(V["tp"]), "tp", src=V, dst=P)  # pads V data with zeros
    assert tracker.errors == []


def test_a_bad_pair_is_still_rejected_by_the_call_itself(ranks8) -> None:
    with spmd.runtime_checking():
        with pytest.raises(spmd.CollectiveArgumentError, match="all_reduce does not accept src=P, dst=V"):
            spmd.all_reduce(ranks8.typed(P["tp"]), "tp", src=P, dst=V)


def test_collecting_errors_still_runs_the_collective(ranks8) -> None:
    with spmd.runtime_checking(raise_errors=False) as tracker:
        r = ranks8.typed(R["tp"])
        out = spmd.all_reduce(r, "tp", dst=R)
        assert tracker.type_of(out) == parse("tp:R")
    assert [e.code for e in tracker.errors] == ["spmd-collective"]
    assert float(out._local_tensors[0][0, 0]) == 1 + 2 + 3 + 4  # ranks 0-3 form one tp group


def test_a_replicated_summand_of_a_reduced_sum_is_reported(ranks8) -> None:
    """The core's summation rule: V + R is a fine V, but summing it over the axis counts R once per rank."""
    with spmd.runtime_checking() as tracker:
        v, w, r = ranks8.typed(V["tp"]), ranks8.typed(S["tp", 1], shape=(4, 4)), ranks8.typed(R["tp"], shape=(8, 4))
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            spmd.all_reduce(F.linear(v, w) + r, "tp", src=V, dst=R)
        assert str(caught.value) == (
            "all_reduce on axis 'tp': other (R) is added to per-rank values before all_reduce sums them over the "
            "axis, so it is counted once per rank; add it after the reduction  [spmd-partial]")
        with pytest.raises(spmd.SpmdTypeCheckError, match=r"bias \(R\) is added to per-rank values before reinterpret"):
            spmd.reinterpret(F.linear(v, w, r[0]), "tp", src=V, dst=P)
        # Fine: only per-rank summands, an average, and the term added after the reduction.
        spmd.all_reduce(F.linear(v, w) + v - v, "tp", src=V, dst=R)
        spmd.all_reduce(F.linear(v, w) + r, "tp", src=V, dst=R, op="avg")
        out = spmd.all_reduce(F.linear(v, w), "tp", src=V, dst=R) + r
        assert tracker.type_of(out) == parse("tp:R")


def test_a_call_over_several_axes_is_checked_and_typed_on_each(ranks8) -> None:
    with spmd.runtime_checking() as tracker:
        p = ranks8.typed(P["dp"], P["tp"], shape=(8,))
        assert tracker.type_of(spmd.all_reduce(p, ("dp", "tp"), src=P, dst=R)) == parse("dp:R, tp:R")
        with pytest.raises(spmd.SpmdTypeCheckError, match="all_reduce on axis 'dp': the input is R but all_reduce"):
            spmd.all_reduce(ranks8.typed(R["dp"], P["tp"], shape=(8,)), ("dp", "tp"), src=P, dst=R)
