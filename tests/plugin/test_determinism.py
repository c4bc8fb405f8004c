"""The plugin reports the same thing however mypy ran: CI (cold), a developer's incremental run, ``-n 2``, the editor's daemon.

Generated programs (:mod:`.program_generator`) are checked cold, then
incrementally after touching every file and after an edit, with two parallel
workers, and through the daemon before and after the same edit; every mode
must give exactly the ``[spmd-*]`` diagnostics of a cold run of the same
sources.  All projects of one test share each mypy run, so torch is analysed
once per mode.  Fixed regression programs cover what once differed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from tests.plugin.harness import SUBPROCESS_ENV, config_text
from tests.plugin.program_generator import generate

SEEDS = range(7)  # each a package of four modules; about 180 plugin diagnostics in all
LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*)  \[(?P<code>spmd-[\w-]+)\]$")
Diagnostic = tuple[str, int, str, str]  # path, line, code, message


def _write(root: Path, files: dict[str, str], later_by: float = 0) -> None:
    """Write ``files`` under ``root``; ``later_by`` seconds after the current mtime, so mypy sees every change."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        mtime = path.stat().st_mtime if path.exists() else None
        path.write_text(text)
        if mtime is not None:
            os.utime(path, (mtime + later_by, mtime + later_by))


def _diagnostics(output: str) -> set[Diagnostic]:
    assert "INTERNAL ERROR" not in output and "Daemon crashed" not in output, output[-3000:]
    return {(m["path"], int(m["line"]), m["code"], m["message"]) for m in map(LINE.match, output.splitlines()) if m}


def _mypy(root: Path, config: Path, cache: str, packages: Iterable[str], *extra: str) -> set[Diagnostic]:
    run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", cache,
                          "--show-error-codes", "--hide-error-context", "--no-error-summary", *extra, *packages],
                         capture_output=True, text=True, cwd=root, timeout=600, env=SUBPROCESS_ENV)
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    return _diagnostics(run.stdout + run.stderr)


class _Daemon:
    def __init__(self, root: Path, config: Path, packages: Iterable[str]) -> None:
        self.root, self.config, self.packages = root, config, list(packages)
        self.command = [sys.executable, "-m", "mypy.dmypy", "--status-file", str(root / "status.json")]

    def check(self) -> set[Diagnostic]:
        run = subprocess.run([*self.command, "run", "--", "--config-file", str(self.config), "--cache-dir",
                              "daemon-cache", "--show-error-codes", "--hide-error-context", "--no-error-summary",
                              *self.packages], capture_output=True, text=True, cwd=self.root, timeout=600,
                             env=SUBPROCESS_ENV)
        return _diagnostics(run.stdout + run.stderr)

    def stop(self) -> None:
        subprocess.run([*self.command, "stop"], capture_output=True, cwd=self.root, timeout=60, env=SUBPROCESS_ENV)


def _configs(root: Path) -> tuple[Path, Path]:
    """The one-shot configuration (torch internals skipped) and the daemon's."""
    one_shot, daemon = root / "one-shot.ini", root / "daemon.ini"
    one_shot.write_text(config_text())
    daemon.write_text(config_text(skip_torch_internals=False))
    return one_shot, daemon


def _differences(expected: set[Diagnostic], got: set[Diagnostic]) -> str:
    missing = "".join(f"\n  missing {d}" for d in sorted(expected - got))
    extra = "".join(f"\n  extra   {d}" for d in sorted(got - expected))
    return missing + extra


