"""Runtime checking, ordinary torch ops: the op table of the rule core, applied to tracked types.

Types enter through ``assert_type`` (which tags the tensor itself); no mesh is
needed, since ordinary ops do not communicate.  Each violation carries the
plugin's error code, and its message is the plugin's up to how operands are
spelled (the runtime names them by parameter: ``input``, ``other``).
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from typing import Annotated

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types.typesystem import SpmdType, parse  # noqa: E402


def typed(*markers: object, shape: tuple[int, ...] = (4, 4)) -> torch.Tensor:
    return spmd.assert_type(torch.randn(*shape), *markers)  # type: ignore[arg-type]


def test_off_by_default_nothing_is_tracked_or_checked() -> None:
    p, i = typed(P["tp"]), typed(I["tp"])
    (p + i).exp()  # no checking outside the block
    with spmd.runtime_checking() as tracker:
        assert tracker.type_of(p) is None  # assert_type outside the block tagged nothing


def test_joins_follow_the_table() -> None:
    with spmd.runtime_checking() as tracker:
        r, v, p = typed(R["tp"], V["dp"]), typed(V["tp"], R["dp"]), typed(P["tp"], R["dp"])
        assert tracker.type_of(r + v) == parse("dp:V, tp:V")
        assert tracker.type_of(p + p) == parse("dp:R, tp:P")
        assert tracker.type_of(p * r.sum()) == SpmdType({"tp": P, "dp": V})
        assert tracker.type_of(F.linear(p, typed(R["tp"], R["dp"]))) == parse("dp:R, tp:P")
        assert tracker.type_of(torch.cat([p, p]).view(4, -1).T) == parse("dp:R, tp:P")
        assert tracker.type_of(torch.where(typed(R["tp"], R["dp"]) > 0, p, p)) == parse("dp:R, tp:P")
        assert tracker.type_of(torch.where(r > 0, p, p)) == parse("dp:V, tp:P")  # a varying selector varies
        assert tracker.type_of(F.gelu(r)) == parse("dp:V, tp:R")


def test_constants_are_weak_and_zeros_fit_a_partial_sum() -> None:
    with spmd.runtime_checking() as tracker:
        p = typed(P["tp"])
        assert tracker.type_of(torch.ones(3)) == SpmdType(default=spmd.typesystem.WEAK)
        assert tracker.type_of(p + torch.zeros(4, 4)) == parse("tp:P")
        assert tracker.type_of(p + 0) == parse("tp:P")
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            p + 1
    assert caught.value.code == "spmd-partial"
    assert "P plus a non-partial term (weak), which would be added once per rank" in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "code", "text"),
    [
        (lambda t: t["i"] + t["r"], "spmd-mix", ".add on axis 'tp': I does not mix with R"),
        (lambda t: t["p"] * t["v"], "spmd-mix", "P (a pending sum) does not mix with V (per-rank data)"),
        (lambda t: t["p"] @ t["p"], "spmd-partial", "a product of two P factors"),
        (lambda t: torch.exp(t["p"]), "spmd-partial", "torch.exp on axis 'tp': P (a pending sum) through a non-linear op"),
        (lambda t: t["r"] / t["p"], "spmd-partial", "P (a pending sum) as an argument the op is not linear in"),
        (lambda t: t["v"][t["p"] > 0], "spmd-partial", "as an index, mask, condition or comparison operand"),
        (lambda t: F.linear(t["i"], t["s"]), "spmd-mix", "torch.nn.functional.linear on axis 'tp': I does not mix with S(0)"),
    ],
)
def test_violations_carry_the_plugins_code_and_reason(expression, code, text) -> None:
    with spmd.runtime_checking():
        tensors = {"i": typed(I["tp"]), "r": typed(R["tp"]), "v": typed(V["tp"]), "p": typed(P["tp"]),
                   "s": typed(S["tp", 0])}
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            expression(tensors)
    assert caught.value.code == code
    assert text in str(caught.value)
    assert str(caught.value).endswith(f"  [{code}]")


def test_a_fix_names_the_operand_by_its_parameter() -> None:
    with spmd.runtime_checking():
        x, w = typed(I["tp"]), typed(S["tp", 0])
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            F.linear(x, w)
    assert 'fix: convert(input, "tp", src=I, dst=R) (no-op forward, all-reduce in backward)' in str(caught.value)


def test_the_error_is_raised_before_an_in_place_op_writes() -> None:
    with spmd.runtime_checking():
        r, v = typed(R["tp"]), typed(V["tp"])
        before = r.clone()
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            r.add_(v)
        assert torch.equal(r, before)
    assert caught.value.code == "spmd-inplace"
    # The plugin's expectation for the same line (tests/plugin/cases/inplace_backward_branches.py).
    assert ".add_ on axis 'tp': writes a value of type V into a tensor of type R" in str(caught.value)


def test_in_place_writes_and_out_keep_the_target_type() -> None:
    with spmd.runtime_checking() as tracker:
        r, v = typed(R["tp"]), typed(V["tp"])
        v.add_(r)
        assert tracker.type_of(v) == parse("tp:V")
        with pytest.raises(spmd.SpmdTypeCheckError, match="writes a value of type V into a tensor of type R"):
            r[0] = v[0]
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            torch.add(r, r, out=v)
        assert "torch.add(out=...) on axis 'tp': writes a value of type R into a tensor of type V" in str(caught.value)
        out = torch.empty(4, 4)
        torch.add(v, v, out=out)  # an untyped target takes anything
        assert tracker.type_of(out) is None


def test_a_constant_buffer_written_in_place_holds_what_was_written() -> None:
    """As for the plugin (tests/plugin/cases/soundness.py): such a buffer is no longer a constant, and unknown."""
    with spmd.runtime_checking() as tracker:
        v, p = typed(V["tp"]), typed(P["tp"])
        acc = torch.zeros(4, 4)
        acc.add_(v)
        assert tracker.type_of(acc) is None
        buf = torch.zeros(4, 4)
        buf[0] = -100
        out = torch.zeros(4, 4)
        torch.cumsum(v, 0, out=out)
        assert tracker.type_of(buf) is None and tracker.type_of(out) is None
        with pytest.raises(spmd.SpmdTypeCheckError, match="writes a value of type weak into a tensor of type P"):
            p.fill_(1.0)  # a typed tensor still keeps its type


def test_unknown_operands_make_unknown_results_without_errors() -> None:
    with spmd.runtime_checking() as tracker:
        p, plain = typed(P["tp"]), torch.randn(4, 4)
        assert tracker.type_of(p + plain) is None
        assert tracker.type_of(torch.exp(plain)) is None
        assert tracker.type_of(torch.empty(3)) is None  # fresh data: unknown
        assert tracker.type_of(typed(R["dp"]) + typed(R["tp"])) is None  # each axis unknown on one side


def test_several_outputs_each_get_the_type_and_non_tensor_results_are_not_checked() -> None:
    with spmd.runtime_checking() as tracker:
        v, p = typed(V["tp"]), typed(P["tp"])
        values, indices = v.max(dim=-1)
        assert tracker.type_of(values) == tracker.type_of(indices) == parse("tp:V")
        assert all(tracker.type_of(part) == parse("tp:P") for part in p.split(2))
        assert isinstance(p.sum().item(), float)  # reading a number out is not an op on P
        assert p.shape == (4, 4) and p.dim() == 2
        assert tracker.type_of(copy.deepcopy(p)) is None  # copying is not an op of the table
        assert tracker.type_of(p.grad) is None


def test_detach_of_replicated_data_is_a_constant() -> None:
    with spmd.runtime_checking() as tracker:
        r, p = typed(R["tp"]), typed(P["tp"])
        assert tracker.type_of(r.detach()) == parse("tp:weak")
        assert tracker.type_of(p * r.detach()) == parse("tp:P")  # a constant factor of a partial sum


def test_without_autograd_replicated_and_invariant_data_coincide() -> None:
    """Under ``torch.no_grad()`` (as in an autograd Function's ``forward``) only the rules on values hold."""
    with spmd.runtime_checking() as tracker, torch.no_grad():
        i, v = typed(I["tp"]), typed(V["tp"])
        assert tracker.type_of(i + v) == parse("tp:V")
        with pytest.raises(spmd.SpmdTypeCheckError, match="P \\(a pending sum\\) through a non-linear op"):
            torch.exp(typed(P["tp"]))


def test_collecting_instead_of_raising_goes_on_with_an_unknown_axis() -> None:
    with spmd.runtime_checking(raise_errors=False) as tracker:
        i, r = typed(I["tp"], V["dp"]), typed(R["tp"], V["dp"])
        mixed = i + r
        assert tracker.type_of(mixed) == parse("dp:V")  # unknown on tp, where the rule broke
        torch.exp(typed(P["cp"]))
    assert [e.code for e in tracker.errors] == ["spmd-mix", "spmd-partial"]
    assert tracker.errors[0].violation is not None and tracker.errors[0].violation.axis == "tp"


def test_a_nested_block_joins_the_outer_one() -> None:
    with spmd.runtime_checking(raise_errors=False) as outer, spmd.runtime_checking() as inner:
        assert inner is outer
        typed(I["tp"]) + typed(R["tp"])
    assert len(outer.errors) == 1


def test_assert_type_checks_what_is_tracked_then_tags() -> None:
    with spmd.runtime_checking() as tracker:
        v = typed(V["tp"], R["dp"])
        spmd.assert_type(v, S["tp", 0])
        assert tracker.type_of(v) == parse("tp:S(0)")  # as in the plugin: the asserted axes only
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            spmd.assert_type(v, S["tp", 1])
    assert caught.value.code == "spmd-boundary"
    assert "assert_type on axis 'tp': expected S(1), got S(0)" in str(caught.value)


@pytest.mark.parametrize(("backend", "checked"), [("eager", True), ("aot_eager", False)])
def test_a_compiled_function_is_checked_where_it_runs_torch_functions(backend, checked) -> None:
    compiled = torch.compile(lambda x: torch.exp(x) + 1, backend=backend, fullgraph=True)
    compiled(torch.randn(3))  # traced outside the block
    with spmd.runtime_checking(raise_errors=False) as tracker:
        out = compiled(typed(R["tp"]))
        compiled(typed(P["tp"]))
    assert (tracker.type_of(out) == parse("tp:R")) is checked
    assert [e.code for e in tracker.errors] == (["spmd-partial"] if checked else [])


_PROGRAM = """
import torch, spmd_types as spmd
from spmd_types import P
with spmd.runtime_checking() as tracker:  # joins the process-wide checking, if any
    p = spmd.assert_type(torch.randn(2), P["tp"])  # fresh data: unknown until asserted
    try:
        torch.exp(p)
        print("not checked", tracker.type_of(p))
    except spmd.SpmdTypeCheckError as error:
        print(error.code)
"""


@pytest.mark.parametrize(("setting", "printed"), [("1", "spmd-partial"), ("0", "not checked None")])
def test_the_environment_variable_switches_checking_on_for_the_process_or_off_everywhere(setting, printed) -> None:
    done = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True, check=True,
                          env={**os.environ, "SPMD_TYPES_CHECK": setting})
    assert done.stdout.strip() == printed


