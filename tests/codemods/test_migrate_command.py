"""``spmd-migrate``: files and directories, in place, ``--diff`` and ``--check``, the report and the exit status."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("libcst", reason="libcst is the codemods extra; make setup installs it")

from spmd_types.codemods.migrate import main, python_files

LAYER = textwrap.dedent('''\
    from megatron.core.tensor_parallel import copy_to_tensor_model_parallel_region


    def forward(x, group):
        return copy_to_tensor_model_parallel_region(x, group=group)  # into the region
    ''')
MIGRATED = textwrap.dedent('''\
    from spmd_types import I, R, reinterpret


    def forward(x, group):
        return reinterpret(x, group, src=I, dst=R)  # into the region
    ''')
LEFT = textwrap.dedent('''\
    import torch


    def reduce(x, group):
        torch.distributed.all_reduce(x, group=group)
    ''')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "layer.py").write_text(LAYER)
    (tmp_path / "model" / "clean.py").write_text("x = 1\n")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "vendored.py").write_text(LAYER)
    return tmp_path


def test_rewrites_in_place_and_a_second_run_has_nothing_to_do(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(project)]) == 0
    assert (project / "model" / "layer.py").read_text() == MIGRATED
    assert (project / ".venv" / "lib" / "vendored.py").read_text() == LAYER  # hidden directories are skipped
    assert capsys.readouterr().err.endswith("spmd-migrate: rewrote 1 call(s) in 1 file(s); 0 call(s) left as they were\n")
    assert main([str(project)]) == 0
    assert "rewrote 0 call(s) in 0 file(s)" in capsys.readouterr().err


def test_diff_prints_the_change_and_writes_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layer = project / "model" / "layer.py"
    assert main(["--diff", str(layer)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"--- {layer}\n+++ {layer}\n")
    assert "-    return copy_to_tensor_model_parallel_region(x, group=group)  # into the region\n" in out
    assert "+    return reinterpret(x, group, src=I, dst=R)  # into the region\n" in out
    assert layer.read_text() == LAYER


def test_check_lists_the_files_that_would_change(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", str(project / "model")]) == 1
    assert capsys.readouterr().out == f"would rewrite {project / 'model' / 'layer.py'}\n"
    assert (project / "model" / "layer.py").read_text() == LAYER
    assert main(["--check", str(project / "model" / "clean.py")]) == 0


def test_calls_left_as_they_were_are_reported_by_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "reduce.py").write_text(LEFT)
    assert main([str(tmp_path / "reduce.py")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'reduce.py'}:5: torch.distributed.all_reduce not rewritten: it overwrites its tensor" in err
    assert err.endswith("rewrote 0 call(s) in 0 file(s); 1 call(s) left as they were\n")
    assert (tmp_path / "reduce.py").read_text() == LEFT


def test_bad_paths_and_invalid_python_exit_2_after_the_other_files(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "layer.py").write_text(LAYER)
    assert main([str(tmp_path / "missing.py"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'missing.py'}: no such file or directory" in err
    assert f"{tmp_path / 'broken.py'}: not valid Python, left as it is" in err
    assert (tmp_path / "layer.py").read_text() == MIGRATED


def test_line_endings_are_kept(tmp_path: Path) -> None:
    layer = tmp_path / "layer.py"
    layer.write_bytes(LAYER.replace("\n", "\r\n").encode())
    assert main([str(layer)]) == 0
    assert layer.read_bytes() == MIGRATED.replace("\n", "\r\n").encode()


def test_files_are_found_once_in_a_stable_order(project: Path) -> None:
    model = project / "model"
    assert list(python_files([model, model / "layer.py", project])) == [model / "clean.py", model / "layer.py"]


def test_without_libcst_the_command_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "layer.py").write_text(LAYER)
    blocked = "import sys; sys.modules['libcst'] = None; from spmd_types.codemods.migrate import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", blocked, str(tmp_path / "layer.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "spmd-migrate needs libcst: pip install 'spmd-typecheck[codemods]' (or pip install libcst)\n"
    assert (tmp_path / "layer.py").read_text() == LAYER


def test_the_console_script_runs_the_command(tmp_path: Path) -> None:
    (tmp_path / "layer.py").write_text(LAYER)
    script = Path(sys.executable).with_name("spmd-migrate")
    if not script.exists():
        pytest.skip("the package is not installed with its console scripts (make setup installs them)")
    done = subprocess.run([str(script), "--check", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, f"would rewrite {tmp_path / 'layer.py'}\n")
