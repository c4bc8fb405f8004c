"""``local_map``'s placements against declared types: every fix offered, applied, leaves nothing to report."""

from __future__ import annotations

import itertools
import re

import pytest

from spmd_types.typesystem import (
    AxisType,
    I,
    LocalMap,
    P,
    Placement,
    R,
    S,
    SpmdType,
    V,
    local_map_input,
    local_map_output,
    placement_type,
)

KINDS = [Placement("Shard", 0), Placement("Shard", 1), Placement("Replicate"), Placement("Partial")]
DECLARED: list[AxisType] = [R, I, P, V, S(0), S(1)]


def _entry(text: str) -> tuple[Placement, ...] | None:
    """One entry of a spelled tuple or list of entries: ``[Replicate(), Shard(0)]`` or ``None``."""
    return None if text == "None" else tuple(Placement.parse(code) for code in re.findall(r"\w+\(\d*\)", text))


def _rewrite(parameter: str, value: str) -> str:
    return f"{parameter}={value}"


def _applied(spec: LocalMap, fix: str) -> LocalMap:
    """``spec`` with the argument that ``fix`` spells (``in_grad_placements=(...)``, from :func:`_rewrite`) put in."""
    keyword, _, value = fix.partition("=")
    if keyword == "out_placements" and spec.one_output:
        return LocalMap(spec.dims, spec.inputs, spec.grads, (_entry(value),), True)
    entries = tuple(_entry(item) for item in re.findall(r"\[[^\]]*\]|None", value[1:-1]))
    if keyword == "in_grad_placements":
        return LocalMap(spec.dims, spec.inputs, entries, spec.outputs, spec.one_output)
    return LocalMap(spec.dims, spec.inputs, spec.grads, entries, spec.one_output)


def test_the_text_form_reads_back() -> None:
    spec = LocalMap(("dp", "tp"), ((Placement("Replicate"), Placement("Shard", 0)), None), None,
                    ((Placement("Replicate"), Placement("Partial")), None), False)
    assert LocalMap.parse(str(spec)) == spec


@pytest.mark.parametrize(("forward", "grad", "declared"),
                         list(itertools.product(KINDS, [None, *KINDS], DECLARED)))
def test_an_input_is_its_to_local_type_and_its_fix_is_right(
        forward: Placement, grad: Placement | None, declared: AxisType) -> None:
    spec = LocalMap(("tp",), (None, (forward,)), (None, (grad,)) if grad is not None else None, ((forward,),), True)
    local, violations = local_map_input(spec, 1, SpmdType({"tp": declared}), _rewrite)
    pair = placement_type(forward, grad if grad is not None else
                          Placement("Replicate") if forward.kind == "Partial" else forward)
    assert local == SpmdType({"tp": pair} if pair is not None else {})
    for violation in violations:
        for fix in violation.fixes:
            fixed = _applied(spec, fix.call)
            assert fixed.grads is not None and fixed.grads[0] is None  # the non-tensor argument keeps None
            assert not local_map_input(fixed, 1, SpmdType({"tp": declared}), _rewrite)[1], fix.call


@pytest.mark.parametrize(("forward", "declared"), list(itertools.product(KINDS, DECLARED)))
def test_an_output_fix_of_its_placements_is_right(forward: Placement, declared: AxisType) -> None:
    spec = LocalMap(("tp",), None, None, (None, (forward,)), False)
    violations = local_map_output(spec, 1, SpmdType({"tp": declared}), _rewrite)
    assert bool(violations) == (placement_type(forward, Placement("Replicate") if forward.kind == "Partial"
                                               else forward) not in _fitting(declared))
    for violation in violations:
        for fix in violation.fixes:
            assert fix.replaces == "local_map"
            assert not local_map_output(_applied(spec, fix.call), 1, SpmdType({"tp": declared}), _rewrite), fix.call


def _fitting(declared: AxisType) -> list[AxisType]:
    """The types of default-gradient placements that may stand where ``declared`` is."""
    return [S(0), S(1)] if declared is V else [declared]
