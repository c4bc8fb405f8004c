"""The pre-commit hook of ``.pre-commit-hooks.yaml``, run by pre-commit itself, as docs/editors-and-ci.md configures it.

A throwaway project holds a clean file and a buggy one and a
``.pre-commit-config.yaml``: the one the page shows, with its ``repo:`` a
snapshot of this checkout (working tree included, so the test checks the hook
as it is now). pre-commit clones the snapshot, builds an environment with this
package and the page's ``additional_dependencies`` (torch==2.13.0 installs
from local disk here), and runs ``spmd-check``: the buggy file must fail with
its error code, and the clean file must pass alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[dev]')")

ROOT = Path(__file__).resolve().parents[2]

BUGGY = '''\
from typing import Annotated

from torch import Tensor

from spmd_types import P, R, all_reduce


def bias_before_reduction(x: Annotated[Tensor, P["tp"]], b: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(x + b, "tp", dst=R)
'''

CLEAN = BUGGY.replace("bias_before", "bias_after").replace("all_reduce(x + b, \"tp\", dst=R)", "all_reduce(x, \"tp\", dst=R) + b")



def documented_config(repo: Path, rev: str) -> str:
    """The ``.pre-commit-config.yaml`` of docs/editors-and-ci.md, its repo and rev replaced by ``repo`` and ``rev``."""
    page = (ROOT / "docs" / "editors-and-ci.md").read_text()
    blocks = [block for block in re.findall(r"```yaml\n(.*?)```", page, re.DOTALL) if "id: spmd-check" in block]
    assert len(blocks) == 1, "docs/editors-and-ci.md should show one configuration of the spmd-check hook"
    config = yaml.safe_load(blocks[0])
    (entry,) = config["repos"]
    assert [hook["id"] for hook in entry["hooks"]] == ["spmd-check"]
    entry.update(repo=str(repo), rev=rev)
    return yaml.safe_dump(config)


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _snapshot(dest: Path) -> str:
    """A git repository holding this checkout's working tree (tracked and new files, not ignored ones); its commit."""
    files = _git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():  # deleted in the working tree
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / name, follow_symlinks=False)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "snapshot")
    return _git(dest, "rev-parse", "HEAD")


def _pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def test_hook_fails_the_buggy_file_and_passes_the_clean_one(tmp_path: Path) -> None:
    hook_repo, project = tmp_path / "spmd-typecheck", tmp_path / "project"
    hook_repo.mkdir()
    project.mkdir()
    rev = _snapshot(hook_repo)
    (project / "buggy.py").write_text(BUGGY)
    (project / "clean.py").write_text(CLEAN)
    (project / ".pre-commit-config.yaml").write_text(documented_config(hook_repo, rev))
    _git(project, "init", "-q")
    _git(project, "add", "-A")

    both = _pre_commit(project, tmp_path / "pre-commit-home", "--all-files")
    output = both.stdout + both.stderr
    assert both.returncode == 1, output
    assert "spmd-check (mypy with the SPMD plugin)" in output and "Failed" in output, output
    assert "1 error   buggy.py" in output and "[spmd-partial]" in output, output
    assert "clean     clean.py" in output, output

    clean = _pre_commit(project, tmp_path / "pre-commit-home", "--files", "clean.py")
    output = clean.stdout + clean.stderr
    assert clean.returncode == 0, output
    assert "Passed" in output, output
