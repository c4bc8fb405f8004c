"""``benchmarks/real_codebase.py`` refuses bad arguments before it measures anything (it is never run here)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.plugin.harness import ROOT, SUBPROCESS_ENV

SCRIPT = ROOT / "benchmarks" / "real_codebase.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=SUBPROCESS_ENV,
                          timeout=120)


def test_help_names_every_option() -> None:
    run = _run("--help")
    assert run.returncode == 0, run.stderr
    for option in ("--subset", "--repeats", "--warm-repeats", "--no-annotate", "--quick", "--keep", "--commit"):
        assert option in run.stdout


@pytest.mark.skipif(importlib.util.find_spec("megatron") is None, reason="megatron-core is installed by `make setup`")
def test_a_subset_outside_megatron_core_is_refused() -> None:
    run = _run("--subset", "tensor_parallel", "no_such_folder")
    assert run.returncode == 2
    assert "not in megatron/core: no_such_folder" in run.stderr
