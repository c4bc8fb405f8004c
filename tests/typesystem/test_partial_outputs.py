"""The rule of ``out_partial_axes=``: the op's join, then ``reinterpret(V -> P)`` on each listed axis."""

from __future__ import annotations

import pytest

from spmd_types.typesystem import (
    PARTIAL_OUTPUT_FUNCTIONS,
    UNKNOWN,
    WEAK,
    ZERO,
    AxisType,
    Code,
    I,
    Operand,
    P,
    PartialOutputFunction,
    R,
    Shard,
    SpmdType,
    V,
    check_call,
    check_partial_output,
    parse,
    partial_axes,
)

# The identity op: its local result on each axis is its operand's type, so the table reads directly.
CLONE = PartialOutputFunction("clone", "torch.clone")


@pytest.mark.parametrize(("have", "accepted"), [
    (V, True), (None, True), (ZERO, True),
    (Shard(0), False), (R, False), (I, False), (WEAK, False), (P, False),
])
def test_the_local_result_must_be_varying(have: AxisType | None, accepted: bool) -> None:
    operand = SpmdType({"tp": have} if have is not None else {}, default=have if have in (WEAK, ZERO) else None)
    outcome = check_partial_output(CLONE, [Operand("input", operand)], ("tp",))
    assert (not outcome.violations) is accepted
    assert outcome.result.get("tp") is (P if accepted else None)
    for violation in outcome.violations:
        assert violation.code is Code.PARTIAL and violation.axis == "tp"
        assert "drop 'tp' from out_partial_axes" in violation.reason


def test_it_accepts_what_the_tables_reinterpret_accepts_of_tensor_types() -> None:
    """Beyond the table: a shard is refused (its pieces are not summands); otherwise the table decides."""
    for have in (R, I, V, P, Shard(1)):
        table = not check_call("reinterpret", "tp", have, V, P).violations and not isinstance(have, Shard)
        outcome = check_partial_output(CLONE, [Operand("input", SpmdType({"tp": have}))], ("tp",))
        assert (not outcome.violations) is table, have


def test_only_the_listed_axes_become_partial() -> None:
    matmul = PARTIAL_OUTPUT_FUNCTIONS["matmul"]
    x, w = Operand("input", parse("dp:R, tp:V, cp:V")), Operand("other", parse("dp:R, tp:S(0), cp:R"))
    outcome = check_partial_output(matmul, [x, w], ("tp",))
    assert outcome.violations == () and outcome.result == parse("dp:R, tp:P, cp:V")
    both = check_partial_output(matmul, [x, w], ("tp", "cp"))
    assert both.violations == () and both.result == parse("dp:R, tp:P, cp:P")
    assert check_partial_output(matmul, [x, w], ()).result == parse("dp:R, tp:V, cp:V")


def test_a_contracted_shard_is_varying_and_a_kept_one_is_not() -> None:
    einsum = PARTIAL_OUTPUT_FUNCTIONS["einsum"]
    args = {"equation": "bk,kn->bn"}
    contracted = [Operand("args", parse("tp:S(1)"), ndim=2), Operand("args", parse("tp:S(0)"), ndim=2)]
    assert check_partial_output(einsum, contracted, ("tp",), args=args).result == parse("tp:P")
    kept = [Operand("args", parse("tp:S(0)"), ndim=2), Operand("args", parse("tp:R"), ndim=2)]
    outcome = check_partial_output(einsum, kept, ("tp",), args=args)
    assert [v.reason for v in outcome.violations] and "S(0)" in outcome.violations[0].reason


def test_the_ops_own_violation_is_reported_once() -> None:
    matmul = PARTIAL_OUTPUT_FUNCTIONS["matmul"]
    outcome = check_partial_output(matmul, [Operand("input", parse("tp:P")), Operand("other", parse("tp:P"))], ("tp",))
    assert len(outcome.violations) == 1 and "two P factors" in outcome.violations[0].reason
    assert outcome.result.get("tp") is None


def test_a_bias_is_rejected_whatever_its_type() -> None:
    linear = PARTIAL_OUTPUT_FUNCTIONS["linear"]
    for bias in ("tp:R", "tp:V", "tp:P"):
        operands = [Operand("input", parse("tp:V")), Operand("weight", parse("tp:V")), Operand("bias", parse(bias))]
        outcome = check_partial_output(linear, operands, ("tp",))
        assert [v.code for v in outcome.violations][-1:] == [Code.PARTIAL]
        assert "once per rank" in outcome.violations[-1].reason and outcome.result.get("tp") is None
    without = check_partial_output(linear, [Operand("input", parse("tp:V")), Operand("weight", parse("tp:V"))],
                                   ("tp",))
    assert without.violations == () and without.result == parse("tp:P")


def test_unknown_operands_give_a_partial_result() -> None:
    outcome = check_partial_output(PARTIAL_OUTPUT_FUNCTIONS["sum"], [Operand("input", UNKNOWN)], ("tp",))
    assert outcome.violations == () and outcome.result == parse("tp:P")


@pytest.mark.parametrize(("value", "axes"), [
    ((), ()), ("tp", ("tp",)), (("dp", "tp"), ("dp", "tp")),
    (("tp", "tp"), None), ("", None), (["tp"], None), (None, None), (("tp", 1), None),
])
def test_reading_out_partial_axes(value: object, axes: tuple[str, ...] | None) -> None:
    found, problem = partial_axes(value)
    assert found == axes
    assert (problem is None) is (axes is not None)


def test_each_function_runs_a_tabled_op() -> None:
    from spmd_types.typesystem import OPS

    for name, function in PARTIAL_OUTPUT_FUNCTIONS.items():
        assert function.name == name and function.op in OPS and function.where == f"spmd_types.{name}"
        assert set(function.renamed.values()) <= set(OPS[function.op].params)
