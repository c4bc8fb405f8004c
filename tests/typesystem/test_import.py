"""The rule core and the markers never pull in torch, mypy or numpy.

Import *time* is measured by benchmarks/import_time.py, not asserted here.
"""

import subprocess
import sys

import pytest

SNIPPET = """
import sys
import {module}
print(",".join(sorted(m for m in ("torch", "mypy", "numpy") if m in sys.modules)))
"""


@pytest.mark.parametrize("module", ["spmd_types.typesystem", "spmd_types"])
def test_import_pulls_in_nothing_heavy(module):
    heavy = subprocess.run(
        [sys.executable, "-c", SNIPPET.format(module=module)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert heavy == "", f"importing {module} imported {heavy}"
