"""Every error the runtime raises for bad input: its class and a message that helps."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
from torch.distributed._local_tensor import LocalTensorMode  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types._errors import (  # noqa: E402
    CollectiveArgumentError,
    NoCurrentMeshError,
    NotDifferentiableError,
    ShapeError,
    SpmdError,
    SpmdRuntimeError,
    SpmdValueError,
    UnknownAxisError,
)


@pytest.fixture
def ctx(sim8):
    """Simulated 2x4 world with the mesh current; yields a rank_map helper."""
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        yield mode


def _t(mode, *shape):
    return mode.rank_map(lambda r: torch.randn(*shape))


def test_error_hierarchy() -> None:
    assert issubclass(CollectiveArgumentError, ValueError) and issubclass(CollectiveArgumentError, SpmdError)
    assert issubclass(ShapeError, SpmdValueError) and issubclass(UnknownAxisError, ValueError)
    assert issubclass(NoCurrentMeshError, RuntimeError) and issubclass(NoCurrentMeshError, SpmdRuntimeError)
    assert issubclass(NotDifferentiableError, RuntimeError)
    assert spmd.SpmdRuntimeError is SpmdRuntimeError


def test_unknown_axis_lists_the_mesh_axes(ctx) -> None:
    with pytest.raises(UnknownAxisError, match=r"no axis 'pp'.*'dp', 'tp'") as info:
        spmd.all_reduce(_t(ctx, 2), "pp", dst=R)
    assert info.value.known == ("dp", "tp")
    with pytest.raises(ValueError):
        spmd.axis_size("pp")


def test_axis_name_without_mesh(sim8) -> None:
    with pytest.raises(NoCurrentMeshError, match="set_current_mesh"):
        spmd.all_gather(torch.ones(2), "tp", dst=R)
    with pytest.raises(RuntimeError):
        spmd.axis_index("tp")


def test_bad_axis_objects(sim8, ctx) -> None:
    with pytest.raises(UnknownAxisError, match="mesh-axis name, a tuple of them, a ProcessGroup"):
        spmd.all_reduce(_t(ctx, 2), 3, dst=R)  # type: ignore[arg-type]
    with pytest.raises(UnknownAxisError, match="one-dimensional"):
        spmd.all_reduce(_t(ctx, 2), sim8.mesh, dst=R)


def test_mesh_without_names(sim8) -> None:
    from torch.distributed.device_mesh import init_device_mesh

    unnamed = init_device_mesh("cpu", (8,))
    with pytest.raises(UnknownAxisError, match="mesh_dim_names"):
        with spmd.set_current_mesh(unnamed):
            pass


@pytest.mark.parametrize(
    "call, kwargs, fix",
    [
        ("all_reduce", {"src": R, "dst": R}, ""),  # the core offers no fix for summing replicas
        ("all_reduce", {"src": I, "dst": R}, "convert"),
        ("all_reduce", {"src": P, "dst": V}, "reduce_scatter"),
        ("all_gather", {"src": P, "dst": R}, "all_reduce"),
        ("all_gather", {"src": V, "dst": V}, "all_to_all"),
        ("reduce_scatter", {"src": P, "dst": R}, "all_reduce"),
        ("all_to_all", {"src": R, "dst": V}, "convert"),
        ("reinterpret", {"src": P, "dst": R}, "all_reduce"),
        ("reinterpret", {"src": V, "dst": R}, "all_gather"),
        ("convert", {"src": P, "dst": V}, "reduce_scatter"),
        ("convert", {"src": V, "dst": R}, "all_gather"),
        ("redistribute", {"src": R, "dst": R}, None),  # allowed: identity
    ],
)
def test_disallowed_pairs_render_the_core_violation(ctx, call, kwargs, fix) -> None:
    fn = getattr(spmd, call)
    x = _t(ctx, 4, 4)
    if fix is None:
        assert fn(x, "tp", **kwargs) is x
        return
    with pytest.raises(CollectiveArgumentError) as info:
        fn(x, "tp", **kwargs)
    message = str(info.value)
    assert message.startswith(f"{call} on axis 'tp': {call} does not accept")
    if fix:
        assert "fix:" in message and f"{fix}(x, \"tp\"" in message
    assert info.value.violation is not None


def test_type_arguments_must_be_types(ctx) -> None:
    with pytest.raises(CollectiveArgumentError, match=r"src= must be one of R, I, V, P or S\(dim\)"):
        spmd.all_reduce(_t(ctx, 2), "tp", src="P", dst=R)  # type: ignore[arg-type]
    with pytest.raises(CollectiveArgumentError, match="dst="):
        spmd.convert(_t(ctx, 2), "tp", src=R, dst=[1])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call, shape, kwargs, pattern",
    [
        ("reduce_scatter", (6, 2), {"dst": S(0)}, r"dim 0 of the input \(size 6\) is not divisible by the size 4 of axis 'tp'"),
        ("reduce_scatter", (3, 2), {"dst": V}, r"dim 0 of the input must have one entry per rank of axis 'tp' \(size 4\)"),
        ("reduce_scatter", (4, 5), {"dst": V, "scatter_dim": 1}, "one entry per rank"),
        ("all_to_all", (4, 6), {"src": S(0), "dst": S(1)}, "not divisible"),
        ("all_to_all", (3, 4), {}, "one entry per rank"),
        ("convert", (6,), {"src": R, "dst": S(0)}, "not divisible"),
        ("convert", (5, 2), {"src": I, "dst": V}, "one entry per rank"),
        ("all_gather", (2, 2), {"src": S(2), "dst": R}, r"src=S\(dim\)=2 is out of range"),
        ("reduce_scatter", (4,), {"dst": S(-2)}, "out of range"),
        ("all_gather", (2,), {"dst": R, "gather_dim": 3}, "gather_dim=3 is out of range"),
    ],
)
def test_shapes_that_do_not_fit(ctx, call, shape, kwargs, pattern) -> None:
    with pytest.raises(ShapeError, match=pattern):
        getattr(spmd, call)(_t(ctx, *shape), "tp", **kwargs)


def test_dims_that_disagree_with_the_shard(ctx) -> None:
    x = _t(ctx, 4, 4)
    with pytest.raises(CollectiveArgumentError, match=r"gather_dim=1 disagrees with S\(0\)"):
        spmd.all_gather(x, "tp", src=S(0), dst=R, gather_dim=1)
    spmd.all_gather(x, "tp", src=S(0), dst=R, gather_dim=0)  # agreeing is fine
    with pytest.raises(CollectiveArgumentError, match="scatter_dim"):
        spmd.reduce_scatter(x, "tp", dst=S(1), scatter_dim=0)
    with pytest.raises(CollectiveArgumentError, match="split_dim"):
        spmd.all_to_all(x, "tp", src=S(0), dst=S(1), split_dim=0)
    with pytest.raises(CollectiveArgumentError, match="concat_dim"):
        spmd.all_to_all(x, "tp", src=S(0), dst=S(1), concat_dim=1)
    with pytest.raises(CollectiveArgumentError, match=r"concat_dim and the shard dim are both dim 0"):
        spmd.all_to_all(x, "tp", src=V, dst=S(0))
    with pytest.raises(CollectiveArgumentError, match=r"split_dim and the shard dim are both dim 0"):
        spmd.all_to_all(x, "tp", src=S(0), dst=V)


def test_split_sizes(ctx) -> None:
    x = _t(ctx, 10, 2)
    with pytest.raises(CollectiveArgumentError, match=r"split_sizes= needs a shard S\(i\), not V"):
        spmd.all_gather(x, "tp", dst=R, split_sizes=[1, 2, 3, 4])
    with pytest.raises(CollectiveArgumentError, match="4 non-negative ints"):
        spmd.reduce_scatter(x, "tp", dst=S(0), split_sizes=[5, 5])
    with pytest.raises(ShapeError, match=r"add up to 9, but dim 0 has size 10"):
        spmd.reduce_scatter(x, "tp", dst=S(0), split_sizes=[1, 2, 3, 3])
    with pytest.raises(ShapeError, match="split_sizes says"):
        spmd.all_gather(x, "tp", src=S(0), dst=R, split_sizes=[1, 2, 3, 4])


def test_bad_reduce_op(ctx) -> None:
    with pytest.raises(CollectiveArgumentError, match='op must be "sum", "avg", "max" or "min"'):
        spmd.all_reduce(_t(ctx, 2), "tp", dst=R, op="prod")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "perm, pattern",
    [
        ([(0, 1), (1, 1)], "destination 1 appears twice"),
        ([(0, 1), (0, 2)], "source 0 appears twice"),
        ([(0, 4)], r"not in range\(4\)"),
        ([(0,)], r"\(source, destination\) pairs"),
        ([(0, True)], "not in range"),
        ([[0, 1]], r"\(source, destination\) pairs"),
    ],
)
def test_bad_permutations(ctx, perm, pattern) -> None:
    from spmd_types import _collectives

    _collectives._PERMUTATIONS.clear()  # validated permutations are cached by value
    with pytest.raises(CollectiveArgumentError, match=pattern):
        spmd.ppermute(_t(ctx, 2), "tp", perm)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_have_no_gradient(ctx, op) -> None:
    x = _t(ctx, 3).requires_grad_()
    y = spmd.all_reduce(x, "tp", src=V, dst=I, op=op)
    with pytest.raises(NotDifferentiableError, match=re.escape(f'all_reduce(op="{op}")') + ".*detach"):
        y.sum().backward()
    # detached statistics are fine
    spmd.all_reduce(x.detach(), "tp", src=V, dst=R, op=op)


def test_plain_tensor_under_local_tensor_mode(ctx) -> None:
    with ctx.disable():
        plain = torch.ones(4)
    with pytest.raises(SpmdRuntimeError, match="must be a LocalTensor"):
        spmd.convert(plain, "tp", src=R, dst=V)
