"""docs/megatron.md: every Megatron mapping the page lists, checked numerically against our call.

megatron_check.py writes each Megatron-LM mapping's forward and backward as
per-rank formulas and runs the call the page names (taken from the page's own
text) on simulated ranks; it runs in a subprocess because it initializes a
process-wide fake process group.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "megatron.md"


def _mappings():
    from tests.docs.megatron_check import MAPPINGS  # imports torch

    return MAPPINGS


def test_every_row_of_the_page_is_checked() -> None:
    pytest.importorskip("torch")
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| `")]
    mappings = _mappings()
    for mapping in mappings:
        name = mapping.name.partition("(")[0]
        matching = [row for row in rows if row.startswith(f"| `{name}")]
        assert matching, f"{name} is not in the table of docs/megatron.md"
        assert any(f"`{mapping.call}`" in row for row in matching), f"{name}: the page does not name {mapping.call}"
    assert len(rows) == len(mappings), "a row of the table has no numerical check"


def test_megatron_mappings_match_numerically() -> None:
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-m", "tests.docs.megatron_check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") == len(_mappings())
