"""Differential test of the whole-program claim: a program mypy with the plugin accepts computes, on simulated
ranks, the value and the gradients of the single-device program its annotations denote.

A fixed seed and a small budget (a few hundred generated programs, one mypy
run per batch); ``python -m tests.differential.campaign`` runs long campaigns.
"""

from __future__ import annotations

import pytest

from tests.differential import runner
from tests.differential.generator import Collective, Loop, Op, Program, generate
from tests.differential.oracle import run

SEEDS = range(240)


@pytest.fixture(scope="module")
def report() -> runner.Report:
    return runner.campaign(list(SEEDS), batch=len(SEEDS))


def test_no_accepted_program_differs_from_one_device(report: runner.Report) -> None:
    described = []
    for finding in report.accepted_wrong:
        shrunk = finding.shrunk or finding.program
        outcome = finding.shrunk_outcome or finding.outcome
        described.append(f"seed {finding.seed}, shrunk:\n{shrunk.render()}\n" + "\n".join(outcome.mismatches))
    assert not described, "accepted programs that differ from one device:\n\n" + "\n\n".join(described)


def test_the_batch_is_a_mix_the_oracle_can_judge(report: runner.Report) -> None:
    """Not vacuous: many programs are accepted and compared, and the oracle finds most rejected ones really wrong."""
    print(report.summary())
    assert report.generated == len(SEEDS)
    assert report.accepted_matching >= len(SEEDS) // 3
    assert report.rejected_wrong >= len(SEEDS) // 6
    assert len(report.accepted_erroring) <= len(SEEDS) // 10


def test_generation_is_deterministic() -> None:
    first = [generate(seed).render() for seed in range(20)]
    assert first == [generate(seed).render() for seed in range(20)]
    assert len(set(first)) == len(first)


def _program(body: tuple, params: tuple, returns: str, returns_kinds: tuple, loss: str) -> Program:
    return Program(("tp",), params, body, returns, returns_kinds, loss, flag=False)


R_A = ("a", (("tp", "R"),))
P_B = ("b", (("tp", "P"),))


def test_the_oracle_tells_right_from_wrong() -> None:
    """A partial sum reduced before it is returned matches one device; the same sum returned unreduced as R does not."""
    right = _program((Op("v1", "mul", ("b", "a")), Collective("v2", "all_reduce", "v1", "tp", "P", "R"),
                      Op("v3", "sum", ("v2",)), Collective("v4", "convert", "v3", "tp", "R", "P")),
                     (R_A, P_B), "v2", (("tp", "R"),), "v4")
    assert run(right).matches, run(right)
    unreduced = _program((Op("v1", "mul", ("b", "a")), Op("v3", "sum", ("v1",)), Collective("v4", "convert", "v3", "tp", "R", "P")),
                         (R_A, P_B), "v1", (("tp", "R"),), "v4")
    assert run(unreduced).wrong
    # an R loss seeds every rank: the gradient of ``a`` comes out once per rank
    r_loss = _program((Op("v1", "scale", ("a",)), Op("v2", "sum", ("v1",))), (R_A,), "v1", (("tp", "R"),), "v2")
    assert any("grad a" in m for m in run(r_loss).mismatches)


def test_shrinking_drops_what_the_difference_does_not_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a checker that accepts everything, a wrong program shrinks to one from which nothing can be dropped."""
    monkeypatch.setattr(runner, "check", lambda programs: [[] for _ in programs])
    wrong = _program((Op("v1", "relu", ("a",)), Op("v2", "scale", ("v1",)), Op("v3", "add", ("v2", "b")),
                      Op("v4", "t", ("v3",)), Op("v5", "sum", ("v4",))),
                     (R_A, P_B), "v4", (("tp", "P"),), "v5")
    assert run(wrong).wrong
    shrunk = runner.shrink(wrong)
    assert run(shrunk).wrong
    assert shrunk.size < wrong.size
    # minimal: no single statement can go while the program stays wrong
    for index in range(shrunk.size):
        for keep in ("first", "last"):
            candidate = shrunk.without(index, keep)
            assert candidate is None or not run(candidate).wrong, candidate.render()


# Soundness bugs the campaigns found, shrunk: each must be rejected, or match one device.
REGRESSIONS = {
    # the norm of a V value has no SPMD type (Any), so a V loss is accepted
    "v_norm_as_loss": _program((Op("v1", "norm", ("b",)),), (("b", (("tp", "V"),)),), "v1", (("tp", "V"),), "v1"),
    # exp of a zero is kept a zero, which fits a pending sum; exp(0) is one, added once per rank
    "exp_of_zero_plus_partial": Program(
        ("dp", "tp"), (("a", (("dp", "V"), ("tp", "P"))),),
        (Op("v4", "zeros", ()), Op("v5", "exp", ("v4",)), Loop("v5", "add", "a"), Op("v7", "sum", ("v5",)),
         Collective("v8", "reinterpret", "v7", "dp", "V", "P")),
        "v5", (("dp", "V"), ("tp", "P")), "v8", flag=False),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression(name: str) -> None:
    program = REGRESSIONS[name]
    (errors,) = runner.check([program])
    outcome = run(program)
    assert errors or not outcome.wrong, f"accepted, and differs from one device:\n{program.render()}\n{outcome.mismatches}"
