"""The SPMD types of Python numbers read out of tensors or computed from the rank's index."""

from __future__ import annotations

import pytest

from spmd_types.typesystem import Code, arithmetic, parse, rank_index, read_out, through_function


@pytest.mark.parametrize(("tensor", "number"), [
    ("dp:R, tp:I", "dp:weak, tp:weak"),  # the same number everywhere, outside autograd
    ("tp:V", "tp:V"),
    ("tp:S(0)", "tp:V"),  # one rank's piece
    ("tp:P", "tp:P"),  # one rank's summand
    ("*:zero", "*:zero"),
    ("tp:V, *:weak", "tp:V, *:weak"),
    ("", ""),  # unknown stays unknown
])
def test_a_number_read_out_of_a_tensor(tensor: str, number: str) -> None:
    assert read_out(parse(tensor)) == parse(number)


def test_the_rank_index_varies_on_its_axes_only() -> None:
    assert rank_index(["cp"]) == parse("cp:V, *:weak")


WEAK = parse("*:weak")


@pytest.mark.parametrize(("symbol", "operands", "result"), [
    ("*", ["tp:P", "*:weak"], "tp:P"),  # a summand times a constant is a summand
    ("/", ["tp:P", "*:weak"], "tp:P"),
    ("unary -", ["tp:P"], "tp:P"),
    ("+", ["tp:V, *:weak", "*:weak"], "tp:V, *:weak"),
    ("+", ["tp:P", "tp:P"], "tp:P"),
    ("//", ["tp:V, *:weak", "*:weak"], "tp:V, *:weak"),  # not linear, but V stays V
])
def test_arithmetic_follows_the_operator_rules(symbol: str, operands: list[str], result: str) -> None:
    outcome = arithmetic(symbol, [parse(t) for t in operands])
    assert outcome.violations == () and outcome.result == parse(result)


@pytest.mark.parametrize(("symbol", "operands"), [
    ("+", ["tp:P", "*:weak"]),  # the constant is added once per rank
    ("*", ["tp:P", "tp:P"]),  # a product of two sums is not the sum of products
    ("**", ["tp:P", "*:weak"]),
    ("<", ["tp:P", "*:weak"]),  # a comparison is a function that is not linear
])
def test_a_pending_sum_where_the_number_is_not_linear_in_it(symbol: str, operands: list[str]) -> None:
    (violation,) = arithmetic(symbol, [parse(t) for t in operands]).violations
    assert violation.code is Code.PARTIAL
    assert violation.fixes == ()  # a collective cannot be applied to a Python number
    assert violation.reason.endswith("reduce the tensor before reading the number out of it")


def test_a_function_of_numbers_is_not_linear() -> None:
    assert through_function([parse("tp:V, *:weak"), WEAK]).result == parse("tp:V, *:weak")
    (violation,) = through_function([parse("tp:P")]).violations
    assert violation.code is Code.PARTIAL
