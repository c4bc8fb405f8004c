"""docs/errors.md: one section per error code, each with an example that mypy really reports.

Every marked sample of the page is type-checked with the plugin (see
snippets.py, which reuses tests/plugin/harness.py): the page shows its output
exactly (``test_generated.py`` checks that, as for every page), and the first
sample of each code's section must produce that code.
"""

from __future__ import annotations

import pytest

from spmd_types.typesystem import Code
from tests.docs.snippets import DOCS, samples

PAGE = DOCS / "errors.md"
SAMPLES = samples(PAGE)


def _section(code: Code) -> list:
    return [s for s in SAMPLES if s.heading == f"`{code.value}`"]


def test_every_code_has_a_section() -> None:
    headings = [line[3:].strip() for line in PAGE.read_text().splitlines() if line.startswith("## ")]
    codes = [h for h in headings if h.startswith("`spmd-")]
    assert codes == [f"`{code.value}`" for code in Code], "one section per Code, in the enum's order"


@pytest.mark.parametrize("code", list(Code), ids=[c.value for c in Code])
def test_section_example_produces_its_code(mypy_outputs, code: Code) -> None:
    found = _section(code)
    assert found, f"no example in the section of {code.value}"
    first = found[0]
    assert code.value in first.codes, f"the page does not show {code.value} for its first example"
    reported = mypy_outputs[first]
    assert any(line.endswith(f"  [{code.value}]") for line in reported), reported


def test_native_codes_at_plain_name_boundaries_are_shown() -> None:
    shown = {code for s in SAMPLES for code in s.codes}
    assert {"return-value", "assignment"} <= shown


def test_silencing_example_is_clean(mypy_outputs) -> None:
    ignored = [s for s in SAMPLES if "# type: ignore[spmd-" in s.code]
    assert ignored and all(mypy_outputs[s] == [] and not s.expected for s in ignored)
