"""The verdicts of some case files, confirmed by running them on simulated ranks.

For the case files listed here, every runnable function (:class:`tests.fixes.programs.FunctionProgram`:
tensor parameters and result of declared types other than ``V``) runs on 2 and 4 ranks per axis
and on one rank, which is what it computes on one device.  A function the plugin rejects (a
``# E:`` marker in it) must differ somewhere: the hole it closes is real.  A function the plugin
accepts (``# OK``) must match everywhere: accepting it is right.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch

from examples.layout import ReplicasDiffer
from tests.fixes.programs import FunctionProgram, _Run, meshes

CASES = Path(__file__).parent / "cases"
FILES = ("accumulators.py", "aliasing.py", "lengths.py", "ops_fills_and_scatters.py", "statistics.py")


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"case_{name.removesuffix('.py')}", CASES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _functions() -> list[tuple[str, str]]:
    found = []
    for name in FILES:
        for fname, function in inspect.getmembers(_module(name), inspect.isfunction):
            if function.__module__.startswith("case_") and isinstance(FunctionProgram.of(function), FunctionProgram):
                found.append((name, fname))
    return found


def _rejected(function: Callable[..., object]) -> bool:
    source = inspect.getsource(function)
    assert ("# E:" in source) != ("# OK" in source), f"{function.__name__}: mark it # E: or # OK"
    return "# E:" in source


@pytest.mark.parametrize(("file", "name"), _functions())
def test_the_verdict_holds_on_simulated_ranks(file: str, name: str) -> None:
    function = getattr(_module(file), name)
    program = FunctionProgram.of(function)
    assert isinstance(program, FunctionProgram)
    reference = program.reference(function)
    if _rejected(function):
        assert not all(_matches(program, function, reference, sizes) for sizes in meshes(program.axes)), (
            f"{name} is rejected, but computes the single-device values")
    else:
        comparisons = [program.compare(function, reference, sizes) for sizes in meshes(program.axes)]
        assert all(c.ok for c in comparisons), "\n".join(str(c) for c in comparisons if not c.ok)


def _matches(program: FunctionProgram, function: Callable[..., torch.Tensor], reference: _Run,
             sizes: dict[str, int]) -> bool:
    """Whether ``function`` on ``sizes`` matches ``reference``; ranks that disagree where they must not do not."""
    try:
        return program.compare(function, reference, sizes).ok
    except ReplicasDiffer:  # a gradient declared the same on every rank is not
        return False
