"""``local_region``'s rule: what a region accepts on entry and exit, every fix applied, malformed arguments."""

from __future__ import annotations

import re

import pytest

from spmd_types.typesystem import (
    AxisType,
    Code,
    I,
    P,
    PartitionSpec,
    R,
    Region,
    S,
    Shard,
    SpmdType,
    V,
    fits,
    parse,
    parse_axis_type,
    region_arity,
    region_input,
    region_output,
    region_problem,
)

MESH = ("dp", "tp")
KINDS: list[AxisType] = [R, I, P, V, S(0), S(1)]
OUT_SPECS = {R: PartitionSpec(None, None), P: PartitionSpec(None, None, partial="tp"),
             S(0): PartitionSpec("tp", None), S(1): PartitionSpec(None, "tp")}


def _region(out: PartitionSpec, axes: tuple[str, ...] = ("tp",)) -> Region:
    return Region.of(axes, (PartitionSpec("dp", "tp"),), out, MESH)


@pytest.mark.parametrize("want", list(OUT_SPECS), ids=str)
@pytest.mark.parametrize("have", KINDS, ids=str)
def test_exit_on_a_region_axis(have: AxisType, want: AxisType) -> None:
    """Accepted: what fits the spec's type, and V where the spec cuts a dim or is partial (re-stated)."""
    found = region_output(_region(OUT_SPECS[want]), 0, SpmdType({"dp": R, "tp": have}))
    accepted = fits(have, want) or (have is V and (isinstance(want, Shard) or want is P))
    assert (not found) == accepted
    for violation in found:
        assert violation.code is Code.BOUNDARY and violation.axis == "tp"
        assert f"out_specs says {want.code} on 'tp'" in violation.reason
        assert not violation.fixes  # reported at the region: the change is inside the function
        for dst in re.findall(r"return \w+\(out, .*?dst=(\w+(?:\(\d+\))?)\)", violation.reason):
            # the collective's result, returned instead, is accepted
            assert not region_output(_region(OUT_SPECS[want]), 0, SpmdType({"dp": R, "tp": parse_axis_type(dst)}))


@pytest.mark.parametrize("have", [V, P, S(0)], ids=str)
def test_exit_on_a_global_axis_has_no_restatement(have: AxisType) -> None:
    """Off the region's axes the function is global: V is not re-stated as the spec's shard or sum."""
    region = _region(PartitionSpec("dp", None, partial="tp"))
    found = region_output(region, 0, SpmdType({"dp": have, "tp": V}))
    assert [v.axis for v in found] == ([] if fits(have, S(0)) and have is not V else ["dp"])


def test_the_spec_types_of_entry() -> None:
    region = Region.of(("tp",), (PartitionSpec("dp", "tp"), None, PartitionSpec(None, None, partial="tp")),
                       PartitionSpec("dp", None), MESH)
    assert region.inputs == (parse("dp:S(0), tp:S(1)"), None, parse("dp:R, tp:P"))
    assert region.outputs == (parse("dp:S(0), tp:R"),)
    assert Region.parse(str(region)) == region


def test_entry() -> None:
    region = _region(PartitionSpec("dp", None))
    assert region_input(region, 0, parse("dp:S(0), tp:S(1)"), parse("tp:V")) == ()
    (wrong_argument,) = region_input(region, 0, parse("dp:S(0), tp:S(0)"), None)
    assert "in_specs[0] says S(1), the argument is S(0)" in wrong_argument.reason
    assert wrong_argument.fixes and "all_to_all" in wrong_argument.fixes[0].call
    (wrong_parameter,) = region_input(region, 0, None, parse("tp:R"))
    assert "in_specs[0] gives S(1) on 'tp', but the parameter declares R" in wrong_parameter.reason
    assert region_input(region, 1, parse("tp:V"), parse("tp:R")) == ()  # no spec for it


@pytest.mark.parametrize(("axes", "in_specs", "out_specs", "code", "reason"), [
    ("tp", (PartitionSpec("dp"),), PartitionSpec(), None, None),
    ((), (), PartitionSpec(), Code.ANNOTATION, "non-empty tuple"),
    (None, (), PartitionSpec(), Code.ANNOTATION, "axes takes"),
    (("tp", "tp"), (), PartitionSpec(), Code.ANNOTATION, "twice"),
    ("tp", [PartitionSpec()], PartitionSpec(), Code.ANNOTATION, "in_specs takes a tuple"),
    ("tp", (), "tp", Code.ANNOTATION, "out_specs takes"),
    ("cp", (), PartitionSpec(), Code.AXIS, "'cp', which is not an axis of the mesh (dp, tp)"),
    ("tp", (PartitionSpec("ep"),), PartitionSpec(), Code.AXIS, "'ep'"),
])
def test_malformed(axes: object, in_specs: object, out_specs: object, code: Code | None, reason: str | None) -> None:
    found = region_problem(axes, in_specs, out_specs, MESH)
    assert (found is None) == (code is None)
    if found is not None:
        assert found.code is code and reason is not None and reason in found.reason


def test_arity() -> None:
    one = _region(PartitionSpec())
    assert region_arity(one, 1, None) is None
    assert "in_specs has 1 entries for a function of 2" in str(region_arity(one, 2, None))
    two = Region.of(("tp",), (None,), (PartitionSpec(), None), MESH)
    assert region_arity(two, 1, 2) is None
    assert "out_specs has 2 entries for a function returning 3" in str(region_arity(two, 1, 3))
    assert "does not return a tuple" in str(region_arity(two, 1, None))


def test_v_off_the_regions_axes_is_not_global() -> None:
    region = _region(PartitionSpec("dp", None, partial="tp"))
    (parameter,) = region_input(region, 0, None, parse("dp:V, tp:V"))
    (returned,) = region_output(region, 0, parse("dp:V, tp:V"))
    for violation, what in ((parameter, "the parameter declares"), (returned, "the function returns")):
        assert violation.code is Code.GLOBAL and violation.axis == "dp"
        assert f"{what} V on 'dp', which the region keeps global (only tp is local inside it)" in violation.reason
