"""The collective and cast table against tables written out by hand, duality, and call checks."""

from __future__ import annotations

import itertools

import pytest

from spmd_types.typesystem import (
    CALLS,
    WEAK,
    ZERO,
    Code,
    I,
    P,
    R,
    S,
    SpmdType,
    Transition,
    V,
    backward,
    check_call,
    check_fits,
    route,
)
from spmd_types.typesystem.collectives import (
    NO_GRADIENT_REDUCTIONS,
    fixes_between,
    primitive_transitions,
    retargeted,
)
from spmd_types.typesystem.local_types import gradient_type

# Every primitive transition without a shard and the transition its backward performs, written out by hand.
FORWARD_BACKWARD = [
    (("reinterpret", R, I), ("convert", I, P)),
    (("reinterpret", R, V), ("reinterpret", V, P)),
    (("convert", R, V), ("convert", V, P)),
    (("reinterpret", R, P), ("reinterpret", R, P)),
    (("convert", R, P), ("convert", R, P)),
    (("reinterpret", I, R), ("all_reduce", P, I)),
    (("convert", I, V), ("all_gather", V, I)),
    (("convert", I, P), ("reinterpret", R, I)),
    (("all_gather", V, R), ("reduce_scatter", P, V)),
    (("all_gather", V, I), ("convert", I, V)),
    (("all_to_all", V, V), ("all_to_all", V, V)),
    (("reinterpret", V, P), ("reinterpret", R, V)),
    (("convert", V, P), ("convert", R, V)),
    (("all_reduce", P, R), ("all_reduce", P, R)),
    (("all_reduce", P, I), ("reinterpret", I, R)),
    (("reduce_scatter", P, V), ("all_gather", V, R)),
]

# The same rows for shards: the shard dim travels with the type.
SHARD_FORWARD_BACKWARD = [
    (("convert", R, S(1)), ("convert", S(1), P)),
    (("convert", I, S(1)), ("all_gather", S(1), I)),
    (("convert", S(1), P), ("convert", R, S(1))),
    (("all_gather", S(1), R), ("reduce_scatter", P, S(1))),
    (("all_gather", S(1), I), ("convert", I, S(1))),
    (("reduce_scatter", P, S(1)), ("all_gather", S(1), R)),
    (("all_to_all", S(0), S(1)), ("all_to_all", S(1), S(0))),
    (("all_to_all", V, S(1)), ("all_to_all", S(1), V)),
]


@pytest.mark.parametrize(("fwd", "bwd"), FORWARD_BACKWARD + SHARD_FORWARD_BACKWARD, ids=str)
def test_backward_matches_the_table_written_out(fwd, bwd):
    assert backward(Transition(*fwd)) == Transition(*bwd)


def test_every_written_out_row_is_a_primitive_and_nothing_else_is():
    written = {Transition(*fwd) for fwd, _ in FORWARD_BACKWARD}
    unsharded = {t for t in primitive_transitions(()) if t.call != "ppermute"}
    assert unsharded == written


@pytest.mark.parametrize("t", primitive_transitions((0, 1, -1)), ids=str)
def test_backward_of_backward_is_forward(t):
    assert backward(backward(t)) == t


@pytest.mark.parametrize("t", primitive_transitions((0, 2)), ids=str)
def test_backward_maps_gradient_types(t):
    b = backward(t)
    assert (b.src, b.dst) == (gradient_type(t.dst), gradient_type(t.src))


# Which call reaches which type, written out by hand.
ENDPOINTS = [R, I, V, P, S(0), S(1)]
ALLOWED = {
    "all_reduce": {(P, R), (P, I), (V, R), (V, I)},
    "all_gather": {(V, R), (V, I), (S(0), R), (S(0), I), (S(1), R), (S(1), I)},
    "reduce_scatter": {(P, V), (P, S(0)), (P, S(1)), (V, V), (V, S(0)), (V, S(1))},
    "all_to_all": {(a, b) for a in (V, S(0), S(1)) for b in (V, S(0), S(1))},
    "reinterpret": {(R, I), (I, R), (R, V), (I, V), (R, P), (V, P)},
    "convert": {(R, I), (I, R), (R, V), (I, V), (R, P), (I, P), (V, P), (R, S(0)), (R, S(1)),
                (I, S(0)), (I, S(1)), (S(0), P), (S(1), P)},
    "redistribute": set(itertools.product(ENDPOINTS, repeat=2)),  # any to any
    "ppermute": {(V, V)},
}


