"""The recommended configuration: one definition, printed as ini or pyproject, and what mypy.ini.example is."""

from __future__ import annotations

import configparser
import io
import subprocess
import sys
from pathlib import Path

import pytest

from spmd_mypy import cli, recommended
from spmd_mypy.plugin import WITHOUT_REDEFINITION_NOTE
from tests.plugin.harness import ROOT, SUBPROCESS_ENV

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport the plugin itself uses
    import tomli as tomllib

BUGGY = """\
from typing import Annotated
from torch import Tensor
from spmd_types import P, R, all_reduce

def f(x: Annotated[Tensor, P["tp"]], b: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(x + b, "tp", src=P, dst=R)
"""


def test_mypy_ini_example_is_the_recommended_configuration() -> None:
    """The file in the repository is the daemon-safe form; regenerate it with `spmd-check --print-config`."""
    assert (ROOT / "mypy.ini.example").read_text() == recommended.render("ini")


@pytest.mark.parametrize("skip", [False, True])
def test_ini_and_pyproject_say_the_same(skip: bool) -> None:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string(recommended.render("ini", skip_torch_internals=skip))
    toml = tomllib.loads(recommended.render("pyproject", skip_torch_internals=skip))["tool"]
    assert toml["mypy"]["plugins"] == [ini["mypy"]["plugins"]] == ["spmd_mypy.plugin"]
    for option in ("allow_redefinition", "local_partial_types"):
        assert toml["mypy"][option] is ini["mypy"].getboolean(option) is True
    assert "spmd-mypy" in toml and ini.has_section("mypy.plugins.spmd")
    skipped_ini = [s for s in ini.sections() if ini[s].get("follow_imports") == "skip"]
    overrides = toml["mypy"].get("overrides", [])
    if skip:
        assert skipped_ini == [f"mypy-{','.join(recommended.TORCH_INTERNALS)}"]
        assert overrides == [{"module": list(recommended.TORCH_INTERNALS), "follow_imports": "skip"}]
    else:
        assert skipped_ini == [] and overrides == []


@pytest.mark.parametrize("form", recommended.FORMATS)
def test_print_config(form: str) -> None:
    out = io.StringIO()
    assert cli.main(["--print-config", form, "--skip-torch-internals"], out=out) == 0
    assert out.getvalue() == recommended.render(form, skip_torch_internals=True)  # type: ignore[arg-type]


def test_the_pyproject_form_checks_with_mypy(tmp_path: Path) -> None:
    """Pasted into a pyproject.toml, the printed form loads the plugin and skips torch's internals."""
    text = recommended.render("pyproject", skip_torch_internals=True)
    text = text.replace("[tool.mypy]\n", f'[tool.mypy]\nmypy_path = "{ROOT / "stubs"}"\n')
    (tmp_path / "pyproject.toml").write_text(text)
    (tmp_path / "layers.py").write_text(BUGGY)
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "layers.py"], cwd=tmp_path,
                         env=SUBPROCESS_ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("layers.py:6: error: + on axis 'tp'") and "[spmd-partial]" in run.stdout
    assert WITHOUT_REDEFINITION_NOTE not in run.stderr


def test_without_allow_redefinition_the_plugin_says_what_is_not_checked(tmp_path: Path) -> None:
    """Only the plugins line in a configuration: one note on standard error naming the option."""
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nplugins = spmd_mypy.plugin\nmypy_path = {ROOT / 'stubs'}\n")
    (tmp_path / "layers.py").write_text(BUGGY)
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "layers.py"], cwd=tmp_path,
                         env=SUBPROCESS_ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr.count(WITHOUT_REDEFINITION_NOTE) == 1, run.stderr
    assert "[spmd-partial]" in run.stdout  # the other checks still run
