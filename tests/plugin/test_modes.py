"""The plugin under mypy's other modes: the daemon (editor integration) and parallel workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.plugin.harness import ROOT, SUBPROCESS_ENV, config_text

LAYER = """
from typing import Annotated
from torch import Tensor
from spmd_types import {declared}

def layer(x: Annotated[Tensor, {declared}["tp"]]) -> Tensor:
    return x
"""
UNANNOTATED_LAYER = """
from torch import Tensor

def layer(x: Tensor) -> Tensor:
    return x
"""
CALLER = """
from typing import Annotated
from torch import Tensor
from spmd_types import V
from layer import layer

def model(h: Annotated[Tensor, V["tp"]]) -> Tensor:
    return layer(h)
"""


def _project(tmp_path: Path, skip_torch_internals: bool = True) -> Path:
    config = tmp_path / "mypy.ini"
    config.write_text(config_text(skip_torch_internals=skip_torch_internals))
    (tmp_path / "layer.py").write_text(LAYER.format(declared="R"))
    (tmp_path / "model.py").write_text(CALLER)
    return config


def _edit(path: Path, text: str) -> None:
    """Rewrite ``path``; a later mtime, so the daemon sees the change even within one second."""
    mtime = path.stat().st_mtime
    path.write_text(text)
    os.utime(path, (mtime + 2, mtime + 2))


class _Daemon:
    """A mypy daemon over ``layer.py`` and ``model.py`` in ``tmp_path``, as an editor runs it."""

    def __init__(self, tmp_path: Path, config: Path) -> None:
        self.tmp_path, self.config = tmp_path, config
        self.command = [sys.executable, "-m", "mypy.dmypy", "--status-file", str(tmp_path / "status.json")]

    def check(self) -> str:
        run = subprocess.run([*self.command, "run", "--", "--config-file", str(self.config), "--cache-dir",
                              str(self.tmp_path / "cache"), "layer.py", "model.py"],
                             capture_output=True, text=True, cwd=self.tmp_path, timeout=600, env=SUBPROCESS_ENV)
        output = run.stdout + run.stderr
        assert "INTERNAL ERROR" not in output and "Daemon crashed" not in output, output
        return run.stdout

    def stop(self) -> None:
        subprocess.run([*self.command, "stop"], capture_output=True, cwd=self.tmp_path, timeout=60,
                       env=SUBPROCESS_ENV)


def test_daemon_follows_an_edit_in_another_module(tmp_path: Path) -> None:
    """The editor's view: the daemon with the recommended (daemon-safe) configuration."""
    daemon = _Daemon(tmp_path, _project(tmp_path, skip_torch_internals=False))
    check = daemon.check
    try:
        # Annotations added to a callable that had none: its call sites are checked from then on.
        (tmp_path / "layer.py").write_text(UNANNOTATED_LAYER)
        assert "[spmd-boundary]" not in check()
        _edit(tmp_path / "layer.py", LAYER.format(declared="R"))
        assert 'model.py:8: error: argument "x" of "layer" on axis \'tp\': expected R, got V' in check()
        _edit(tmp_path / "layer.py", LAYER.format(declared="V"))
        assert "[spmd-boundary]" not in check()
        _edit(tmp_path / "layer.py", LAYER.format(declared="R"))
        assert "expected R, got V" in check()
    finally:
        daemon.stop()


def test_daemon_with_mypy_ini_example_survives_a_dozen_edits(tmp_path: Path) -> None:
    """``mypy.ini.example`` copied as it is (only the stubs added), then edits as an editor makes them.

    Half the edits keep the file's length (``R`` for ``V``), which is what a
    daemon that compares sizes would miss; each check must report exactly the
    current state, and the daemon must not crash (with the torch-skipping
    section it did on the second edit).
    """
    config = tmp_path / "mypy.ini"
    example = (ROOT / "mypy.ini.example").read_text()
    config.write_text(example.replace("[mypy]\n", f"[mypy]\nmypy_path = {ROOT / 'stubs'}\n", 1))
    (tmp_path / "layer.py").write_text(LAYER.format(declared="R"))
    (tmp_path / "model.py").write_text(CALLER)
    daemon = _Daemon(tmp_path, config)
    try:
        assert "expected R, got V" in daemon.check()
        for edit in range(12):
            declared = "VR"[edit % 2]
            if edit % 3 == 2:  # a change of length too: a comment line
                _edit(tmp_path / "model.py", CALLER + f"# edit {edit}\n")
            _edit(tmp_path / "layer.py", LAYER.format(declared=declared))
            reported = daemon.check()
            assert ("expected R, got V" in reported) == (declared == "R"), (edit, reported)
            assert reported.count("error:") == (declared == "R"), (edit, reported)
    finally:
        daemon.stop()


def test_parallel_workers_report_the_same_errors(tmp_path: Path) -> None:
    config = _project(tmp_path)
    outputs = []
    for workers in ("0", "2"):
        run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "-n", workers,
                              "--cache-dir", str(tmp_path / f"cache{workers}"), "layer.py", "model.py"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=600, env=SUBPROCESS_ENV)
        assert "INTERNAL ERROR" not in run.stdout + run.stderr, run.stdout + run.stderr
        outputs.append(run.stdout)
    assert "expected R, got V (per-rank data)" in outputs[0]
    assert outputs[0] == outputs[1]
