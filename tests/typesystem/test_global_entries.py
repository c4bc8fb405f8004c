"""Where values enter a global function, and the axis orders of multi-axis entries that the per-axis types forget.

A local callee's declared return type is where its value enters; a spec's entry orders ride with the value
through ops and must agree with the declarations it goes into.
"""

from __future__ import annotations

from spmd_types.typesystem import (
    Code,
    PartitionSpec,
    Violation,
    global_call_violation,
    order_violation,
    parse,
    result_orders,
    spec_orders,
)


def test_a_varying_return_value_cannot_enter_a_global_function() -> None:
    found = global_call_violation("local_product", parse("dp:S(0), tp:V"))
    assert found is not None and found.code is Code.GLOBAL and found.axis == "tp"
    assert "declare local_product's return value" in found.reason and 'P["tp"]' in found.reason


def test_global_return_values_enter_as_they_are() -> None:
    for declared in ("dp:S(0), tp:P", "tp:R", "tp:I", "dp:S(1), tp:S(0)", ""):
        assert global_call_violation("f", parse(declared)) is None


def test_a_spec_keeps_the_order_of_its_multi_axis_entries() -> None:
    assert spec_orders(PartitionSpec(("tp", "dp"), None, ("cp", "ep"))) == (("tp", "dp"), ("cp", "ep"))
    assert spec_orders(PartitionSpec("dp", (2, "tp"), partial="ep")) == ()


def test_orders_go_through_an_op_where_the_axes_still_cut_one_dim() -> None:
    result = parse("dp:S(1), tp:S(1)")
    assert result_orders([(("tp", "dp"),), ()], result) == (("tp", "dp"),)
    assert result_orders([(("tp", "dp"),)], parse("dp:S(1), tp:P")) == ()  # no longer one entry


def test_operands_ordering_one_dims_axes_differently_do_not_meet() -> None:
    found = result_orders([(("dp", "tp"),), (("tp", "dp"),)], parse("dp:S(0), tp:S(0)"))
    assert isinstance(found, Violation) and found.code is Code.GLOBAL and "different orders" in found.reason
    assert isinstance(result_orders([(("dp", "tp", "cp"),), (("tp", "dp"),)], parse("")), Violation)
    assert result_orders([(("dp", "tp"),), (("dp", "tp"),)], parse("dp:S(0), tp:S(0)")) == (("dp", "tp"),)


def test_a_value_fits_a_declaration_only_in_its_order() -> None:
    found = order_violation((("tp", "dp"),), (("dp", "tp"),))
    assert found is not None and found.code is Code.GLOBAL and "redistribute_spec" in found.reason
    assert "write src" in (order_violation((("tp", "dp"),), (("dp", "tp"),), src=True) or found).reason
    assert order_violation((("tp", "dp"),), (("tp", "dp"),)) is None
    assert order_violation((("tp", "dp"),), ()) is None  # the value's order is not known: gradual
