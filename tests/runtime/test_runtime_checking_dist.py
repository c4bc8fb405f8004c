"""Runtime checking of raw ``torch.distributed`` calls and of torch's functional collectives.

``torch.distributed.all_reduce`` overwrites its tensor outside autograd; the
ecosystem table of the rule core (``IN_PLACE``) says that is always a
mistake on a typed tensor, and the run-time check reports it as the plugin
does.  The functional collectives run ops that the table ``FUNCTIONAL_OPS``
types as collectives of this package, and their Python wrappers (and
``torch.distributed.nn.functional``) are typed as the table ``EQUIVALENTS``
says, with their literal dims; one test checks that each op computes what its
equivalent call does, forward and backward.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as funcol  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, S, V  # noqa: E402
from spmd_types.typesystem import FUNCTIONAL_OPS, FunctionalOp, parse  # noqa: E402


def test_an_in_place_all_reduce_of_a_typed_tensor_is_reported_before_it_runs(ranks8) -> None:
    device_mesh = ranks8.mesh
    with spmd.runtime_checking():
        p = ranks8.typed(P["tp"])
        before = p.clone()
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            dist.all_reduce(p, group=device_mesh.get_group("tp"))
        assert torch.equal(p, before)
    assert caught.value.code == "spmd-inplace"
    # The plugin's message for the same call, with the tensor named by the parameter it is passed as.
    assert str(caught.value) == (
        "torch.distributed.all_reduce on axis 'tp': the tensor is P and is overwritten in place with its "
        "all-reduce, outside autograd: it keeps its SPMD type though its data changed, and no gradient flows back "
        'through the communication; fix: tensor = all_reduce(tensor, "tp", src=P, dst=R) '
        "(all-reduce forward, all-reduce in backward)  [spmd-inplace]"
    )


def test_collected_the_summed_tensor_is_replicated_and_untyped_tensors_pass(ranks8) -> None:
    device_mesh = ranks8.mesh
    with spmd.runtime_checking(raise_errors=False) as tracker:
        p = ranks8.typed(P["tp"], V["dp"])
        dist.all_reduce(p, group=device_mesh.get_group("tp"))
        assert tracker.type_of(p) == parse("dp:V, tp:R")
        plain = ranks8.mode.rank_map(lambda rank: torch.ones(2))
        dist.all_reduce(plain, group=device_mesh.get_group("tp"))
        assert tracker.type_of(plain) is None
        v = ranks8.typed(V["tp"])
        dist.all_reduce(v, group=device_mesh.get_group("dp"))  # typed on tp, unknown on dp: nothing to say
    assert [e.code for e in tracker.errors] == ["spmd-inplace"]


def test_another_torch_distributed_call_leaves_its_tensors_unknown(ranks8) -> None:
    device_mesh = ranks8.mesh
    with spmd.runtime_checking() as tracker:
        v = ranks8.typed(V["tp"])
        dist.broadcast(v, group=device_mesh.get_group("tp"), group_src=0)
        assert tracker.type_of(v) is None  # its data was overwritten: what it holds is not known


def test_functional_collectives_are_typed_as_the_collectives_they_are(ranks8) -> None:
    device_mesh = ranks8.mesh
    tp = device_mesh.get_group("tp")
    with spmd.runtime_checking() as tracker, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the *_tensor spellings are deprecated

        def type_of(result: torch.Tensor) -> object:
            return tracker.type_of(funcol.wait_tensor(result))  # waiting keeps the type

        p = ranks8.typed(P["tp"], V["dp"])
        assert type_of(funcol.all_reduce(p, "sum", tp)) == parse("dp:V, tp:R")
        assert type_of(funcol.all_reduce(ranks8.typed(V["tp"], V["dp"]), "max", tp)) == parse("dp:V, tp:weak")
        # The Python wrappers are typed as the table's EQUIVALENTS, with their literal dims: S(0), not V.
        assert type_of(funcol.reduce_scatter_tensor(p, "sum", 0, tp)) == parse("dp:V, tp:S(0)")
        s = ranks8.typed(S["tp", 0])
        assert type_of(funcol.all_gather_tensor(s, 0, tp)) == parse("tp:R")
        assert type_of(funcol.all_gather_tensor(ranks8.typed(S["tp", 1]), 1, tp)) == parse("tp:R")
        assert type_of(funcol.all_to_all_single(s, None, None, tp)) == parse("tp:S(0)")
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            funcol.all_reduce(ranks8.typed(I["tp"]), "sum", tp)
    assert caught.value.code == "spmd-collective"
    assert str(caught.value).startswith(
        "torch.distributed._functional_collectives.all_reduce (that is, all_reduce(src=P, dst=R)) on axis 'tp': "
        "the input is I but all_reduce was told src=P; "
        "summing I data over the axis multiplies it by the axis size"
    )


def _run(entry: FunctionalOp, theirs: bool, x: torch.Tensor, group: dist.ProcessGroup) -> torch.Tensor:
    """The op on ``x``, or this package's equivalent call, working on dim 0 as the op does (``V`` read as ``S(0)``)."""
    if not theirs:
        src, dst = (S(0) if t is V else t for t in (entry.src, entry.dst))
        return getattr(spmd, entry.call)(x, group, src=src, dst=dst)
    n = group.size()
    args: list[object] = [x]
    if entry.reduce_op is not None:
        args.append("sum")
    if entry.call in ("all_gather", "reduce_scatter"):
        args.append(n)
    if entry.call == "all_to_all":
        args += [[x.shape[0] // n] * n] * 2
    args.append(group.group_name)
    namespace, _, name = entry.op.partition("::")
    return torch.ops._c10d_functional.wait_tensor(getattr(getattr(torch.ops, namespace), name)(*args))


def _output_rows(entry: FunctionalOp, rows: int, n: int) -> int:
    return {"all_gather": rows * n, "reduce_scatter": rows // n}.get(entry.call, rows)


def _outputs_and_gradients(entry: FunctionalOp, group: dist.ProcessGroup, make: object, seeds: dict[int, int],
                           ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Forward and input gradient of the op and of its equivalent, on the same data and cotangent."""
    assert callable(make)
    n, rows = group.size(), 2 * group.size()
    results = []
    for theirs in (True, False):
        data = {r: torch.randn(rows, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(s))
                for r, s in seeds.items()}
        cotangent = {r: torch.randn(_output_rows(entry, rows, n), 3, dtype=torch.float64,
                                    generator=torch.Generator().manual_seed(s + 1)) for r, s in seeds.items()}
        x = make(data).requires_grad_()
        out = _run(entry, theirs, x, group)
        out.backward(make(cotangent))
        assert x.grad is not None
        results.append((out.detach(), x.grad))
    return results


_SIMULATED = sorted(op for op in FUNCTIONAL_OPS if op.startswith("_c10d_functional::"))
# LocalTensorMode does not run the older autograd-variant ops: those are compared on real gloo ranks.
_ON_GLOO = sorted(op for op in FUNCTIONAL_OPS if op not in _SIMULATED)


@pytest.mark.parametrize("op", _SIMULATED)
def test_each_functional_op_computes_its_equivalent_forward_and_backward(ranks8, op) -> None:
    device_mesh = ranks8.mesh
    seeds = {rank: 100 + rank for rank in range(8)}
    theirs, ours = _outputs_and_gradients(
        FUNCTIONAL_OPS[op], device_mesh.get_group("tp"), lambda values: ranks8.mode.rank_map(lambda r: values[r]), seeds)
    for a, b in zip(theirs, ours):
        for rank in range(8):
            torch.testing.assert_close(a._local_tensors[rank], b._local_tensors[rank])


def _compare_on_rank(rank: int, world: int, device_mesh: object, ops: list[str]) -> None:
    group = device_mesh.get_group("tp")  # type: ignore[attr-defined]
    for op in ops:
        theirs, ours = _outputs_and_gradients(FUNCTIONAL_OPS[op], group, lambda values: values[rank],
                                              {rank: 100 + rank})
        for a, b in zip(theirs, ours):
            torch.testing.assert_close(a, b, msg=f"{op} differs from its equivalent on rank {rank}")


def test_the_autograd_variant_ops_compute_their_equivalents_on_gloo(gloo) -> None:
    gloo(4, _compare_on_rank, _ON_GLOO)


# -- torch's Python-level collectives (the ecosystem table's EQUIVALENTS) ---------------------------


def test_torch_distributed_nn_functions_are_typed_and_checked_as_their_equivalents(ranks8) -> None:
    import torch.distributed.nn.functional as dist_nn

    group = ranks8.mesh.get_group("tp")
    with spmd.runtime_checking() as tracker, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch deprecates these functions
        summed = dist_nn.all_reduce(ranks8.typed(P["tp"], V["dp"]), group=group)
        assert tracker.type_of(summed) == parse("dp:V, tp:R")
        # The default group is the world: here the 2x4 mesh's two axes, flattened.
        assert tracker.type_of(dist_nn.all_reduce(ranks8.typed(P["tp"], P["dp"]))) == parse("dp:R, tp:R")
        # A maximum is no sum: a constant, whose type the input does not decide.
        top = dist_nn.all_reduce(ranks8.typed(V["tp"]), op=dist.ReduceOp.MAX, group=group)
        assert tracker.type_of(top) != parse("tp:R")
        parts = dist_nn.all_gather(ranks8.typed(V["tp"]), group=group)
        assert [tracker.type_of(t) for t in parts] == [parse("tp:R")] * 4
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            dist_nn.all_reduce(summed, group=group)
    assert caught.value.code == "spmd-collective"
    assert str(caught.value).startswith(
        "torch.distributed.nn.functional.all_reduce (that is, all_reduce(src=P, dst=R)) on axis 'tp': the input is R")


def test_a_functional_wrapper_checks_its_literal_dim(ranks8) -> None:
    group = ranks8.mesh.get_group("tp")
    with spmd.runtime_checking(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            funcol.all_gather_tensor(ranks8.typed(S["tp", 0], shape=(2, 4)), 1, group)
    assert str(caught.value).startswith(
        "torch.distributed._functional_collectives.all_gather_tensor (that is, all_gather(src=S(1), dst=R)) on axis "
        "'tp': the input is S(0)")
