"""Axes of size one, and type variables restricted to a list of SPMD types."""

from __future__ import annotations

import pytest

from spmd_types.typesystem import (
    I,
    R,
    SpmdType,
    V,
    check_fits,
    check_fits_one_of,
    merge_guarded_paths,
    on_size_one,
    parse,
    size_one_when,
)


@pytest.mark.parametrize(
    ("operator", "bound", "branch"),
    [("==", 1, True), ("<=", 1, True), ("<", 2, True), ("!=", 1, False), (">", 1, False), (">=", 2, False),
     ("==", 2, None), ("<", 1, None), (">", 2, None)],
)
def test_which_branch_has_one_rank(operator: str, bound: int, branch: bool | None) -> None:
    assert size_one_when(operator, bound) is branch


def test_only_the_tested_axis_is_forgiven() -> None:
    violations = check_fits(parse("dp:V, tp:V"), parse("dp:R, tp:R"))
    assert {v.axis for v in on_size_one(violations, frozenset({"tp"}))} == {"dp"}
    assert on_size_one(violations, frozenset({"dp", "tp"})) == ()


def test_a_branch_run_with_one_rank_takes_the_other_branch_type_on_that_axis() -> None:
    one = frozenset({"tp"})
    assert merge_guarded_paths([(parse("tp:V"), frozenset()), (parse("tp:R"), one)]) == parse("tp:V")
    assert merge_guarded_paths([(parse("tp:R"), one), (parse("tp:I"), frozenset())]) == parse("tp:I")
    # Only that axis: dp still has to agree.
    assert merge_guarded_paths([(parse("dp:R, tp:V"), frozenset()), (parse("dp:V, tp:R"), one)]) is None
    # Without a guard the branches disagree, as merge_paths says.
    assert merge_guarded_paths([(parse("tp:V"), frozenset()), (parse("tp:R"), frozenset())]) is None


def test_a_restricted_variable_takes_any_listed_type_and_other_axes_pass() -> None:
    allowed = [SpmdType({"tp": t}) for t in (R, I, V)]
    assert check_fits_one_of(parse("dp:P, tp:V"), allowed) == ()  # dp is not listed: unknown to the restriction
    assert check_fits_one_of(parse("dp:R"), allowed) == ()  # tp unknown on the value
    (violation,) = check_fits_one_of(parse("tp:P"), allowed)
    assert violation.axis == "tp" and "expected one of R, I, V, got P" in violation.reason


def test_a_cross_product_restriction_is_checked_as_a_whole() -> None:
    allowed = [parse("dp:R, tp:R"), parse("dp:V, tp:V")]
    assert check_fits_one_of(parse("dp:R, tp:R"), allowed) == ()
    assert check_fits_one_of(parse("dp:R, tp:V"), allowed) != ()
