"""The built wheel is what a user installs: it must carry the stubs, the plugin's
recommended configuration and the ``spmd-check`` command, and work away from
this checkout."""

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


def test_the_wheel_carries_stubs_config_and_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        config = archive.read("spmd_mypy/mypy.ini.example").decode()
        entry_points = next(archive.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert {"spmd_types-stubs/__init__.pyi", "spmd_types-stubs/py.typed", "spmd_types/py.typed",
            "spmd_mypy/py.typed", "spmd_types/typesystem/ops.py"} <= names
    # The link in the checkout is packaged as the file it points to.
    assert config == (ROOT / "mypy.ini.example").read_text()
    assert "spmd-check = spmd_mypy.cli:main" in entry_points


def test_the_installed_command_checks_a_project_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    target, project = tmp_path / "site", tmp_path / "project"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                    str(wheel)], check=True, capture_output=True, text=True)
    project.mkdir()
    (project / "layers.py").write_text(BUGGY)
    # The installed copy comes first on the path, ahead of this checkout's editable install.
    env = {**os.environ, "PYTHONPATH": str(target), "NO_COLOR": "1"}
    env.pop("MYPYPATH", None)
    done = subprocess.run([str(target / "bin" / "spmd-check"), "layers.py"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "recommended settings of mypy.ini.example" in done.stdout
    assert "[spmd-partial]" in done.stdout
    assert str(ROOT) not in done.stdout + done.stderr
