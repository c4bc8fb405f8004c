"""The stubs mypy reads (stubs/spmd_types) describe the runtime package exactly.

``mypy.stubtest`` imports ``spmd_types`` and compares every public name and
signature with the stubs; the plugin relies on the stubs, users on the runtime.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_stubs_match_the_runtime():
    env = {**os.environ, "MYPYPATH": str(ROOT / "stubs"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "spmd_types", "--ignore-missing-stub",
         "--allowlist", str(Path(__file__).with_name("allowlist.txt"))],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_library_stubs_match_the_installed_libraries():
    """stubs/megatron (the functions the checker types) against megatron-core as installed by `make setup`."""
    import pytest

    pytest.importorskip("megatron.core.tensor_parallel.mappings", reason="megatron-core is installed by make setup")
    env = {**os.environ, "MYPYPATH": str(ROOT / "stubs"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "megatron.core.tensor_parallel.mappings",
         "megatron.core.parallel_state", "--ignore-missing-stub"],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
