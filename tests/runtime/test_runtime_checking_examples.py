"""The examples under runtime checking: the correct ones run clean, every buggy twin is caught as the plugin catches it.

Each twin marks the error the plugin reports (``# E: [spmd-...] text`` on its
line; ``tests/examples/test_examples_typecheck.py`` checks that the plugin
reports exactly that).  Run on simulated ranks inside ``runtime_checking()``,
the twin must raise an :class:`SpmdTypeCheckError` with the same code, whose
message contains the marked text (an operator the plugin spells ``+`` is the
method it runs as, ``.add``, at run time), raised at the marked line when the
error is found while that line runs (a returned value is checked after its
function has returned).
"""

from __future__ import annotations

import traceback
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

import spmd_types as spmd  # noqa: E402
from spmd_types.typesystem import OPERATOR_SYMBOLS  # noqa: E402
from tests.examples.example_catalog import buggy_twins, correct_examples, source  # noqa: E402
from tests.plugin.harness import CaseFile  # noqa: E402


@pytest.mark.parametrize("module", correct_examples(), ids=lambda m: m.__name__.removeprefix("examples."))
def test_a_correct_example_runs_clean_and_still_matches_one_device(module: ModuleType) -> None:
    with spmd.runtime_checking(raise_errors=False) as tracker:
        comparison = module.EXAMPLE.run()
    assert [str(error) for error in tracker.errors] == []
    assert comparison.ok, str(comparison)


@pytest.mark.parametrize("module", buggy_twins(), ids=lambda m: m.__name__.removeprefix("examples.bugs."))
def test_a_buggy_twin_is_caught_with_the_plugins_error_code(module: ModuleType) -> None:
    path = source(module)
    (line, marks), = CaseFile.read(path).expected.items()
    (mark,) = marks
    with spmd.runtime_checking(), pytest.raises(spmd.SpmdTypeCheckError) as caught:
        module.EXAMPLE.run()
    error = caught.value
    assert error.code == mark.code, str(error)
    assert _same_reason(mark.text, str(error)), f"expected {mark.text!r} in {str(error)!r}"
    lines = [frame.lineno for frame in traceback.extract_tb(caught.tb) if frame.filename == str(path)]
    if lines:
        assert lines[-1] == line, f"raised at line {lines[-1]} of {path.name}, the plugin reports line {line}"


def _same_reason(expected: str, message: str) -> bool:
    if expected in message:
        return True
    where, separator, reason = expected.partition(" on axis ")
    return bool(separator) and where in OPERATOR_SYMBOLS.values() and f" on axis {reason}" in message