@pytest.mark.parametrize(("call", "src", "dst"), [
    (call, src, dst) for call in CALLS for src in ENDPOINTS for dst in ENDPOINTS
], ids=lambda v: v if isinstance(v, str) else v.code)
def test_allowed_pairs(call, src, dst):
    steps = route(call, src, dst)
    assert (steps is not None) == ((src, dst) in ALLOWED[call])
    if not steps:
        return
    # The route is a chain of primitives from src to dst.
    assert steps[0].src in (src, V) and steps[-1].dst == dst
    for a, b in itertools.pairwise(steps):
        assert a.dst == b.src


def test_redistribute_is_semantics_preserving():
    # It never uses reinterpret except between R and I, whose values are equal.
    for src, dst in itertools.product(ENDPOINTS, repeat=2):
        for step in route("redistribute", src, dst):
            assert step.call != "reinterpret" or {step.src, step.dst} == {R, I}
    assert route("redistribute", S(1), S(1)) == ()
    assert route("redistribute", V, S(0)) == ()


def test_megatron_copy_to_region_is_accepted_both_ways():
    # copy_to_tensor_model_parallel_region: identity forward, all-reduce backward.
    for call in ("reinterpret", "convert"):
        (step,) = route(call, I, R)
        assert step.effect == "no-op" and backward(step) == Transition("all_reduce", P, I)


def test_composite_routes():
    assert route("all_reduce", V, R) == (Transition("reinterpret", V, P), Transition("all_reduce", P, R))
    assert route("reinterpret", I, V) == (Transition("reinterpret", I, R), Transition("reinterpret", R, V))


# -- check_call ------------------------------------------------------------------------


def test_defaults_and_outputs():
    outcome = check_call("all_reduce", "tp", P, None, R)
    assert outcome.output is R and outcome.violations == ()
    assert check_call("reduce_scatter", "tp", P, None, None).output is V
    assert check_call("all_to_all", "tp", V, None, None).output is V


def test_missing_required_dst():
    (violation,) = check_call("all_gather", "tp", V, None, None).violations
    assert violation.code is Code.COLLECTIVE and "all_gather needs dst= (I, R)" in violation.reason


def test_missing_src_and_dst():
    (violation,) = check_call("convert", "tp", V, None, None).violations
    assert "convert needs src= and dst=" in violation.reason


@pytest.mark.parametrize(
    ("call", "have", "src", "dst", "ok"),
    [
        ("all_reduce", P, None, R, True),
        ("all_reduce", V, None, R, True),  # a varying input is its own partial sum
        ("all_reduce", R, None, R, False),  # double reduction
        ("all_reduce", None, None, R, True),  # unknown input: gradual
        ("all_gather", S(0), S(0), R, True),
        ("all_gather", V, S(0), R, True),
        ("all_gather", S(1), S(0), R, False),
        ("all_gather", S(1), None, R, True),  # src=V matches any shard
        ("all_to_all", R, None, None, False),  # duplicated tokens
        ("reinterpret", I, I, R, True),
        ("convert", R, I, R, False),
        ("all_reduce", ZERO, None, R, True),
        ("all_reduce", WEAK, None, R, False),
        ("all_gather", WEAK, None, R, True),
    ],
)
def test_src_must_match_input(call, have, src, dst, ok):
    outcome = check_call(call, "tp", have, src, dst)
    assert (outcome.violations == ()) is ok
    assert outcome.output == dst if dst is not None else V


def test_disallowed_pair_suggests_the_call_that_does_it():
    (violation,) = check_call("reinterpret", "tp", I, I, P).violations
    assert "reinterpret does not accept src=I, dst=P" in violation.reason
    assert [f.call for f in violation.fixes] == ['convert({x}, "tp", src=I, dst=P)']


def test_double_reduction_is_explained():
    (violation,) = check_call("all_reduce", "tp", R, None, R).violations
    assert "multiplies it by the axis size; the input is already R, so the call is not needed" in violation.reason


def test_duplicated_tokens_say_where_to_slice_and_offer_no_call():
    """Slicing the replicated input right before the exchange type-checks but rarely gives each rank its share
    (examples/bugs/moe_duplicated_tokens.py then fails on shapes): the share is taken where the data is whole."""
    (violation,) = check_call("all_to_all", "ep", R, None, None).violations
    assert violation.fixes == ()
    assert "give each rank its own share of the data earlier" in violation.reason


@pytest.mark.parametrize(
    ("have", "want", "first"),
    [(I, R, "convert"), (P, R, "all_reduce"), (V, R, "all_gather"), (P, V, "reduce_scatter"),
     (R, V, "convert"), (S(0), S(1), "all_to_all")],
)
def test_fixes_prefer_semantics_preserving_calls(have, want, first):
    fixes = fixes_between(have, want, "tp")
    assert fixes[0].call.startswith(first)
    assert [f.call.startswith("reinterpret") for f in fixes] == sorted(f.call.startswith("reinterpret") for f in fixes)


