"""Exhaustive join tables: every combination of 1 to 3 operand types per linearity class.

The expected results come from :func:`rule_by_rule`, a second, deliberately
different formulation that states the join one rule at a time (counting
operand kinds rather than walking products as the core does).  Every
combination of R, I, V, P, S(0), weak, zero and unknown is checked under each
class, on one axis; a separate test checks that axes are independent.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from spmd_types.typesystem import (
    UNKNOWN,
    WEAK,
    ZERO,
    Code,
    I,
    Operand,
    OpRule,
    P,
    R,
    S,
    SpmdType,
    V,
    apply_op,
    lookup,
    parse,
)
from spmd_types.typesystem.join import merge_paths

KINDS = [R, I, V, P, S(0), WEAK, ZERO, None]  # None: unknown on the axis


@dataclass(frozen=True)
class LinearityClass:
    """A shape of op: its rule and the parameter names of its operands."""

    name: str
    rule: OpRule
    params: tuple[str, ...]
    summands: frozenset[int]  # operands that are summands (linear classes)
    factors: frozenset[int]  # operands that are factors of the single product
    nonlinear: frozenset[int]  # operands the op is not linear in
    selectors: frozenset[int] = frozenset()  # index/mask/condition operands


def _classes() -> list[LinearityClass]:
    out = []
    for n in (1, 2, 3):
        names = tuple(f"a{i}" for i in range(n))
        everyone = frozenset(range(n))
        out.append(LinearityClass(f"linear{n}", OpRule(terms=tuple((p,) for p in names)), names,
                                  everyone, frozenset(), frozenset()))
        out.append(LinearityClass(f"multilinear{n}", OpRule(terms=(names,)), names,
                                  frozenset(), everyone, frozenset()))
        out.append(LinearityClass(f"nonlinear{n}", OpRule(), names, frozenset(), frozenset(), everyone))
    # A product with a divisor: a0 * a1 / a2, linear in a0 and a1, not in a2.
    out.append(LinearityClass("multilinear-with-divisor3", OpRule(terms=(("a0", "a1"),), nonlinear=("a2",)),
                              ("a0", "a1", "a2"), frozenset(), frozenset({0, 1}), frozenset({2})))
    out.append(LinearityClass("linear-with-divisor2", OpRule(terms=(("a0",),), nonlinear=("a1",)),
                              ("a0", "a1"), frozenset({0}), frozenset(), frozenset({1})))
    # where(a0, a1, a2) and gather(a0, index=a1).
    out.append(LinearityClass("where-like3", OpRule(terms=(("a1",), ("a2",)), selectors=("a0",)),
                              ("a0", "a1", "a2"), frozenset({1, 2}), frozenset(), frozenset(), frozenset({0})))
    out.append(LinearityClass("gather-like2", OpRule(terms=(("a0",),), selectors=("a1",)),
                              ("a0", "a1"), frozenset({0}), frozenset(), frozenset(), frozenset({1})))
    return out


CLASSES = _classes()


def rule_by_rule(cls: LinearityClass, kinds: tuple) -> object:
    """The join, one rule at a time (each quoted). Returns a type, None (unknown), or an error Code."""
    if any(k is None for k in kinds):
        # "any operand unknown on that axis: unknown (no error)", except that a pending sum where the
        # op is not linear is wrong whatever the other operands are.
        if any(kinds[i] is P for i in cls.nonlinear):
            return Code.PARTIAL
        return None
    if any(kinds[i] is P for i in cls.selectors):
        return Code.PARTIAL  # a pending sum cannot index, mask or choose
    # Selectors carry no gradient: replicated ones (R or I) are constants.
    kinds = tuple(WEAK if i in cls.selectors and k in (R, I) else k for i, k in enumerate(kinds))
    tensor = [k for k in kinds if k not in (WEAK, ZERO)]
    local = ["V" if k == S(0) else k.code for k in tensor]
    if "I" in local and set(local) - {"I"}:
        return Code.MIX  # "I together with R, V or P: error"
    if "P" in local and "V" in local:
        return Code.MIX  # "P together with V: error"
    if "P" not in local:
        if "V" in local:
            return V  # "R, V and weak (at least one V): V"
        if local:
            return R if local[0] == "R" else I  # "only R and weak" / "only I and weak"
        # Zeros: zero through a linear op, a constant through any other (exp(0) is 1).
        linear = not cls.nonlinear or cls.nonlinear != frozenset(range(len(kinds)))
        return ZERO if linear and all(k is ZERO for k in kinds) else WEAK
    # A P operand flows through the op.
    if cls.nonlinear and cls.nonlinear == frozenset(range(len(kinds))):
        return Code.PARTIAL  # "P through a non-linear op: error"
    if any(kinds[i] is P for i in cls.nonlinear):
        return Code.PARTIAL  # "a P divisor: error"
    if any(kinds[i] is not R and kinds[i] is not WEAK and kinds[i] is not ZERO for i in cls.nonlinear):
        return Code.PARTIAL
    if cls.summands:
        # Linear: every non-zero summand must be P; zeros fit any summand.
        if all(kinds[i] in (P, ZERO) for i in cls.summands):
            return P
        return Code.PARTIAL  # "P + R", "P + 1": affine
    factors = [kinds[i] for i in cls.factors]
    if ZERO in factors:
        return P  # a zero product is a zero summand, which fits P
    if factors.count(P) == 1:
        return P  # "exactly one P factor, the others R or weak"
    return Code.PARTIAL  # "two or more P factors"


CASES = [
    pytest.param(cls, kinds, id=f"{cls.name}-{'-'.join('?' if k is None else k.code for k in kinds)}")
    for cls in CLASSES
    for kinds in itertools.product(KINDS, repeat=len(cls.params))
]


def _operand(param: str, kind) -> Operand:
    if kind is None:
        return Operand(param, UNKNOWN)
    if kind in (WEAK, ZERO):
        return Operand(param, SpmdType(default=kind))
    return Operand(param, SpmdType({"tp": kind}))


@pytest.mark.parametrize(("cls", "kinds"), CASES)
def test_join_table(cls, kinds):
    outcome = apply_op(cls.rule, [_operand(p, k) for p, k in zip(cls.params, kinds)])
    expected = rule_by_rule(cls, kinds)
    if isinstance(expected, Code):
        assert [v.code for v in outcome.violations] == [expected]
        assert outcome.violations[0].axis == "tp"
        assert outcome.result.get("tp") is None  # no cascade after an error
    else:
        assert outcome.violations == ()
        assert outcome.result.get("tp") == expected


def test_axes_join_independently():
    rule = lookup("torch.Tensor.__add__")
    outcome = apply_op(rule, [Operand("input", parse("dp:P, tp:V, cp:I")), Operand("other", parse("dp:P, tp:R"))])
    assert outcome.result == parse("dp:P, tp:V")  # cp is unknown: `other` does not mention it
    assert outcome.violations == ()


def test_one_violation_per_bad_axis():
    rule = lookup("torch.Tensor.__mul__")
    outcome = apply_op(rule, [Operand("input", parse("dp:P, tp:I")), Operand("other", parse("dp:P, tp:V"))])
    assert [(v.axis, v.code) for v in outcome.violations] == [("dp", Code.PARTIAL), ("tp", Code.MIX)]
    assert outcome.result == SpmdType()


def test_constant_default_survives_constant_only_ops():
    rule = lookup("torch.Tensor.__mul__")
    weak = Operand("other", SpmdType(default=WEAK))
    assert apply_op(rule, [Operand("input", SpmdType(default=ZERO)), weak]).result == SpmdType(default=WEAK)
    assert apply_op(rule, [Operand("input", parse("tp:V")), weak]).result == parse("tp:V")


def test_sequence_arguments_are_summands_or_factors():
    cat = lookup("torch.cat")
    parts = [Operand("tensors", parse("tp:P"))] * 3
    assert apply_op(cat, parts).result == parse("tp:P")
    assert apply_op(cat, [*parts, Operand("tensors", parse("tp:R"))]).violations[0].code is Code.PARTIAL
    einsum = lookup("torch.einsum")
    assert apply_op(einsum, [Operand("args", parse("tp:P")), Operand("args", parse("tp:R"))]).result == parse("tp:P")
    assert apply_op(einsum, [Operand("args", parse("tp:P"))] * 2).violations[0].code is Code.PARTIAL


def test_passing_a_nonlinear_switch_makes_the_op_nonlinear():
    div = lookup("torch.div")
    operands = [Operand("input", parse("tp:P")), Operand("other", parse("tp:R"))]
    assert apply_op(div, operands).result == parse("tp:P")
    assert apply_op(div, operands, passed={"rounding_mode"}).violations[0].code is Code.PARTIAL


def test_ignored_arguments_do_not_join():
    zeros_like = lookup("torch.zeros_like")
    assert apply_op(zeros_like, [Operand("input", parse("tp:P"))]).result == SpmdType(default=ZERO)
    to = lookup("torch.Tensor.to")
    outcome = apply_op(to, [Operand("input", parse("tp:P")), Operand("other", parse("tp:V"))])
    assert outcome.result == parse("tp:P") and outcome.violations == ()


def test_detach_turns_replicated_axes_into_constants():
    outcome = apply_op(lookup("torch.Tensor.detach"), [Operand("input", parse("dp:R, tp:I, cp:V, ep:P"))])
    assert outcome.result == parse("cp:V, dp:weak, ep:P, tp:weak")


def test_fresh_data_is_unknown():
    assert apply_op(lookup("torch.randn"), []).result == UNKNOWN
    assert apply_op(lookup("torch.ones"), []).result == SpmdType(default=WEAK)


@pytest.mark.parametrize(
    ("target", "value", "ok"),
    [("tp:R", "tp:R", True), ("tp:R", "tp:V", False), ("tp:S(0)", "tp:V", True), ("tp:P", "*:zero", True),
     ("tp:P", "*:weak", False), ("tp:I", "*:weak", True)],
)
def test_inplace_ops_keep_their_target_type(target, value, ok):
    outcome = apply_op(lookup("torch.Tensor.copy_"), [Operand("input", parse(target)), Operand("other", parse(value))])
    assert outcome.result == parse(target)
    assert (outcome.violations == ()) is ok
    if not ok:
        assert outcome.violations[0].code is Code.INPLACE


def test_inplace_arithmetic():
    outcome = apply_op(lookup("torch.Tensor.__iadd__"), [Operand("input", parse("tp:R")), Operand("other", parse("tp:V"))])
    assert [v.code for v in outcome.violations] == [Code.INPLACE]
    assert "writes a value of type V into a tensor of type R" in outcome.violations[0].reason


@pytest.mark.parametrize(
    ("op", "operands", "fixes"),
    [
        ("torch.Tensor.__matmul__", ["tp:I", "tp:V"], ['convert(input, "tp", src=I, dst=R)']),
        # Masking the non-partial term first: right whether or not the sum is reduced later.
        ("torch.Tensor.__add__", ["tp:P", "tp:R"],
         ['convert(other, "tp", src=R, dst=P)', 'all_reduce(input, "tp", src=P, dst=R)']),
        ("torch.Tensor.__add__", ["tp:P", "*:weak"], ['all_reduce(input, "tp", src=P, dst=R)']),
        ("torch.exp", ["tp:P"], ['all_reduce(input, "tp", src=P, dst=R)']),
        ("torch.Tensor.__mul__", ["tp:I", "tp:P"],
         ['convert(input, "tp", src=I, dst=R)', 'all_reduce(other, "tp", src=P, dst=I)']),
        ("torch.div", ["tp:R", "tp:P"], ['all_reduce(other, "tp", src=P, dst=R)']),
        # No single cast is enough: both replicated parameters need one.
        ("torch.nn.functional.linear", ["tp:S(0)", "tp:I", "tp:I"],
         ['convert(weight, "tp", src=I, dst=R) and convert(bias, "tp", src=I, dst=R)']),
        ("torch.nn.functional.linear", ["tp:I", "tp:S(0)", "tp:S(0)"], ['convert(input, "tp", src=I, dst=R)']),
    ],
)
def test_fix_suggestions(op, operands, fixes):
    params = (["input", "weight", "bias"] if op.endswith("linear") else ["input", "other"])[: len(operands)]
    (violation,) = apply_op(lookup(op), [Operand(p, parse(t)) for p, t in zip(params, operands)]).violations
    rendered = [" and ".join(fix.call.format(x=params[k]) for k in fix.operands) for fix in violation.fixes]
    assert rendered == fixes
    assert all("forward" in fix.cost and "backward" in fix.cost for fix in violation.fixes)


@pytest.mark.parametrize(
    ("paths", "merged"),
    [
        (["tp:R", "tp:R"], "tp:R"),
        (["*:zero", "dp:V, tp:R"], "dp:V, tp:R"),  # an accumulator that starts at zero
        (["*:weak", "tp:V"], "tp:V"),
        (["*:weak", "tp:P"], None),  # a weak constant is not a pending sum
        (["*:zero", "tp:P"], "tp:P"),
        (["tp:S(0)", "tp:V"], "tp:V"),
        (["tp:S(0)", "tp:S(1)"], "tp:V"),
        (["tp:P", "tp:R"], None),
        (["tp:I", "tp:R"], None),
        (["tp:R", "dp:R"], ""),  # each axis unknown on one path
        (["*:zero", "*:weak"], "*:weak"),
    ],
)
def test_merge_paths(paths, merged):
    result = merge_paths([parse(p) for p in paths])
    assert (str(result) if result is not None else None) == merged
