"""The API reference documents every public call, and tabulates the rule core on each collective's page."""

from __future__ import annotations

import pytest

from spmd_types.typesystem import CALLS
from tools.docs.reference import ANCHORS, OUT


@pytest.mark.parametrize("name", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "ppermute",
                                  "reinterpret", "convert", "redistribute", "redistribute_spec", "set_current_mesh", "axis_index",
                                  "axis_size", "assert_type", "set_dist", "use_dist", "get_dist",
                                  "einsum", "matmul", "linear", "sum"])
def test_every_public_call_is_documented(name: str) -> None:
    assert name in ANCHORS
    page = (OUT / ANCHORS[name].partition("#")[0]).read_text()
    assert f"def {name}(" in page


def test_every_collective_page_tabulates_the_core() -> None:
    for name in CALLS:
        page = (OUT / f"{name}.md").read_text()
        assert "## Accepted types" in page, name
