"""Where values enter a global function: the declared return types of the local functions it calls."""

from __future__ import annotations

from spmd_types.typesystem import Code, global_call_violation, parse


def test_a_varying_return_value_cannot_enter_a_global_function() -> None:
    found = global_call_violation("local_product", parse("dp:S(0), tp:V"))
    assert found is not None and found.code is Code.GLOBAL and found.axis == "tp"
    assert "declare local_product's return value" in found.reason and 'P["tp"]' in found.reason


def test_global_return_values_enter_as_they_are() -> None:
    for declared in ("dp:S(0), tp:P", "tp:R", "tp:I", "dp:S(1), tp:S(0)", ""):
        assert global_call_violation("f", parse(declared)) is None