def test_fix_costs_name_forward_and_backward():
    (fix, *_) = fixes_between(I, R, "tp")
    assert fix.render("x") == 'convert(x, "tp", src=I, dst=R) (no-op forward, all-reduce in backward)'


def test_a_mismatched_result_is_fixed_at_the_call() -> None:
    (violation,) = check_fits(SpmdType({"tp": R}), SpmdType({"tp": I}))
    fixed = retargeted(violation, "all_reduce", "tp", P, I)
    assert [f.render("x") for f in fixed.fixes] == [
        'all_reduce(x, "tp", src=P, dst=I) replacing the all_reduce call (all-reduce forward, no-op in backward)']
    assert fixed.fixes[0].operands == (0,)
    # Another axis, or a dst the call cannot produce, keeps the generic fixes.
    assert retargeted(violation, "all_reduce", "dp", P, I) is violation
    assert retargeted(violation, "reinterpret", "tp", V, I) is violation


@pytest.mark.parametrize(
    ("call", "src", "dst", "fixes"),
    [
        # A sum that stays per-rank is a reduce-scatter; an all-to-all would not sum anything.
        ("all_reduce", V, V, ['reduce_scatter({x}, "tp", src=V, dst=V)']),
        # A gather that stays per-rank moves data: an all-to-all, not a reduce-scatter.
        ("all_gather", V, V, ['all_to_all({x}, "tp", src=V, dst=V)']),
        # No call keeps a pending sum pending: the same call with the destinations it has.
        ("all_reduce", P, P, ['all_reduce({x}, "tp", src=P, dst=R)', 'all_reduce({x}, "tp", src=P, dst=I)']),
    ],
)
def test_rejected_pair_fixes(call, src, dst, fixes):
    (violation,) = check_call(call, "tp", None, src, dst).violations
    assert [f.call for f in violation.fixes] == fixes
    assert {f.replaces for f in violation.fixes} == {call}  # written instead of the rejected call, not around it


@pytest.mark.parametrize("op", sorted(NO_GRADIENT_REDUCTIONS))
def test_a_reduction_without_gradient_gives_a_constant(op):
    assert check_call("all_reduce", "tp", V, V, I, op).output is WEAK
    assert check_call("all_reduce", "tp", V, V, I, "sum").output is I


# -- several axes (a flattened group) -------------------------------------------------------


def test_flattened_axes_are_distinct_names():
    from spmd_types.typesystem import flattened_axes

    assert flattened_axes("dp") == (("dp",), None)
    assert flattened_axes(("dp", "cp")) == (("dp", "cp"), None)
    assert flattened_axes(("dp", "cp", "dp"))[1] == "the axes ('dp', 'cp', 'dp') name 'dp' twice; list each mesh axis once"
    for bad in ((), ("dp", ""), ("dp", 0), ["dp", "cp"], None):
        names, problem = flattened_axes(bad)
        assert names is None and problem is not None and "non-empty tuple" in problem, bad


def test_a_call_on_several_axes_is_the_call_on_each():
    from spmd_types.typesystem import check_call_on_axes, parse

    have = parse("dp:P, cp:P, tp:R")
    result, violations = check_call_on_axes("all_reduce", ("dp", "cp"), have, None, R)
    assert result == parse("dp:R, cp:R, tp:R") and violations == ()
    # Each axis is what a call on that axis alone gives, whatever the other axes are.
    for call, src, dst, text in [("all_gather", S(0), I, "dp:S(0), cp:V"), ("reduce_scatter", None, S(1), "dp:P, cp:V"),
                                 ("all_to_all", S(0), S(1), "dp:S(0), cp:S(0)")]:
        have = parse(text)
        result, violations = check_call_on_axes(call, ("dp", "cp"), have, src, dst)
        assert violations == ()
        for axis in ("dp", "cp"):
            assert result.get(axis) == check_call(call, axis, have.get(axis), src, dst).output


def test_several_axes_report_each_mismatch_and_a_rejected_pair_once():
    from spmd_types.typesystem import check_call_on_axes, parse

    _, violations = check_call_on_axes("all_gather", ("dp", "cp"), parse("dp:S(0), cp:R"), S(1), R)
    assert [(v.axis, v.types) for v in violations] == [("dp", ("S(0)", "S(1)")), ("cp", ("R", "S(1)"))]
    result, violations = check_call_on_axes("all_reduce", ("dp", "cp", "tp"), parse("dp:P, cp:P"), None, V)
    assert len(violations) == 1 and violations[0].axis == "dp" and "does not accept src=P, dst=V" in violations[0].reason
    assert result == parse("dp:V, cp:V, tp:V")
