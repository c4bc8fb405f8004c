"""Every case file under cases/ against one mypy run with the plugin per configuration (see harness.py).

``cases/`` runs with mypy.ini.example as it is, and again with
``allow_redefinition`` off (what a team gets that adds only the plugins line
to its configuration), the verdicts that depend on it marked ``@recommended``
or ``@no-redefinition``; ``cases_strict/`` adds ``axes = dp, tp`` and
``strict_axes = true``; ``cases_rebind/`` holds cases written for
``allow_redefinition`` off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.plugin.harness import RECOMMENDED, ROOT, CaseFile, Reported, config_text, mismatches, run_mypy

HERE = Path(__file__).parent
NO_REDEFINITION = "no-redefinition"
_WITHOUT_REDEFINITION = {"allow_redefinition": "False", "local_partial_types": "False"}


@dataclass(frozen=True)
class Suite:
    """A directory of case files, and the configuration it runs under: options on top of mypy.ini.example."""

    folder: str
    configuration: str = RECOMMENDED
    mypy_options: dict[str, str] = field(default_factory=dict)
    plugin_options: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.folder if self.configuration == RECOMMENDED else f"{self.folder}@{self.configuration}"

    @property
    def rebindable(self) -> bool:
        return self.mypy_options.get("allow_redefinition") != "False"

    def files(self) -> list[Path]:
        return sorted((HERE / self.folder).glob("*.py"))


SUITES = (
    Suite("cases"),
    Suite("cases", NO_REDEFINITION, _WITHOUT_REDEFINITION),
    Suite("cases_strict", plugin_options={"axes": "dp, tp", "strict_axes": "true"}),
    Suite("cases_rebind", NO_REDEFINITION, _WITHOUT_REDEFINITION),
)


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """One mypy run per suite: {suite name: {path: {line: [Reported]}}}."""
    out = {}
    for suite in SUITES:
        config = tmp_path_factory.mktemp(suite.name.replace("@", "-")) / "mypy.ini"
        config.write_text(config_text(suite.mypy_options, suite.plugin_options))
        cache = ROOT / ".mypy_cache" / "plugin-tests" / suite.name.replace("@", "-")
        by_file, raw = run_mypy(suite.files(), config, cache)
        assert "INTERNAL ERROR" not in raw and "Traceback" not in raw, raw
        out[suite.name] = by_file
    return out


CASES = [pytest.param(suite, path, id=f"{suite.name}/{path.name}") for suite in SUITES for path in suite.files()]


@pytest.mark.parametrize(("suite", "path"), CASES)
def test_case_file(reports, suite: Suite, path: Path) -> None:
    case = CaseFile.read(path, suite.configuration, suite.rebindable)
    problems = mismatches(case, reports[suite.name].get(path.resolve(), {}))
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
    cases = [CaseFile.read(path, suite.configuration) for suite in SUITES for path in suite.files()]
    assert sum(case.checks for case in cases) >= 150
    from spmd_types.typesystem import Code

    codes = {e.code for case in cases for line in case.expected.values() for e in line}
    assert {code.value for code in Code} <= codes


def test_a_scoped_marker_holds_in_its_configuration_only(tmp_path: Path) -> None:
    path = tmp_path / "case.py"
    path.write_text("x = f()  # OK@recommended  # E@no-redefinition: [assignment]\n"
                    "reveal_type(x)  # N: SpmdTensor[Literal['tp:R']]\n")
    recommended = CaseFile.read(path)
    assert recommended.accepted == {1} and list(recommended.expected) == [2]
    without = CaseFile.read(path, NO_REDEFINITION, rebindable=False)
    assert without.accepted == set() and [e.code for e in without.expected[1]] == ["assignment"]
    revealed = 'Revealed type is "spmd_types._typed.SpmdTensor[Any]"'
    assert mismatches(without, {1: [Reported("error", "assignment", "no")], 2: [Reported("note", None, revealed)]}) == []
    assert mismatches(recommended, {2: [Reported("note", None, revealed)]}) != []
