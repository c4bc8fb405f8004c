"""The SPMD types of Python numbers read out of tensors or computed from the rank's index."""

from __future__ import annotations

import pytest

from spmd_types.typesystem import (
    Code,
    arithmetic,
    element_count,
    global_length,
    length,
    on_a_length,
    parse,
    rank_index,
    read_out,
    through_function,
)


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


@pytest.mark.parametrize(("tensor", "dim", "ndim", "number"), [
    ("tp:S(0), dp:R", 0, None, "tp:V, *:weak"),  # the rank's piece
    ("tp:S(0), dp:S(0)", 0, None, "tp:V, dp:V, *:weak"),
    ("tp:S(0)", 1, None, "*:weak"),  # a dim no axis shards
    ("tp:S(1)", -1, None, "tp:V, *:weak"),  # may be the same dim: taken as the piece's
    ("tp:S(1)", -1, 3, "*:weak"),  # is not
    ("tp:S(-1)", 1, 2, "tp:V, *:weak"),
    ("tp:S(0)", None, None, "tp:V, *:weak"),  # a dim not known
    ("tp:R, dp:V", 0, None, "*:weak"),  # not a shard: the same length on one device
    ("tp:P", 0, None, "*:weak"),
])
def test_a_length_is_the_piece_s_on_the_axes_that_shard_its_dim(tensor: str, dim: int | None, ndim: int | None,
                                                                  number: str) -> None:
    assert length(parse(tensor), dim, ndim) == parse(number)


def test_the_element_count_is_the_piece_s_on_every_shard_axis() -> None:
    assert element_count(parse("tp:S(1), dp:S(0), cp:R")) == parse("tp:V, dp:V, *:weak")


def test_a_length_times_its_axis_size_is_the_global_length() -> None:
    local = length(parse("tp:S(0), dp:S(0)"), 0)
    assert global_length(local, ["tp"]) == parse("dp:V, *:weak")
    assert global_length(rank_index(["tp"]), ["dp"]) == rank_index(["tp"])


def test_a_violation_on_a_length_names_it_and_offers_no_fix() -> None:
    (violation,) = arithmetic("/", [parse("tp:P"), parse("tp:V, *:weak")]).violations
    said = on_a_length(violation, "x.shape[0]")
    assert said.fixes == () and said.code is violation.code
    assert said.reason.endswith('x.shape[0] reads the length of this rank\'s piece of a shard; for the global length, '
                                'multiply it by axis_size("tp")')
