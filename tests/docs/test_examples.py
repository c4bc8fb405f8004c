"""Every code sample of the docs that claims a checker result produces exactly that result.

(docs/errors.md has its own, stricter test: test_error_examples.py.)  See
snippets.py for how samples are marked.
"""

from __future__ import annotations

import pytest

from .snippets import DOCS, all_samples

SAMPLES = [s for s in all_samples() if s.page != DOCS / "errors.md"]


def test_pages_have_checked_samples() -> None:
    pages = {s.page.name for s in SAMPLES}
    assert {"index.md", "getting-started.md", "megatron.md"} <= pages


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_sample_output_is_what_the_page_shows(mypy_outputs, sample) -> None:
    assert mypy_outputs[sample] == list(sample.expected)
