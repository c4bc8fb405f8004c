"""The pages that show what the checker says about code carry checked samples.

Each marked sample's output on its page is exactly what mypy prints for it:
``make generated-docs`` writes it there, and ``test_generated.py`` fails while
a page shows anything else (see snippets.py for how samples are marked).
"""

from __future__ import annotations

from tests.docs.snippets import all_samples


def test_pages_have_checked_samples() -> None:
    pages = {s.page.name for s in all_samples()}
    assert {"index.md", "getting-started.md", "megatron.md", "uneven-and-multi-axis.md"} <= pages
