"""torch's and DeepSpeed's collectives in the ecosystem table compute what their equivalent calls do, forward and backward.

The checker types ``torch.distributed.nn.functional.all_gather(x, group=g)``
as ``all_gather(x, axis, src=V, dst=R)`` unbound along dim 0, DeepSpeed's
``single_all_to_all(x, 2, 1, 0, g)`` as ``all_to_all(x, axis, src=S(1),
dst=S(2))``, and so on.  Each case here calls the library function as user
code does and the equivalent ``spmd_types`` call, built from the table entry
alone, on the same per-rank inputs and cotangents on real gloo processes
(torch's list collectives ask their group for this rank, which the simulated
ranks of ``LocalTensorMode`` cannot answer per rank); every rank compares
outputs and input gradients.  torch is the installed 2.13.0; DeepSpeed's
``layer.py`` is the file ``make setup`` installs (see
``tests/runtime/deepspeed_layer.py``).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as funcol  # noqa: E402
import torch.distributed.nn.functional as dist_nn  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types.typesystem import EQUIVALENTS, REEXPORTS, WORLD, Equivalent  # noqa: E402
from tests.runtime.deepspeed_layer import load_layer  # noqa: E402

AXIS = "tp"
DEEPSPEED = "deepspeed.sequence.layer"


@dataclass(frozen=True)
class Case:
    """A library call ``call(function, x, group, n)`` on a per-rank input of ``shape(n)``, the axis size ``n``.

    ``dims`` are the literal shard dims it passes (``src_dim``, ``dst_dim``);
    ``backend`` the one torch's backward is asked to take (its backward
    differs by backend); ``op`` a reduction other than the sum, whose
    gradient the equivalent does not have: only the forward is compared.
    ``world_group_only``: torch's gloo path of ``all_to_all`` (which the
    backward of ``all_gather`` runs too) scatters from the group rank as if it
    were a global rank, which fails on a subgroup; it runs only where the
    axis is the whole world.
    """

    function: str
    call: Callable[[Any, Any, Any, int], Any]
    shape: Callable[[int], tuple[int, ...]]
    dims: tuple[int | None, int | None] = (None, None)
    backend: str | None = None
    op: str = "sum"
    name: str = field(default="")
    world_group_only: bool = False


def _square(n: int) -> tuple[int, ...]:
    return (2 * n, 3 * n)


def _stacked(n: int) -> tuple[int, ...]:
    return (n, 2 * n, 3)


def _heads(n: int) -> tuple[int, ...]:
    return (2, 3, 2 * n, 5)  # [batch, sequence/n, heads, head dim]


def _sequence(n: int) -> tuple[int, ...]:
    return (2, 3 * n, 2, 5)  # [batch, sequence, heads/n, head dim]


def _sequence_first(n: int) -> tuple[int, ...]:
    return (3, 2, 2 * n, 5)  # [sequence/n, batch, heads, head dim]


_NN = "torch.distributed.nn.functional"
_FC = "torch.distributed._functional_collectives"

CASES = [
    Case(f"{_NN}.all_reduce", lambda f, x, g, n: f(x, group=g), _square),
    Case(f"{_NN}.all_reduce", lambda f, x, g, n: f(x, op=dist.ReduceOp.MAX, group=g), _square, op="max",
         name="max"),
    Case(f"{_NN}.all_gather", lambda f, x, g, n: f(x, group=g), _square, name="gloo", world_group_only=True),
    Case(f"{_NN}.all_gather", lambda f, x, g, n: f(x, group=g), _square, backend="nccl", name="nccl"),
    Case(f"{_NN}.reduce_scatter", lambda f, x, g, n: f(torch.empty_like(x[0]), list(x.unbind(0)), group=g),
         _stacked),
    Case(f"{_NN}.all_to_all", lambda f, x, g, n: f([torch.empty_like(x[0]) for _ in range(n)], list(x.unbind(0)),
                                                    group=g), _stacked, name="gloo", world_group_only=True),
    Case(f"{_NN}.all_to_all", lambda f, x, g, n: f([torch.empty_like(x[0]) for _ in range(n)], list(x.unbind(0)),
                                                    group=g), _stacked, backend="nccl", name="nccl"),
    Case(f"{_NN}.all_to_all_single", lambda f, x, g, n: f(torch.empty_like(x), x, group=g), _square),
    # torch's backward runs on NCCL and XCCL only (elsewhere it raises): that backward is compared.
    Case(f"{_NN}._all_gather_base", lambda f, x, g, n: f(x.new_empty(n * x.shape[0], *x.shape[1:]), x, group=g),
         _square, backend="nccl"),
    Case(f"{_FC}.all_reduce", lambda f, x, g, n: f(x, "sum", g), _square),
    Case(f"{_FC}.all_reduce", lambda f, x, g, n: f(x, "max", g), _square, op="max", name="max"),
    *(Case(f"{_FC}.{name}", lambda f, x, g, n: f(x, 1, g), _square, dims=(1, None))
      for name in ("all_gather_single", "all_gather_single_autograd", "all_gather_tensor",
                   "all_gather_tensor_autograd")),
    *(Case(f"{_FC}.{name}", lambda f, x, g, n: f(x, "sum", 1, g), _square, dims=(None, 1))
      for name in ("reduce_scatter_single", "reduce_scatter_single_autograd", "reduce_scatter_tensor",
                   "reduce_scatter_tensor_autograd")),
    *(Case(f"{_FC}.{name}", lambda f, x, g, n: f(x, None, None, g), _square)
      for name in ("all_to_all_single", "all_to_all_single_autograd")),
    # Ulysses: sequence shards to head shards, and back; batch first, then sequence first.
    Case(f"{DEEPSPEED}._SeqAllToAll.apply", lambda f, x, g, n: f(g, x, 2, 1, 0), _heads, dims=(1, 2),
         name="seq-to-heads"),
    Case(f"{DEEPSPEED}._SeqAllToAll.apply", lambda f, x, g, n: f(g, x, 1, 2, 0), _sequence, dims=(2, 1),
         name="heads-to-seq"),
    Case(f"{DEEPSPEED}._SeqAllToAll.apply", lambda f, x, g, n: f(g, x, 2, 0, 1), _sequence_first, dims=(0, 2),
         name="seq-first"),
]


def _library_function(function: str) -> Any:
    if function.startswith(DEEPSPEED):
        module: Any = load_layer()
        for name in function[len(DEEPSPEED) + 1:].split("."):
            module = getattr(module, name)
        return module
    module_name, _, name = function.rpartition(".")
    return getattr(__import__(module_name, fromlist=[name]), name)


def _ours(entry: Equivalent, x: Any, case: Case) -> Any:
    """The equivalent call, from the table entry: ``spmd_types.<call>(x, axis, src=..., dst=..., op=...)``."""
    src, dst = entry.endpoints(*case.dims)
    keywords: dict[str, Any] = {"src": src, "dst": dst}
    if case.op != "sum":
        keywords["op"] = case.op
    return getattr(spmd, entry.call)(x, AXIS, **keywords)


def _compare(rank: int, world: int, mesh: Any, index: int) -> None:
    case = CASES[index]
    entry = EQUIVALENTS[case.function]
    function = _library_function(case.function)
    group = mesh.get_group(AXIS)
    n = mesh.size(mesh.mesh_dim_names.index(AXIS))
    generator = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(case.shape(n), dtype=torch.float64, generator=generator)
    if case.backend is not None:  # the backward torch takes on that backend (its collectives run on gloo)
        dist.get_backend = lambda group=None: case.backend  # this forked process only

    theirs_in = x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch deprecates some of these functions
        theirs = case.call(function, theirs_in, group, n)
    if isinstance(theirs, funcol.AsyncCollectiveTensor):
        theirs = theirs.wait()
    if entry.returns_tuple:
        assert isinstance(theirs, tuple) and len(theirs) == n
        theirs = torch.stack(theirs)
    ours_in = x.clone().requires_grad_()
    with spmd.set_current_mesh(mesh):
        ours = _ours(entry, ours_in, case)
    assert theirs.shape == ours.shape, (case.function, theirs.shape, ours.shape)
    torch.testing.assert_close(theirs, ours, rtol=0, atol=1e-12, msg=f"{case.function}: forward differs")
    if case.op != "sum":
        return  # no gradient is claimed: the equivalent's result is a constant

    cotangent = torch.randn(ours.shape, dtype=torch.float64, generator=generator)
    theirs.backward(cotangent.clone())
    ours.backward(cotangent.clone())
    assert theirs_in.grad is not None and ours_in.grad is not None
    torch.testing.assert_close(theirs_in.grad, ours_in.grad, rtol=0, atol=1e-12,
                               msg=f"{case.function}: backward differs")


def _id(case: Case) -> str:
    name = case.function.rpartition(".")[2] if not case.function.endswith(".apply") else "_SeqAllToAll.apply"
    module = {_NN: "nn", _FC: "funcol"}.get(case.function.rpartition(".")[0], "deepspeed")
    return f"{module}.{name}" + (f"-{case.name}" if case.name else "")


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("index", range(len(CASES)), ids=[_id(c) for c in CASES])
def test_library_function_matches_its_equivalent(gloo, world: int, index: int) -> None:
    case = CASES[index]
    if case.function.startswith(DEEPSPEED) and load_layer() is None:
        pytest.skip("deepspeed is installed by `make setup`; run the suite through make")
    if case.world_group_only and world != 2:  # the ("dp", "tp") mesh of 2 ranks is (1, 2): tp is the world
        pytest.skip("torch's gloo path fails on a subgroup (see Case)")
    gloo(world, _compare, index)


TABLED = [e for e in EQUIVALENTS.values() if not e.function.startswith("megatron.")]


def test_every_entry_has_a_case() -> None:
    assert {e.function for e in TABLED} == {c.function for c in CASES}


@pytest.mark.parametrize("entry", TABLED, ids=lambda e: e.function.partition(".")[2])
def test_the_table_names_the_library_parameters(entry: Equivalent) -> None:
    """The table's parameter list is the library function's own, and the default group is torch's WORLD."""
    if entry.function.startswith(DEEPSPEED) and load_layer() is None:
        pytest.skip("deepspeed is installed by `make setup`")
    function = _library_function(entry.function)
    if entry.function.endswith(".apply"):  # Function.apply(*args) passes them to forward, after ctx
        function = function.__self__.forward
    parameters = inspect.signature(function).parameters
    assert tuple(parameters)[1 if entry.function.endswith(".apply") else 0:] == entry.parameters
    # torch writes the default group=group.WORLD, which is None when its module is imported: the world at call time.
    assert (parameters[entry.group].default is None) == (entry.default_role == WORLD)


def test_the_deepspeed_stubs_name_the_library_parameters() -> None:
    """stubs/deepspeed gives each typed function the parameters of DeepSpeed's own (stubtest cannot import it)."""
    import ast
    from pathlib import Path

    layer = load_layer()
    if layer is None:
        pytest.skip("deepspeed is installed by `make setup`")
    stub = ast.parse((Path(__file__).parents[2] / "stubs" / "deepspeed" / "sequence" / "layer.pyi").read_text())
    functions = {node.name: node for node in ast.walk(stub) if isinstance(node, ast.FunctionDef)}
    for entry in (e for e in TABLED if e.function.startswith(DEEPSPEED)):
        stubbed = [a.arg for a in functions[entry.name].args.args if a.arg != "cls"]
        assert tuple(stubbed) == entry.parameters


def test_torch_distributed_nn_reexports_the_functions() -> None:
    assert REEXPORTS["torch.distributed.nn"] == _NN
    for entry in (e for e in TABLED if e.function.startswith(_NN) and not e.name.startswith("_")):
        assert getattr(dist.nn, entry.name) is getattr(dist_nn, entry.name)
