"""Every example runs on simulated ranks; the correct ones agree with one device, the twins do not.

Each example's ``EXAMPLE.run()`` builds it on a fake-backend mesh under
``LocalTensorMode``, runs forward and backward on every rank, and compares
the output and every gradient, put back together by their declared SPMD
types, with plain torch on the full tensors (``examples/comparison.py``).
A buggy twin must get wrong exactly the quantities its ``WRONG`` names: so
the type error the plugin reports is a real bug, and a visible one.
"""

from __future__ import annotations

from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

from example_catalog import buggy_twins, correct_examples  # noqa: E402


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("module", correct_examples(), ids=lambda m: m.__name__.removeprefix("examples."))
def test_correct_example_matches_one_device(module: ModuleType, seed: int) -> None:
    comparison = module.EXAMPLE.run(seed)
    assert comparison.outcomes, "nothing was compared"
    assert comparison.ok, str(comparison)


@pytest.mark.parametrize("module", buggy_twins(), ids=lambda m: m.__name__.removeprefix("examples.bugs."))
def test_buggy_twin_is_wrong_where_it_says(module: ModuleType) -> None:
    comparison = module.EXAMPLE.run()
    wrong = [outcome.name for outcome in comparison.mismatches]
    assert sorted(wrong) == sorted(module.WRONG), str(comparison)
