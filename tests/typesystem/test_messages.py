"""A violation's one-line message reads back as the text and the fixes it was made of.

mypy hands ``spmd-check`` nothing but the printed line; the report shows each
fix on a line of its own by :meth:`Message.parse`, so every message the core
can make must parse back exactly, however the source spells its operands.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spmd_types.typesystem import (
    CALLS,
    IN_PLACE,
    WEAK,
    ZERO,
    AxisType,
    I,
    Message,
    Operand,
    P,
    R,
    S,
    SpmdType,
    V,
    Violation,
    apply_op,
    check_backward,
    check_call,
    check_fits,
    check_in_place,
    lookup,
    summed_replicated_term,
)

_TYPES: tuple[AxisType, ...] = (R, I, V, P, S(0), S(-1))
_ENDPOINTS = (R, I, V, P, S(0), S(1), None)


def _violations() -> Iterator[Violation]:
    """Every kind of violation the core makes, for every combination of types it is made from."""
    for call in CALLS:
        for have in (*_TYPES, WEAK, ZERO, None):
            for src in _ENDPOINTS:
                for dst in _ENDPOINTS:
                    yield from check_call(call, "tp", have, src, dst).violations
        yield from check_call(call, "tp", P, P, R, op="max").violations
    for value in _TYPES:
        for declared in _TYPES:
            yield from check_fits(SpmdType({"tp": value}), SpmdType({"tp": declared}))
        yield from check_backward(SpmdType({"tp": value}))
        for seed in _TYPES:
            yield from check_backward(SpmdType({"tp": value}), SpmdType({"tp": seed}))
        for entry in IN_PLACE.values():
            yield check_in_place(entry, "tp", value)
    for op in ("torch.add", "torch.mul", "torch.div", "torch.nn.functional.linear", "torch.exp", "torch.where"):
        rule = lookup(op)
        for a in _TYPES:
            for b in _TYPES:
                operands = [Operand(param, SpmdType({"tp": kind})) for param, kind in zip(rule.params, (a, b, a))]
                yield from apply_op(rule, operands).violations
    found = summed_replicated_term("all_reduce", "tp", [("h", V), ("bias", R)])
    assert found is not None
    yield found


# How a source may spell the place and the operands of a violation.
SPELLINGS = [
    ("+", ("x", "y"), "x"),
    ('argument "w" of "Block.forward"', ("self.w", "f(...)"), "self.w"),
    ("return value", ("a + b", "x[...]"), "-h"),
    ('argument "x; fix: y" of "f"', ("a or b", "g(...)(...)"), "z"),
]


@pytest.mark.parametrize(("where", "operands", "value"), SPELLINGS)
def test_every_message_reads_back(where: str, operands: tuple[str, ...], value: str) -> None:
    checked = 0
    for violation in _violations():
        message = violation.message(where, operands, value)
        assert Message.parse(str(message)) == message, str(message)
        assert str(message) == violation.render(where, operands, value)
        checked += 1
    assert checked > 500


def test_a_line_without_fixes_is_all_text() -> None:
    assert Message.parse("+ on axis 'tp': I does not mix with V") == Message("+ on axis 'tp': I does not mix with V")
    assert Message.parse("f: see the docs; fix: nothing") == Message("f: see the docs; fix: nothing")
