"""One mypy run per option set over every marked sample of the docs (see snippets.py)."""

from __future__ import annotations

import pytest

from tests.docs.snippets import Sample, all_samples, check


@pytest.fixture(scope="session")
def mypy_outputs() -> dict[Sample, list[str]]:
    return check(all_samples())
