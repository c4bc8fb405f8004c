"""The runtime-checking page's samples do what the page shows when they run.

A ``text`` block marked ``<!-- runtime -->`` in ``docs/runtime-checking.md``
is what running the ``python`` sample above it under runtime checking raises
(the error's class and message); the same sample's mypy output is checked by
``tests/docs/test_examples.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import spmd_types as spmd  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "runtime-checking.md"
_BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.DOTALL)


def _samples() -> list[tuple[str, str]]:
    """``(python code, expected text)`` for each ``<!-- runtime -->`` block, with the last sample before it."""
    text = PAGE.read_text()
    found, code = [], None
    for match in _BLOCK.finditer(text):
        info, body = match.group(1), match.group(2)
        if info == "python":
            code = body
        elif info == "text" and text[: match.start()].rstrip().endswith("<!-- runtime -->"):
            assert code is not None, "a runtime block needs a python sample before it"
            found.append((code, body.strip()))
    return found


SAMPLES = _samples()


def test_the_page_has_a_runtime_sample() -> None:
    assert SAMPLES


@pytest.mark.parametrize(("code", "expected"), SAMPLES)
def test_the_sample_raises_what_the_page_shows(code: str, expected: str) -> None:
    with pytest.raises(spmd.SpmdTypeCheckError) as caught:
        exec(compile(code, str(PAGE), "exec"), {"__name__": "runtime_sample"})
    assert f"{type(caught.value).__name__}: {caught.value}" == expected
