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

from tests.examples.example_catalog import buggy_twins, correct_examples  # noqa: E402


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


@pytest.mark.parametrize("seed", [0, 1])
def test_fsdp_in_mixed_precision_matches_within_its_tolerance(seed: int) -> None:
    """Parameters gathered in bfloat16, gradients reduced in float32: within rtol=1e-2, atol=2e-2."""
    from examples.fsdp_linear import EXAMPLE, MIXED_PRECISION

    assert (MIXED_PRECISION.rtol, MIXED_PRECISION.atol) == (1e-2, 2e-2)
    comparison = MIXED_PRECISION.run(seed)
    assert comparison.ok, str(comparison)
    errors = {outcome.name: outcome.max_error for outcome in comparison.outcomes}
    # The weights' rounding to bfloat16 shows in the output and the input gradient (so it did happen) ...
    assert errors["output"] > 1e-4 and errors["grad x (input)"] > 1e-4, errors
    # ... but not in the parameters' gradients, which the float32 reduce-scatter sums to float32 rounding.
    assert errors["grad weight"] < 1e-5 and errors["grad bias"] < 1e-5, errors
    assert max(e for e in errors.values() if e is not None) > 1e3 * max(
        o.max_error or 0.0 for o in EXAMPLE.run(seed).outcomes
    )
