"""benchmarks/compare_builds.py: runs two versions of the plugin against plain mypy and tabulates them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "compare_builds.py"


def test_compares_a_commit_with_the_working_tree() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--blocks", "1", "--repeats", "1", "HEAD", "WORKTREE"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()
            if line.startswith(("plain mypy", "HEAD", "WORKTREE")) and "[" in line}
    assert set(rows) == {"plain", "HEAD", "WORKTREE"}
    assert rows["plain"][-2] == "1.00"  # the baseline's ratio to itself
    for label in ("HEAD", "WORKTREE"):
        cpu, ratio = float(rows[label][1]), float(rows[label][-2])
        assert cpu > 0 and ratio > 0
