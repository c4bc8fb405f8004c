"""The plugin under mypy's other modes: the daemon (editor integration) and parallel workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .harness import SUBPROCESS_ENV, config_text

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


def test_daemon_follows_an_edit_in_another_module(tmp_path: Path) -> None:
    """The editor's view: the daemon (configured as mypy.ini.example advises for it)."""
    config = _project(tmp_path, skip_torch_internals=False)
    dmypy = [sys.executable, "-m", "mypy.dmypy", "--status-file", str(tmp_path / "status.json")]

    def check() -> str:
        run = subprocess.run([*dmypy, "run", "--", "--config-file", str(config), "--cache-dir",
                              str(tmp_path / "cache"), "layer.py", "model.py"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=600, env=SUBPROCESS_ENV)
        assert "INTERNAL ERROR" not in run.stdout + run.stderr, run.stdout + run.stderr
        return run.stdout

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
        subprocess.run([*dmypy, "stop"], capture_output=True, cwd=tmp_path, timeout=60, env=SUBPROCESS_ENV)


def test_parallel_workers_report_the_same_errors(tmp_path: Path) -> None:
    config = _project(tmp_path)
    outputs = []
    for workers in ("0", "2"):
        run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "-n", workers,
                              "--cache-dir", str(tmp_path / f"cache{workers}"), "layer.py", "model.py"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=600, env=SUBPROCESS_ENV)
        assert "INTERNAL ERROR" not in run.stdout + run.stderr, run.stdout + run.stderr
        outputs.append(run.stdout)
    assert "expected R, got V; fix: all_gather(h, \"tp\", src=V, dst=R)" in outputs[0]
    assert outputs[0] == outputs[1]
