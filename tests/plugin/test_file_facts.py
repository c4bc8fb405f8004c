"""A file's facts live as long as mypy keeps the file's parse tree, and no longer.

The facts hold the file's statements.  A batch run lets go of each tree once it
has checked the file (:func:`spmd_mypy.compat.releases_checked_trees`); facts
kept past that would hold every checked file's tree in memory, and the young
objects would set off garbage collections that walk them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy.freetree import free_tree
from mypy.nodes import MypyFile
from mypy.options import Options

from spmd_mypy import files
from spmd_mypy.compat import check_with_types
from spmd_mypy.config import PluginOptions
from spmd_mypy.session import Session


class _Checker:
    """What the facts read of mypy's checker: the file it is checking, and the options."""

    def __init__(self, tree: MypyFile, options: Options) -> None:
        self.tree, self.options = tree, options


@pytest.fixture
def trees(tmp_path: Path) -> tuple[MypyFile, MypyFile]:
    paths = [tmp_path / "first.py", tmp_path / "second.py"]
    for path in paths:
        path.write_text("def f(a: int) -> int:\n    b = a\n    return b\n", encoding="utf-8")
    run = check_with_types([*map(str, paths), "--cache-dir", str(tmp_path / "cache")])
    assert run.status == 0, run.output
    return run.trees[str(paths[0])], run.trees[str(paths[1])]


def _ask(session: Session, tree: MypyFile, options: Options) -> None:
    assert files.is_returned(session, _Checker(tree, options), tree.defs[0]) is False  # reads the statements


def test_a_batch_run_lets_go_of_the_facts_of_a_file_mypy_has_checked(trees: tuple[MypyFile, MypyFile]) -> None:
    first, second = trees
    session = Session(PluginOptions(), lambda name: None)
    _ask(session, first, Options())
    free_tree(first)  # what mypy does once it has checked the file
    _ask(session, second, Options())
    assert list(session.files) == [second.path]


def test_facts_stay_while_mypy_keeps_the_tree(trees: tuple[MypyFile, MypyFile]) -> None:
    """Modules that import each other are checked in turns, each tree kept until all of them are done."""
    first, second = trees
    session = Session(PluginOptions(), lambda name: None)
    _ask(session, first, Options())
    _ask(session, second, Options())
    facts = session.files[first.path]
    _ask(session, first, Options())
    assert sorted(session.files) == sorted([first.path, second.path])
    assert session.files[first.path] is facts  # not read again
