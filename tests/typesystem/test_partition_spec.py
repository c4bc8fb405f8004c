"""``PartitionSpec``: what it accepts, how it prints, its per-axis types and its denotation."""

from __future__ import annotations

import itertools

import pytest

from spmd_types.typesystem import (
    PartitionSpec,
    all_specs,
    dual,
    global_shape,
    local_indices,
    mesh_axes,
    parse,
    per_axis_types,
)

AXES = mesh_axes({"dp": 2, "tp": 4})


def test_entries_are_normalized_and_compared_with_the_partial_axes_as_a_set() -> None:
    spec = PartitionSpec(("dp",), None, ("tp", "cp"), partial=("ep", "sp"))
    assert tuple(spec) == ("dp", None, ("tp", "cp"))
    assert spec[0] == "dp" and len(spec) == 3
    assert spec.factors(1) == () and spec.factors(2) == ("tp", "cp")
    assert spec.axes == ("dp", "tp", "cp")
    assert spec.shard_dims() == {"dp": 0, "tp": 2, "cp": 2}
    assert spec == PartitionSpec("dp", None, ("tp", "cp"), partial=("sp", "ep"))
    assert hash(spec) == hash(PartitionSpec("dp", None, ("tp", "cp"), partial=("sp", "ep")))
    assert spec != PartitionSpec("dp", None, ("tp", "cp"), partial="ep")
    assert spec != PartitionSpec("dp", None, ("cp", "tp"), partial=("ep", "sp"))
    assert repr(spec) == "PartitionSpec('dp', None, ('tp', 'cp'), partial=('ep', 'sp'))"
    assert repr(PartitionSpec((2, "dp"), partial="tp")) == "PartitionSpec((2, 'dp'), partial='tp')"
    with pytest.raises(AttributeError):
        spec.partial = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    "entries, partial, error, message",
    [
        (("dp", "dp"), (), ValueError, "appears twice"),
        (("dp", None), ("dp",), ValueError, "appears twice"),
        (((),), (), ValueError, "use None"),
        ((0,), (), TypeError, "entry is None, an axis name or a tuple"),
        (((True, "dp"),), (), TypeError, "axis name or an int >= 2"),
        ((("", "dp"),), (), TypeError, "axis name or an int >= 2"),
        (((1, "dp"),), (), ValueError, "must be >= 2"),
        (((2, 2, "dp"),), (), ValueError, "as one \\(4\\)"),
        ((("dp", 2),), (), ValueError, "after the last axis"),
        ((None,), (3,), TypeError, "partial axes are axis names"),
    ],
)
def test_malformed_specs(entries, partial, error, message) -> None:
    with pytest.raises(error, match=message):
        PartitionSpec(*entries, partial=partial)


def test_printed_form() -> None:
    assert PartitionSpec("dp", None, ("tp", "cp")).describe((8, 16, 32)) == "f32[8@dp,16,32@(tp,cp)]"
    assert PartitionSpec((2, "dp"), None, partial="tp").describe((8, 16), "bf16") == "bf16[8@(2,dp),16]+tp"
    assert PartitionSpec(None, partial=("dp", "tp")).describe((4,)) == "f32[4]+(dp,tp)"
    with pytest.raises(ValueError, match="of as many dims"):
        PartitionSpec("dp").describe((4, 4))


def test_per_axis_types_and_the_gradient_spec() -> None:
    spec = PartitionSpec(("tp", "dp"), None)
    assert per_axis_types(spec, AXES) == parse("dp:S(0), tp:S(0)")
    strided = PartitionSpec((4, "dp"), "tp", partial=())
    assert per_axis_types(strided, AXES) == parse("dp:S(0), tp:S(1)")
    partial = PartitionSpec(None, "dp", partial="tp")
    assert per_axis_types(partial, AXES) == parse("dp:S(1), tp:P")
    assert dual(partial, AXES) == PartitionSpec(None, "dp")
    assert dual(PartitionSpec(None, "dp"), AXES) == partial
    for spec in all_specs(AXES, 2):
        assert dual(dual(spec, AXES), AXES) == spec
    with pytest.raises(ValueError, match="does not have"):
        per_axis_types(PartitionSpec("ep"), AXES)


def test_global_shape() -> None:
    assert global_shape(PartitionSpec(("dp", "tp"), None), (1, 4), AXES) == (8, 4)
    assert global_shape(PartitionSpec("dp", (2, "tp")), (1, 4), AXES) == (2, 16)
    with pytest.raises(ValueError, match="has 1 entries"):
        global_shape(PartitionSpec("dp"), (1, 4), AXES)


def test_the_denotation() -> None:
    """Which global indices each rank holds, in local order, against slices written out by hand."""
    axes = mesh_axes({"dp": 2, "tp": 2})

    def held(spec: PartitionSpec, length: int) -> dict[tuple[int, int], tuple[int, ...]]:
        return {(d, t): local_indices(spec, axes, (length,), {"dp": d, "tp": t})[0]
                for d, t in itertools.product(range(2), repeat=2)}

    assert held(PartitionSpec(("dp", "tp")), 8) == {(0, 0): (0, 1), (0, 1): (2, 3), (1, 0): (4, 5), (1, 1): (6, 7)}
    assert held(PartitionSpec(("tp", "dp")), 8) == {(0, 0): (0, 1), (0, 1): (4, 5), (1, 0): (2, 3), (1, 1): (6, 7)}
    # dp strided by 2: two blocks of 4, each cut over dp; a rank holds its piece of both
    assert held(PartitionSpec((2, "dp")), 8)[(1, 0)] == (2, 3, 6, 7)
    assert held(PartitionSpec(("dp", 2, "tp")), 8)[(1, 1)] == (5, 7)
    assert held(PartitionSpec(None, partial="dp"), 2)[(1, 0)] == (0, 1)


def test_all_specs() -> None:
    specs = all_specs(AXES, 2)
    assert len(specs) == len(set(specs)) == 30
    assert PartitionSpec(("tp", "dp"), None) in specs and PartitionSpec((4, "dp"), "tp") in specs
    assert PartitionSpec((2, "tp"), None, partial="dp") in specs
    assert len(all_specs(AXES, 1)) == 14