def test_a_shard_follows_its_dim() -> None:
    with spmd.runtime_checking() as tracker:
        x = typed(S["tp", 0], R["dp"], shape=(4, 3, 2))
        assert tracker.type_of(x.transpose(0, 1)) == parse("dp:R, tp:S(1)")
        assert tracker.type_of(x.permute(2, 0, 1)) == parse("dp:R, tp:S(1)")
        assert tracker.type_of(x.T) == parse("dp:R, tp:S(2)")
        assert tracker.type_of(x[:, None]) == parse("dp:R, tp:S(0)")
        assert tracker.type_of(x[None, 0]) == parse("dp:R, tp:V")  # picks rank-local rows
        assert tracker.type_of(x.reshape(-1, 2)) == parse("dp:R, tp:S(0)")  # the outer factor of the merge
        assert tracker.type_of(x.view(4, 6)) == parse("dp:R, tp:S(0)")
        assert tracker.type_of(x.flatten(1)) == parse("dp:R, tp:S(0)")
        assert tracker.type_of(x.sum(-1) * 2.0) == parse("dp:R, tp:S(0)")
        assert tracker.type_of(torch.einsum("abc,cd->dab", x, typed(R["tp"], R["dp"], shape=(2, 5)))) == parse(
            "dp:R, tp:S(1)")
        y = typed(S["tp", 1], shape=(4, 3, 2))
        assert tracker.type_of(y.flatten(0, 1)) == parse("tp:V")  # an inner factor: per-rank data, not a shard


