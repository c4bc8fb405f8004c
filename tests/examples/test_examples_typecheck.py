"""One mypy run with the plugin over ``examples/``: the examples are clean, each twin is caught.

Every error mypy reports must be marked in the file that gets it, with the
``# E: [code] text`` comments of ``tests/plugin`` (see ``harness.py`` there):
so a correct example, and every helper module, has no error at all, and a buggy
twin has exactly the errors marked on its lines.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.examples.example_catalog import EXAMPLES, buggy_twins, correct_examples, source
from tests.plugin.harness import CaseFile, Reported, config_text, mismatches, run_mypy

FILES = sorted(EXAMPLES.rglob("*.py"))
TWINS = [source(module) for module in buggy_twins()]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, dict[int, list[Reported]]]:
    """What mypy reports for every file under examples/, by file and line (one run)."""
    tmp = tmp_path_factory.mktemp("examples-mypy")
    config = tmp / "mypy.ini"
    config.write_text(config_text())
    # A fresh cache: a warm one would make the result depend on what ran before.
    by_file, raw = run_mypy(FILES, config, tmp / "cache")
    assert "INTERNAL ERROR" not in raw and "Traceback" not in raw, raw
    return by_file


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_reports_exactly_the_marked_errors(reports: dict[Path, dict[int, list[Reported]]], path: Path) -> None:
    problems = mismatches(CaseFile.read(path), reports.get(path, {}))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", TWINS, ids=lambda p: p.name)
def test_every_twin_marks_a_coded_error(path: Path) -> None:
    """A twin states which spmd-* error it must get, so that a silent checker fails the test."""
    marks = [mark for line in CaseFile.read(path).expected.values() for mark in line]
    assert marks, f"{path.name} marks no expected error"
    assert all(mark.kind == "error" and (mark.code or "").startswith("spmd-") for mark in marks)


@pytest.mark.parametrize("module", correct_examples(), ids=lambda m: m.__name__)
def test_correct_examples_mark_nothing(module: ModuleType) -> None:
    assert not CaseFile.read(source(module)).expected


@pytest.mark.parametrize("module", correct_examples(), ids=lambda m: m.__name__)
def test_every_example_has_a_buggy_twin(module: ModuleType) -> None:
    twins = [twin.__name__ for twin in buggy_twins() if module in vars(twin).values()]
    assert twins, f"no module in examples/bugs imports {module.__name__}"
