"""Applying a printed fix: each form of :mod:`tests.fixes.rewrite`, and what it refuses."""

from __future__ import annotations

import pytest

pytest.importorskip("libcst")

from tests.fixes.rewrite import NotApplicable, apply_fix

SOURCE = '''def f(partial, bias):
    y = 1
    return all_reduce(partial + self.fc2_bias, "tp", dst=I)
'''
COST = " (no-op forward, all-reduce in backward)"


def test_a_call_goes_around_its_operand_and_its_names_are_imported() -> None:
    fixed = apply_fix(SOURCE, 3, 'convert(self.fc2_bias, "tp", src=I, dst=P)' + COST)
    assert 'all_reduce(partial + convert(self.fc2_bias, "tp", src=I, dst=P), "tp", dst=I)' in fixed
    assert fixed.endswith("from spmd_types import I, P, convert\n")  # appended: no line moves


def test_a_replacing_call_takes_the_place_of_the_named_call() -> None:
    fixed = apply_fix(SOURCE, 3, 'all_reduce(partial + self.fc2_bias, "tp", src=P, dst=R) replacing the all_reduce call'
                      + COST)
    assert fixed.splitlines()[2] == '    return all_reduce(partial + self.fc2_bias, "tp", src=P, dst=R)'


def test_an_assignment_replaces_the_statement() -> None:
    fixed = apply_fix("p = 1\ndist.all_reduce(p, group=g)\n", 2, 'p = all_reduce(p, "tp", src=P, dst=R)' + COST)
    assert fixed.splitlines()[1] == 'p = all_reduce(p, "tp", src=P, dst=R)'


def test_parentheses_and_spacing_do_not_matter_but_the_operand_must_be_there() -> None:
    assert "f(convert(a + b, " in apply_fix("y = f((a+b))\n", 1, 'convert(a + b, "tp", src=I, dst=R)' + COST)
    with pytest.raises(NotApplicable):
        apply_fix(SOURCE, 3, 'convert(x, "tp", src=I, dst=R)' + COST)
    with pytest.raises(NotApplicable):
        apply_fix("p = 1\np += q\n", 2, 'all_reduce(p, "tp", src=P, dst=R)' + COST)  # an in-place target


def test_the_error_column_picks_the_operand_it_points_at() -> None:
    fix = 'convert(r, "tp", src=R, dst=V)' + COST
    # At an argument: that argument only; at a call: its operands only (not the r of the condition).
    assert apply_fix("consume(r, r)\n", 1, fix, column=12).splitlines()[0] == \
        'consume(r, convert(r, "tp", src=R, dst=V))'
    assert apply_fix("e = torch.where(r > 0, p, r)\n", 1, fix, column=5).splitlines()[0] == \
        'e = torch.where(r > 0, p, convert(r, "tp", src=R, dst=V))'
    # Where the error points holds no such operand: every occurrence, as without a column.
    assert apply_fix("y = f(g(r), r)\n", 1, fix, column=1).splitlines()[0] == \
        'y = f(g(convert(r, "tp", src=R, dst=V)), convert(r, "tp", src=R, dst=V))'
