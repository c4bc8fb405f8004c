"""The built wheel is what a user installs: it must carry the stubs, the
``spmd-check`` command (which prints the recommended configuration) and the
``spmd-annotate`` and ``spmd-migrate`` codemods, and work away from this
checkout, with or without mypy installed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BUGGY = textwrap.dedent(
    """
    from typing import Annotated

    from torch import Tensor

    from spmd_types import I, P, R, all_reduce


    def bias_before_reduction(
        y: Annotated[Tensor, P["tp"]], bias: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, R["tp"]]:
        return all_reduce(y + bias, "tp", src=P, dst=R)
    """
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_carries_stubs_and_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert {"spmd_types-stubs/__init__.pyi", "spmd_types-stubs/py.typed", "spmd_types/py.typed",
            "spmd_mypy/py.typed", "spmd_types/typesystem/ops.py", "megatron-stubs/py.typed",
            "megatron-stubs/core/tensor_parallel/mappings.pyi", "megatron-stubs/core/parallel_state.pyi",
            "spmd_types/codemods/annotate.py", "spmd_types/codemods/migrate.py"} <= names
    assert "spmd-check = spmd_mypy.cli:main" in entry_points
    assert "spmd-annotate = spmd_types.codemods.annotate:main" in entry_points
    assert "spmd-migrate = spmd_types.codemods.migrate:main" in entry_points


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed on its own (no dependencies) into a directory of its own."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                    str(wheel)], check=True, capture_output=True, text=True)
    return target


def test_the_installed_command_checks_a_project_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    target, project = installed, tmp_path / "project"
    project.mkdir()
    (project / "layers.py").write_text(BUGGY)
    # The installed copy comes first on the path, ahead of this checkout's editable install.
    env = {**os.environ, "PYTHONPATH": str(target), "NO_COLOR": "1"}
    env.pop("MYPYPATH", None)
    done = subprocess.run([str(target / "bin" / "spmd-check"), "layers.py"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "recommended settings (spmd-check --print-config)" in done.stdout
    assert "[spmd-partial]" in done.stdout
    assert str(ROOT) not in done.stdout + done.stderr


def test_the_installed_command_without_mypy(installed: Path, tmp_path: Path) -> None:
    """Installed without the [mypy] extra: one line says what to install, and --print-config still works."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    env = {**os.environ, "PYTHONPATH": str(installed)}
    done = subprocess.run([str(python), "-m", "spmd_mypy.cli", "layers.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("spmd-check: mypy is not installed in this Python environment"), done.stderr
    assert 'pip install "mypy>=2.0,<3"' in done.stderr and "Traceback" not in done.stderr
    printed = subprocess.run([str(python), "-m", "spmd_mypy.cli", "--print-config", "pyproject"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=120, check=True)
    assert 'plugins = ["spmd_mypy.plugin"]' in printed.stdout
