"""The walk-through runner performs a page's steps in order and writes what each command prints under it.

Whether the real walk-through pages show what their commands print is the
staleness test of the generated docs (``test_generated.py``); these tests
cover the runner itself, on small pages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs import walkthrough

PAGE = """# A page

<!-- file: pkg/data.txt -->
```text
one
```

<!-- patch -->
```diff
--- a/pkg/data.txt
+++ b/pkg/data.txt
@@ -1 +1,2 @@
 one
+two
```

<!-- run -->
```sh
cat pkg/data.txt  # the patched file
```

```text
stale output
```

Prose stays.
"""


def test_steps_run_in_order_and_outputs_replace_the_old_ones(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(walkthrough, "SCRATCH", tmp_path / "scratch")
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    assert [(s.kind, s.path) for s in walkthrough.steps(page)] == [("file", "pkg/data.txt"), ("patch", None),
                                                                   ("run", None)]
    rendered = walkthrough.with_outputs(page, walkthrough.run(page))
    assert "```text\none\ntwo\n```" in rendered and "stale output" not in rendered
    assert rendered.endswith("Prose stays.\n")
    page.write_text(rendered)
    assert walkthrough.with_outputs(page, walkthrough.run(page)) == rendered


@pytest.mark.parametrize(("marker", "fence", "message"), [
    ("<!-- run -->", "python", "a run marker must precede a sh fence"),
    ("<!-- patch -->", "text", "a patch marker must precede a diff fence"),
    ("<!-- file -->", "text", "a file marker names the file"),
])
def test_a_misplaced_marker_is_an_error(tmp_path: Path, marker: str, fence: str, message: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"{marker}\n```{fence}\nbody\n```\n")
    with pytest.raises(ValueError, match=message):
        walkthrough.steps(page)


def test_a_patch_that_does_not_apply_names_its_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(walkthrough, "SCRATCH", tmp_path / "scratch")
    page = tmp_path / "page.md"
    page.write_text(PAGE.replace(" one\n+two", " zero\n+two"))
    with pytest.raises(AssertionError, match="line 9: git apply - failed"):
        walkthrough.run(page)
