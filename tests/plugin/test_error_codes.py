"""Every documented way of turning an ``spmd-*`` code off works in plain mypy.

Each run is a fresh ``python -m mypy`` process, as in CI or an editor: mypy
validates error codes right after loading plugins, before any hook runs, so a
test inside a process that has already imported the plugin's modules would
pass for the wrong reason.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.plugin.harness import ROOT, SUBPROCESS_ENV, config_text

# A partial sum plus a replicated term (spmd-partial) and I mixed with V (spmd-mix), in each module.
BUGS = textwrap.dedent("""
    from typing import Annotated
    from torch import Tensor
    from spmd_types import I, P, R, V, all_reduce

    def partial_plus_bias(x: Annotated[Tensor, P["tp"]], b: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
        return all_reduce(x + b, "tp", src=P, dst=R)

    def invariant_times_varying(w: Annotated[Tensor, I["tp"]], x: Annotated[Tensor, V["tp"]]) -> Tensor:
        return w * x
""")


def _project(tmp_path: Path, mypy_options: dict[str, str], sections: str = "", header: str = "") -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "quiet.py").write_text(header + BUGS)
    (tmp_path / "pkg" / "loud.py").write_text(BUGS)
    (tmp_path / "mypy.ini").write_text(config_text(mypy_options) + sections)
    return tmp_path


def _codes_reported(project: Path, *flags: str) -> dict[str, list[str]]:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", str(project / "cache"),
         "--no-error-summary", *flags, "pkg"],
        capture_output=True, text=True, cwd=project, env=SUBPROCESS_ENV, timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode in (0, 1), output
    assert "INTERNAL ERROR" not in output and "Invalid error code" not in output, output
    reported: dict[str, list[str]] = {"quiet": [], "loud": []}
    for line in run.stdout.splitlines():
        module = Path(line.split(":", 1)[0]).stem
        reported[module].append(line.rsplit("[", 1)[-1].rstrip("]"))
    return {module: sorted(codes) for module, codes in reported.items()}


BOTH = ["spmd-mix", "spmd-partial"]


@pytest.mark.parametrize(
    ("mypy_options", "sections", "header", "flags", "expected"),
    [
        pytest.param({}, "", "", (), {"quiet": BOTH, "loud": BOTH}, id="nothing disabled"),
        pytest.param({"disable_error_code": "spmd-partial"}, "", "", (),
                     {"quiet": ["spmd-mix"], "loud": ["spmd-mix"]}, id="[mypy] section"),
        pytest.param({}, "\n[mypy-pkg.quiet]\ndisable_error_code = spmd-partial, spmd-mix\n", "", (),
                     {"quiet": [], "loud": BOTH}, id="per-module section"),
        pytest.param({}, "", '# mypy: disable-error-code="spmd-partial"\n', (),
                     {"quiet": ["spmd-mix"], "loud": BOTH}, id="inline comment"),
        pytest.param({}, "", "", ("--disable-error-code", "spmd-mix"),
                     {"quiet": ["spmd-partial"], "loud": ["spmd-partial"]}, id="command line"),
        pytest.param({"disable_error_code": "spmd-partial"}, "\n[mypy-pkg.loud]\nenable_error_code = spmd-partial\n",
                     "", (), {"quiet": ["spmd-mix"], "loud": BOTH}, id="re-enabled per module"),
    ],
)
def test_disable_error_code(tmp_path: Path, mypy_options: dict[str, str], sections: str, header: str,
                            flags: tuple[str, ...], expected: dict[str, list[str]]) -> None:
    project = _project(tmp_path, mypy_options, sections, header)
    assert _codes_reported(project, *flags) == expected


def test_disable_error_code_in_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "quiet.py").write_text(BUGS)
    (tmp_path / "pkg" / "loud.py").write_text(BUGS)
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f"""
        [tool.mypy]
        plugins = ["spmd_mypy.plugin"]
        mypy_path = "{ROOT / 'stubs'}"
        disable_error_code = ["spmd-mix"]

        [[tool.mypy.overrides]]
        module = "pkg.quiet"
        disable_error_code = ["spmd-partial"]
    """))
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--cache-dir", str(tmp_path / "cache"),
         "--no-error-summary", "pkg"],
        capture_output=True, text=True, cwd=tmp_path, env=SUBPROCESS_ENV, timeout=600,
    )
    assert "INTERNAL ERROR" not in run.stdout + run.stderr, run.stdout + run.stderr
    assert run.returncode == 1, run.stdout + run.stderr
    assert [line.split(":")[0] for line in run.stdout.splitlines()] == ["pkg/loud.py"], run.stdout
    assert run.stdout.rstrip().endswith("[spmd-partial]"), run.stdout
