"""Rules that depend on an op's literal arguments, and on what it writes besides its result."""

from __future__ import annotations

import math

from spmd_types.typesystem import (
    UNKNOWN,
    Code,
    Operand,
    absorbed,
    apply_op,
    lookup,
    parse,
    passed_literal,
    writes_through,
    written_buffer,
)

P_TP, R_TP, WEAK = parse("tp:P"), parse("tp:R"), parse("*:weak")


def test_an_infinite_fill_leaves_the_join_and_a_finite_one_does_not() -> None:
    rule = lookup("torch.Tensor.masked_fill")
    assert absorbed(rule, "value", -math.inf) and absorbed(rule, "value", math.inf)
    assert not absorbed(rule, "value", -1e4) and not absorbed(rule, "mask", -math.inf)
    assert not absorbed(lookup("torch.add"), "other", -math.inf)  # not a fill: -inf + p is no sum of ranks


def test_scatter_reduce_is_linear_only_with_a_summing_reduction() -> None:
    rule = lookup("torch.Tensor.scatter_reduce")
    operands = [Operand("input", P_TP), Operand("src", P_TP)]
    summed = apply_op(rule, operands, {"reduce", passed_literal("reduce", "sum")})
    assert summed.violations == () and summed.result == P_TP
    (violation, *_) = apply_op(rule, operands, {"reduce", passed_literal("reduce", "amax")}).violations
    assert violation.code is Code.PARTIAL


def test_running_statistics_must_fit_what_the_batch_gives() -> None:
    rule = lookup("torch.nn.functional.batch_norm")
    operands = [Operand("input", parse("dp:S(0)")), Operand("running_mean", WEAK), Operand("running_var", WEAK)]
    training = {"training", passed_literal("training", True)}
    assert [v.code for v in apply_op(rule, operands, training).violations] == [Code.INPLACE, Code.INPLACE]
    assert apply_op(rule, operands, {"training", passed_literal("training", False)}).violations == ()
    whole = [Operand("input", parse("dp:R")), *operands[1:]]
    assert apply_op(rule, whole, training).violations == ()  # R statistics, without gradient: weak


def test_frequencies_need_indices_the_same_on_every_rank() -> None:
    rule = lookup("torch.nn.functional.embedding")
    counted = {"scale_grad_by_freq", passed_literal("scale_grad_by_freq", True)}
    (violation,) = apply_op(rule, [Operand("input", parse("dp:V")), Operand("weight", parse("dp:R"))], counted).violations
    assert violation.code is Code.MIX and "this rank's indices" in violation.reason
    assert apply_op(rule, [Operand("input", parse("dp:I")), Operand("weight", parse("dp:R"))], counted).violations == ()


def test_a_buffer_of_zeros_written_in_place_is_unknown_and_other_constants_stay() -> None:
    assert written_buffer(parse("*:zero")) == UNKNOWN
    assert written_buffer(WEAK) == WEAK


def test_a_write_into_reinterpret_s_result_must_fit_its_input() -> None:
    add_, mul_ = lookup("torch.Tensor.add_"), lookup("torch.Tensor.mul_")
    (violation,) = writes_through(add_, [Operand("input", parse("tp:V")), Operand("other", parse("tp:V"))], R_TP)
    assert violation.code is Code.INPLACE and violation.fixes == ()
    assert writes_through(mul_, [Operand("input", parse("tp:V")), Operand("other", WEAK, 0)], R_TP) == ()
