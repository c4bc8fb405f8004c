"""Every case file under cases/ against one mypy run with the plugin (see harness.py).

``cases/`` runs with mypy.ini.example as it is; ``cases_strict/`` adds
``axes = dp, tp`` and ``strict_axes = true``; ``cases_rebind/`` turns
``allow_redefinition`` off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugin.harness import ROOT, CaseFile, Reported, config_text, mismatches, run_mypy

HERE = Path(__file__).parent
# Each suite: a directory of case files, and the options it runs with on top of mypy.ini.example.
SUITES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "cases": ({}, {}),
    "cases_strict": ({}, {"axes": "dp, tp", "strict_axes": "true"}),
    "cases_rebind": ({"allow_redefinition": "False", "local_partial_types": "False"}, {}),
}


def _files(suite: str) -> list[Path]:
    return sorted((HERE / suite).glob("*.py"))


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """One mypy run per suite: {suite: {path: {line: [Reported]}}}."""
    out = {}
    for suite, (mypy_options, plugin_options) in SUITES.items():
        config = tmp_path_factory.mktemp(suite) / "mypy.ini"
        config.write_text(config_text(mypy_options, plugin_options))
        by_file, raw = run_mypy(_files(suite), config, ROOT / ".mypy_cache" / "plugin-tests" / suite)
        assert "INTERNAL ERROR" not in raw and "Traceback" not in raw, raw
        out[suite] = by_file
    return out


CASES = [pytest.param(suite, path, id=f"{suite}/{path.name}") for suite in SUITES for path in _files(suite)]


@pytest.mark.parametrize(("suite", "path"), CASES)
def test_case_file(reports, suite: str, path: Path) -> None:
    case = CaseFile.read(path)
    problems = mismatches(case, reports[suite].get(path.resolve(), {}))
    assert not problems, "\n".join(problems)


def test_an_ok_marker_is_checked(tmp_path: Path) -> None:
    """``# OK`` fails on an error, on another expectation, and in a function mypy does not check."""
    path = tmp_path / "case.py"
    path.write_text("def typed(x: int) -> int:\n"
                    "    return x  # OK\n"
                    "\n"
                    "\n"
                    "def untyped(x):\n"
                    "    return x  # OK\n"
                    "\n"
                    "\n"
                    "y = 1  # OK  # E: [misc]\n")
    case = CaseFile.read(path)
    assert case.accepted == {2, 6, 9} and case.checks == 4
    assert mismatches(case, {9: [Reported("error", "misc", "boom")]}) == [
        "line 6: marked OK, but mypy does not check it: the function around it has no annotations",
        "line 9: marked OK, and also expects an error or a note",
    ]
    reported = {2: [Reported("error", "misc", "boom")], 9: [Reported("error", "misc", "boom")]}
    assert "line 2: marked OK, but mypy reports [misc] boom" in mismatches(case, reported)


def test_enough_cases() -> None:
    """The suite states at least 150 accept and reject cases, and uses every error code."""
    cases = [CaseFile.read(path) for suite in SUITES for path in _files(suite)]
    assert sum(case.checks for case in cases) >= 150
    from spmd_types.typesystem import Code

    codes = {e.code for case in cases for line in case.expected.values() for e in line}
    assert {code.value for code in Code} <= codes
