"""The API reference pages are generated from the runtime's docstrings, and are current."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "tools" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


gen = _generator()


def test_reference_pages_are_current() -> None:
    stale = [str(path.relative_to(ROOT)) for path, text in gen.render_all().items()
             if not path.exists() or path.read_text() != text]
    assert not stale, f"out of date: {stale}; run: python tools/gen_reference.py"


def test_no_stray_pages_in_the_reference() -> None:
    assert set(gen.OUT.glob("*.md")) == set(gen.render_all())


@pytest.mark.parametrize("name", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "ppermute",
                                  "reinterpret", "convert", "redistribute", "set_current_mesh", "axis_index",
                                  "axis_size", "assert_type", "set_dist", "use_dist", "get_dist"])
def test_every_public_call_is_documented(name: str) -> None:
    assert name in gen.ANCHORS
    page = (gen.OUT / gen.ANCHORS[name].partition("#")[0]).read_text()
    assert f"def {name}(" in page


def test_every_collective_page_tabulates_the_core() -> None:
    for name in gen.CALLS:
        page = (gen.OUT / f"{name}.md").read_text()
        assert "## Accepted types" in page, name


def test_the_generator_runs_without_torch() -> None:
    """It reads the sources with ast, so it works where torch cannot be imported."""
    code = ("import sys, runpy; sys.modules['torch'] = None; sys.argv = ['gen_reference.py', '--check']; "
            "runpy.run_path('tools/gen_reference.py', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_check_mode_reports_a_stale_page(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "reference"
    out.mkdir()
    monkeypatch.setattr(gen, "OUT", out)
    assert gen.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    (out / "stray.md").write_text("# stray\n")
    assert gen.main(["--check"]) == 1
    assert "not generated" in capsys.readouterr().err
