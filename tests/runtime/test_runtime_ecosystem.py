"""Each library function in the ecosystem table computes what its equivalent call does, forward and backward.

The checker types ``copy_to_tensor_model_parallel_region(x)`` as
``reinterpret(x, "tp", src=I, dst=R)``; that is right only if Megatron's
function has the same forward *and* the same backward.  Here both run on the
same per-rank inputs and cotangents on real gloo processes (Megatron's
functions ask their process group for this rank, which the simulated ranks of
``LocalTensorMode`` cannot answer per rank), and every rank compares outputs
and input gradients.  The library is the real one, installed from PyPI by
``make setup`` (``megatron-core`` without its dependencies).
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import spmd_types as spmd  # noqa: E402
from spmd_types.typesystem import (  # noqa: E402
    EQUIVALENTS,
    REEXPORTS,
    Equivalent,
)

AXIS = "tp"


MEGATRON = [e for e in EQUIVALENTS.values() if e.function.startswith("megatron.")]
"""Megatron's entries (torch's and DeepSpeed's: test_runtime_ecosystem_torch.py)."""


def _cases() -> list[tuple[Equivalent, bool]]:
    """Every entry, and each flag variant with the flag turned off."""
    return [(e, True) for e in MEGATRON] + [(e, False) for e in MEGATRON if e.variant]


CASES = _cases()


def _library_function(equivalent: Equivalent) -> Any:
    module, _, name = equivalent.function.rpartition(".")
    return getattr(__import__(module, fromlist=[name]), name)


def _compare(rank: int, world: int, mesh: Any, index: int, flag: bool) -> None:
    # Megatron allocates gather buffers with device=torch.cuda.current_device(); on CPU workers
    # that device is the CPU (this forked process only).
    torch.cuda.current_device = lambda: "cpu"
    equivalent, _ = CASES[index]
    function = _library_function(equivalent)
    group = mesh.get_group(AXIS)
    n = mesh.size(mesh.mesh_dim_names.index(AXIS))
    generator = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(2 * n, 3 * n, dtype=torch.float64, generator=generator)

    keywords = {equivalent.group: group}
    dst = equivalent.dst
    if equivalent.variant is not None and not flag:
        keywords[equivalent.variant.parameter] = False
        dst = equivalent.variant.dst_if_false
    theirs_in = x.clone().requires_grad_()
    if equivalent.default_role is None:  # the group is the first, required, argument
        theirs = function(keywords.pop(equivalent.group), theirs_in, **keywords)
    else:
        theirs = function(theirs_in, **keywords)
    ours_in = x.clone().requires_grad_()
    with spmd.set_current_mesh(mesh):
        ours = getattr(spmd, equivalent.call)(ours_in, AXIS, src=equivalent.src, dst=dst)
    assert theirs.shape == ours.shape, (equivalent.name, theirs.shape, ours.shape)
    torch.testing.assert_close(theirs, ours, rtol=0, atol=1e-12, msg=f"{equivalent.name}: forward differs")

    cotangent = torch.randn(ours.shape, dtype=torch.float64, generator=generator)
    theirs.backward(cotangent.clone())  # Megatron's _reduce all-reduces the gradient in place
    ours.backward(cotangent.clone())
    assert theirs_in.grad is not None and ours_in.grad is not None
    torch.testing.assert_close(theirs_in.grad, ours_in.grad, rtol=0, atol=1e-12,
                               msg=f"{equivalent.name}: backward differs")


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize(("index", "flag"), [(k, flag) for k, (_, flag) in enumerate(CASES)],
                         ids=[f"{e.name}{'' if flag else '-flag-off'}" for e, flag in CASES])
def test_library_function_matches_its_equivalent(gloo, world: int, index: int, flag: bool) -> None:
    pytest.importorskip("megatron.core.tensor_parallel.mappings",
                        reason="megatron-core is installed by `make setup`; run the suite through make")
    gloo(world, _compare, index, flag)


@pytest.mark.parametrize("equivalent", MEGATRON, ids=lambda e: e.name)
def test_the_table_names_the_library_parameters(equivalent: Equivalent) -> None:
    """The table's parameter list, and the ones it reads (tensor, group, flag), are the library function's own."""
    import inspect

    pytest.importorskip("megatron.core.tensor_parallel.mappings", reason="megatron-core is installed by make setup")
    parameters = inspect.signature(_library_function(equivalent)).parameters
    assert tuple(parameters) == equivalent.parameters
    group_default = parameters[equivalent.group].default
    assert (group_default is None) == (equivalent.default_role is not None)
    if equivalent.variant is not None:
        assert parameters[equivalent.variant.parameter].default is True


@pytest.mark.parametrize(("package", "module"), [(p, m) for p, m in REEXPORTS.items() if p.startswith("megatron.")])
def test_reexporting_packages_hold_the_same_functions(package: str, module: str) -> None:
    """``megatron.core.tensor_parallel.copy_to_...`` is the function of ``...mappings``, as the table says."""
    pytest.importorskip(module, reason="megatron-core is installed by make setup")
    functions = [e for e in EQUIVALENTS.values() if e.function.rpartition(".")[0] == module]
    assert functions
    for equivalent in functions:
        assert getattr(__import__(package, fromlist=[equivalent.name]), equivalent.name) is _library_function(equivalent)
