"""The global SPMD page's samples print what the page shows.

A ``python`` block after ``<!-- output -->`` in ``docs/global-spmd.md`` runs
the rule core (no torch); the ``text`` block right after it is what it prints.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "global-spmd.md"
_SAMPLE = re.compile(r"<!-- output -->\n```python\n(.*?)```\n+```text\n(.*?)```", re.DOTALL)
SAMPLES = _SAMPLE.findall(PAGE.read_text())


def test_the_page_has_samples() -> None:
    assert len(SAMPLES) >= 3


@pytest.mark.parametrize(("code", "shown"), SAMPLES, ids=[f"sample{k}" for k in range(len(SAMPLES))])
def test_the_sample_prints_what_the_page_shows(code: str, shown: str) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "page_sample"})
    assert printed.getvalue() == shown
