"""A printed ``fix:`` is right, or it is not offered.

Every fix the plugin prints for the buggy twins in ``examples/bugs/`` and for
the reject cases under ``tests/plugin/cases*/`` is applied mechanically
(:mod:`tests.fixes.rewrite`) and checked (:mod:`tests.fixes.checking`):

* the first fix of each error makes the file type-check clean, and where the
  program can be run, its simulated run on 2 and 4 ranks matches the
  single-device reference in value and in every gradient;
* no fix is silently wrong: a fix after which mypy is satisfied computes the
  right values wherever the program can be run.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("libcst")

from tests.fixes.checking import FixOutcome, check_fixes
from tests.plugin.harness import ROOT
from tests.plugin.test_cases import SUITES

TWINS = ROOT / "examples" / "bugs"

# First fixes known to be wrong, by file and line, with why; each is an open problem, listed so that the test
# fails on any other (and on one of these once it is right: then remove it here).
KNOWN_WRONG: dict[tuple[str, int], str] = {}


# Twins whose error is reported in mypy's copy of a method for one value of its class's type variables (a flag
# contract's configuration): the plugin offers no fix there, as a fix for one configuration may break another.
IN_ONE_CONFIGURATION = frozenset({"megatron_embedding_without_all_reduce.py", "pipeline_last_stage_gathered_logits.py"})


def _known(outcome: FixOutcome) -> bool:
    return (str(outcome.path.relative_to(ROOT)), outcome.line) in KNOWN_WRONG


@pytest.fixture(scope="module")
def outcomes() -> list[FixOutcome]:
    """Every offered fix, applied and checked: one mypy run for the originals and one for the fixed copies, per suite."""
    found = []
    folders = set()
    for suite in SUITES:
        if suite.folder in folders:
            continue  # a folder's fixes are checked under the first configuration it runs in
        folders.add(suite.folder)
        paths = suite.files()
        if suite.folder == "cases":
            paths += sorted(p for p in TWINS.glob("*.py") if p.name != "__init__.py")
        found += check_fixes(paths, suite.mypy_options, suite.plugin_options,
                             ROOT / ".mypy_cache" / "fixes" / suite.folder)
    return found


def _report(outcomes: list[FixOutcome]) -> str:
    return "\n".join(map(str, outcomes))


def test_first_fixes_type_check_and_run_right(outcomes: list[FixOutcome]) -> None:
    wrong = [o for o in outcomes if o.rank == 0 and o.problems and not _known(o)]
    assert not wrong, f"{len(wrong)} first fixes are wrong:\n{_report(wrong)}"
    right_now = {(str(o.path.relative_to(ROOT)), o.line) for o in outcomes if o.rank == 0 and _known(o)
                 and not o.problems}
    assert not right_now, f"right now, remove from KNOWN_WRONG: {sorted(right_now)}"


def test_no_fix_is_silently_wrong(outcomes: list[FixOutcome]) -> None:
    """A later alternative may leave an error mypy reports, never a clean program that computes the wrong thing."""
    wrong = [o for o in outcomes if o.clean and o.problems]
    assert not wrong, f"{len(wrong)} fixes type-check but run wrong:\n{_report(wrong)}"


def test_every_twin_and_enough_cases_are_run(outcomes: list[FixOutcome]) -> None:
    """Each buggy twin's right first fix ran against its reference, and so did the runnable cases' first fixes."""
    first = [o for o in outcomes if o.rank == 0]
    twins = {o.path for o in first if o.path.parent == TWINS and o.ran}
    flagged = {p for p in TWINS.glob("*.py") if p.name != "__init__.py"}
    offered = {o.path for o in first if o.path.parent == TWINS and not _known(o)}
    assert twins == offered, _report([o for o in first if o.path in offered - twins])
    assert not {p.name for p in offered} & IN_ONE_CONFIGURATION, "a twin offers a fix now: leave it out of the list"
    assert len(offered) >= len(flagged) - len(IN_ONE_CONFIGURATION) - 4, "most twins offer a fix that is right"
    cases_run = [o for o in first if o.path.parent != TWINS and o.ran]
    assert len(cases_run) >= 6, _report([o for o in first if not o.ran])