def test_a_shard_on_another_dim_does_not_fit_the_declaration() -> None:
    @spmd.checked
    def rows(x: Annotated[torch.Tensor, S["tp", 0]]) -> Annotated[torch.Tensor, S["tp", 0]]:
        return x.transpose(0, 1)

    @spmd.checked
    def last(x: Annotated[torch.Tensor, S["tp", -1]]) -> Annotated[torch.Tensor, S["tp", 2]]:
        return x  # the same dim of a 3-D tensor, written two ways

    with spmd.runtime_checking():
        last(typed(S["tp", 2], shape=(2, 3, 4)))
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            rows(typed(S["tp", 0], shape=(4, 3)))
    assert caught.value.code == "spmd-boundary"
    assert "expected S(0), got S(1)" in str(caught.value)


def test_an_infinite_fill_and_a_summing_scatter_fit_a_partial_sum() -> None:
    """As for the plugin (tests/plugin/cases/ops_fills_and_scatters.py)."""
    with spmd.runtime_checking() as tracker:
        p, r = typed(P["tp"]), typed(R["tp"])
        index = torch.zeros(4, 4, dtype=torch.long)
        assert tracker.type_of(p.masked_fill(r > 0, float("-inf"))) == parse("tp:P")
        assert tracker.type_of(torch.where(r > 0, p, float("inf"))) == parse("tp:P")
        assert tracker.type_of(p.scatter_reduce(0, index, p, reduce="sum")) == parse("tp:P")
        assert tracker.type_of(torch.zeros(4).masked_fill(torch.ones(4) > 0, float("-inf"))) == SpmdType(
            default=spmd.typesystem.WEAK)  # an infinity is no zero
        for wrong in (lambda: p.masked_fill(r > 0, -1e4), lambda: p.scatter_reduce(0, index, p, reduce="amax")):
            with pytest.raises(spmd.SpmdTypeCheckError) as caught:
                wrong()
            assert caught.value.code == "spmd-partial"


def test_frequencies_counted_over_this_rank_s_indices_are_reported() -> None:
    """As for the plugin (tests/plugin/cases/statistics.py)."""
    with spmd.runtime_checking():
        ids, table = spmd.assert_type(torch.tensor([0, 1, 1]), V["dp"]), typed(R["dp"])
        F.embedding(ids, table)  # without the counts, the rows of this rank's ids: fine
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            F.embedding(ids, table, scale_grad_by_freq=True)
    assert caught.value.code == "spmd-mix"
    assert "scale_grad_by_freq=True counts this rank's indices" in str(caught.value)


def test_running_statistics_updated_with_this_rank_s_batch_are_reported() -> None:
    """As for the plugin (tests/plugin/cases/statistics.py)."""
    with spmd.runtime_checking():
        x = typed(V["dp"], shape=(4, 3))
        F.batch_norm(x, torch.zeros(3), torch.ones(3), training=False)  # reads them only: fine
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            F.batch_norm(x, torch.zeros(3), torch.ones(3), training=True)
    assert caught.value.code == "spmd-inplace"
    assert "running_mean is updated in place with statistics of type V" in str(caught.value)
