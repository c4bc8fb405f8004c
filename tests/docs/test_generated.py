"""Every generated part of the docs is current (``make generated-docs``; see ``tools/docs/__init__.py``)."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from tools.docs import ROOT
from tools.docs.__main__ import main
from tools.docs.docstrings import TYPES_HEADER, update
from tools.docs.generators import GENERATORS, Generator
from tools.docs.type_system import DOC, TABLES
from tools.docs.type_system import update as update_tables


@pytest.mark.parametrize("generator", GENERATORS, ids=lambda g: g.name)
def test_generated_files_are_current(generator: Generator) -> None:
    stale, stray = generator.compare()
    diffs = ["".join(difflib.unified_diff(path.read_text().splitlines(keepends=True) if path.exists() else [],
                                          text.splitlines(keepends=True), str(path.relative_to(ROOT)), "generated"))
             for path, text in stale.items()]
    assert not stale and not stray, "run: make generated-docs\n" + "\n".join(
        [*(f"not generated (remove it): {path}" for path in stray), *diffs])[:6000]


def test_generating_needs_no_torch() -> None:
    """The generators read the runtime's sources with ast and run mypy, which does not import torch."""
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['tools.docs', '--check']; "
            "runpy.run_module('tools.docs', run_name='__main__', alter_sys=True)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_check_mode_reports_stale_and_stray_files(tmp_path: Path, monkeypatch, capsys) -> None:
    page = tmp_path / "page.md"
    fake = Generator("fake", lambda: {page: "# page\n"}, tmp_path)
    monkeypatch.setattr("tools.docs.__main__.GENERATORS", (fake,))
    assert main(["--check"]) == 1
    assert "out of date: " in capsys.readouterr().err and not page.exists()
    assert main([]) == 0 and page.read_text() == "# page\n"
    assert main(["--check"]) == 0
    (tmp_path / "stray.md").write_text("# stray\n")
    assert main(["--check"]) == 1
    assert "not generated (remove it): " in capsys.readouterr().err


def test_every_table_is_in_the_type_system_page() -> None:
    text = DOC.read_text()
    for name in TABLES:
        assert f"<!-- BEGIN GENERATED: {name} -->" in text


def test_a_region_is_rewritten_and_an_unknown_one_is_an_error() -> None:
    rewritten = update_tables("intro\n<!-- BEGIN GENERATED: duality -->\nold\n<!-- END GENERATED: duality -->\n")
    assert "| R | P |" in rewritten and "old" not in rewritten
    with pytest.raises(KeyError, match="unknown generated table"):
        update_tables("<!-- BEGIN GENERATED: nope -->\n<!-- END GENERATED: nope -->")


SOURCE = f'''
def all_gather(x, axis, *, src, dst):
    """``all_gather(stale)``

    Prose written by hand.

    {TYPES_HEADER}

        stale
    """
'''


def test_a_docstring_gets_its_typed_signature_and_table_and_keeps_its_prose() -> None:
    text, found = update(SOURCE, "example.py")
    assert found == {"all_gather"}
    lines = text.splitlines()
    assert lines[2] == '    """``all_gather(x: src, axis, *, src: V | S(i) = V, dst: R | I) -> dst``'
    assert "    Prose written by hand." in lines and "stale" not in text
    assert "        V     R    all_gather(V -> R)     reduce_scatter(P -> V)" in lines


@pytest.mark.parametrize("broken", [SOURCE.replace("``all_gather(stale)``", "Gathers."),
                                    SOURCE.replace(TYPES_HEADER, "Types::")], ids=["no signature", "no table"])
def test_the_generator_never_overwrites_prose(broken: str) -> None:
    with pytest.raises(ValueError, match="all_gather"):
        update(broken, "example.py")