def _check_modes(tmp_path: Path, before: dict[str, str], after: dict[str, str], packages: list[str]) -> None:
    """Every mode, on ``before`` and then on ``after``, reports what a cold run of the same sources does."""
    one_shot, daemon_config = _configs(tmp_path)
    cold = {}
    for state, files in (("before", before), ("after", after)):
        _write(tmp_path / f"cold-{state}", files)
        cold[state] = _mypy(tmp_path / f"cold-{state}", one_shot, "cache", packages)
    assert cold["before"], "the programs should have SPMD errors to compare"

    parallel = tmp_path / "parallel"
    _write(parallel, before)
    got = _mypy(parallel, one_shot, "cache", packages, "-n", "2")
    assert got == cold["before"], "-n 2" + _differences(cold["before"], got)

    incremental = tmp_path / "incremental"
    _write(incremental, before)
    _mypy(incremental, one_shot, "cache", packages)
    for step, (state, files) in enumerate((("before", before), ("after", after), ("after", after)), start=1):
        _write(incremental, files, later_by=2 * step)  # touched, edited, touched again
        got = _mypy(incremental, one_shot, "cache", packages)
        assert got == cold[state], f"incremental, step {step}" + _differences(cold[state], got)

    root = tmp_path / "daemon"
    _write(root, before)
    daemon = _Daemon(root, daemon_config, packages)
    try:
        for step, (state, files) in enumerate((("before", before), ("before", before), ("after", after),
                                                ("before", before)), start=1):
            _write(root, files, later_by=2 * step)
            got = daemon.check()
            assert got == cold[state], f"daemon, step {step}" + _differences(cold[state], got)
    finally:
        daemon.stop()


def test_generated_programs_give_the_same_diagnostics_in_every_mode(tmp_path: Path) -> None:
    projects = [generate(seed) for seed in SEEDS]
    before = {path: text for project in projects for path, text in project.files().items()}
    after = {path: text for project in projects for path, text in project.files(edited=True).items()}
    assert before != after
    _check_modes(tmp_path, before, after, [project.package for project in projects])


# A function whose annotations come from an alias in a module that imports it
# back: after the alias gains an SPMD type, the daemon re-analyzes the function
# without re-parsing its module, and the call in ``c`` must be checked anew.
ALIAS_CYCLE = {
    "cycle/__init__.py": "",
    "cycle/a.py": "from typing import Literal\n"
                  "from torch import Tensor\n"
                  "from spmd_types import Spmd\n"
                  "import cycle.b\n"
                  "Act = {alias}\n\n"
                  "def use(t: Tensor) -> Tensor:\n"
                  "    return cycle.b.f(t)\n",
    "cycle/b.py": "from torch import Tensor\n"
                  "from cycle.a import Act\n\n"
                  "def f(x: Act) -> Tensor:\n"
                  "    return x\n",
    "cycle/c.py": "from typing import Annotated\n"
                  "from torch import Tensor\n"
                  "from spmd_types import V\n"
                  "from cycle.b import f\n\n"
                  "def g(h: Annotated[Tensor, V['tp']]) -> Tensor:\n"
                  "    return f(h)\n",
}


def test_a_callable_that_gains_an_spmd_signature_through_another_module(tmp_path: Path) -> None:
    before = {p: t.replace("{alias}", "Tensor") for p, t in ALIAS_CYCLE.items()}
    after = {p: t.replace("{alias}", 'Spmd[Tensor, Literal["tp:R"]]') for p, t in ALIAS_CYCLE.items()}
    _check_modes(tmp_path, after, before, ["cycle"])  # cold "before" must have errors: start annotated


def test_the_missing_stubs_error_survives_daemon_edits(tmp_path: Path) -> None:
    """Without the stubs on mypy_path, each module is told once; the daemon used to forget it after an edit."""
    config = tmp_path / "daemon.ini"
    config.write_text(re.sub(r"(?m)^mypy_path = .*\n", "", config_text(skip_torch_internals=False)))
    source = ("from typing import Annotated\nfrom torch import Tensor\nfrom spmd_types import R\n\n"
              "def f(x: Annotated[Tensor, R['tp']]) -> None: ...\n")
    _write(tmp_path, {"stubless/__init__.py": "", "stubless/m.py": source})
    cold = _mypy(tmp_path, config, "cold-cache", ["stubless"])
    assert [d[2] for d in cold] == ["spmd-annotation"], cold
    daemon = _Daemon(tmp_path, config, ["stubless"])
    try:
        for step in range(1, 4):
            _write(tmp_path, {"stubless/m.py": source + f"y = {step}\n"}, later_by=2 * step)
            got = daemon.check()
            assert got == cold, f"daemon, step {step}" + _differences(cold, got)
    finally:
        daemon.stop()
