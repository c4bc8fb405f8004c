"""Bad input a new user passes: every public call rejects it with the package's own errors.

Simulated ranks (``LocalTensorMode``) for values and messages; ``torch.compile``
on the fake backend (no simulation: the errors are raised before any
communication) for messages that must survive tracing.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch.distributed._local_tensor import LocalTensorMode  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types._errors import CollectiveArgumentError, ShapeError, SpmdError, UnknownAxisError  # noqa: E402


@pytest.fixture
def ctx(sim8):
    """Simulated 2x4 world with the mesh current; yields the mode."""
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        yield mode


def _per_rank(mode, fn):
    return {r: t for r, t in mode.rank_map(fn)._local_tensors.items()}


# -- ppermute's pairs -----------------------------------------------------------------


def test_ppermute_takes_any_iterable_and_caches_nothing_empty(ctx) -> None:
    from spmd_types import _collectives

    _collectives._PERMUTATIONS.clear()
    x = ctx.rank_map(lambda r: torch.full((2,), float(r + 1)))
    ring = [(k, (k + 1) % 4) for k in range(4)]
    # a generator (consumed once), then the same pairs as a list and as a tuple of tuples
    for perm in ((k, (k + 1) % 4) for k in range(4)), ring, tuple(ring), iter(ring):
        y = spmd.ppermute(x, "tp", perm)
        got = y._local_tensors
        for r in range(8):
            k = r % 4  # index on "tp"; the ring sends index k-1 to k
            assert torch.equal(got[r], torch.full((2,), float(r - k + (k - 1) % 4 + 1))), (perm, r)


@pytest.mark.parametrize(
    "perm, pattern",
    [
        (None, r"ppermute: perm must be an iterable of \(source, destination\) pairs, got None"),
        (3, r"got 3"),
        ("01", r"\(source, destination\) pairs, got '0'"),
    ],
)
def test_ppermute_rejects_what_is_not_pairs(ctx, perm, pattern) -> None:
    with pytest.raises(CollectiveArgumentError, match=pattern):
        spmd.ppermute(ctx.rank_map(lambda r: torch.ones(2)), "tp", perm)


# -- inputs that are not tensors, or have no dims ---------------------------------------


CALLS = [
    ("all_reduce", {"dst": R}),
    ("all_gather", {"dst": R}),
    ("reduce_scatter", {}),
    ("all_to_all", {}),
    ("reinterpret", {"src": R, "dst": V}),
    ("convert", {"src": R, "dst": V}),
    ("redistribute", {"src": V, "dst": R}),
]


@pytest.mark.parametrize("call, kwargs", CALLS)
@pytest.mark.parametrize("value", [[1.0, 2.0], 3.0, None])
def test_non_tensor_input(ctx, call, kwargs, value) -> None:
    with pytest.raises(CollectiveArgumentError, match=rf"^{call}: x must be a torch.Tensor, got {type(value).__name__}"):
        getattr(spmd, call)(value, "tp", **kwargs)


def test_non_tensor_input_to_ppermute(ctx) -> None:
    with pytest.raises(CollectiveArgumentError, match=r"ppermute: x must be a torch\.Tensor, got list"):
        spmd.ppermute([1.0], "tp", [(0, 1)])


@pytest.mark.parametrize(
    "call, kwargs, pattern",
    [
        ("convert", {"src": R, "dst": V}, r"convert to V: .*needs a dim 0 .*got a 0-dim tensor"),
        ("convert", {"src": I, "dst": V}, "convert to V"),
        ("reduce_scatter", {"dst": V}, r"reduce_scatter to V: .*needs a dim 0"),
        ("all_to_all", {}, r"all_to_all to V: .*needs a dim 0"),
        ("redistribute", {"src": R, "dst": V}, "convert to V"),
    ],
)
def test_zero_dim_input(ctx, call, kwargs, pattern) -> None:
    x = ctx.rank_map(lambda r: torch.tensor(float(r)))
    with pytest.raises(ShapeError, match=pattern):
        getattr(spmd, call)(x, "tp", **kwargs)


# -- reductions and dtypes --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_integer_average_is_rejected(ctx, dtype) -> None:
    x = ctx.rank_map(lambda r: torch.tensor([r, 3]).to(dtype))
    with pytest.raises(CollectiveArgumentError, match=rf'all_reduce\(op="avg"\) on axis .tp.: .*{str(dtype)[6:]}.*op="sum"'):
        spmd.all_reduce(x, "tp", src=V, dst=R, op="avg")
    spmd.all_reduce(x.to(torch.int64), "tp", src=V, dst=R, op="sum")  # sums of integers stay exact


def test_float_average_keeps_its_dtype(ctx) -> None:
    x = ctx.rank_map(lambda r: torch.tensor([float(r)], dtype=torch.float64))
    y = spmd.all_reduce(x, "tp", src=V, dst=R, op="avg")
    assert y.dtype == torch.float64
    assert torch.equal(y._local_tensors[0], torch.tensor([1.5], dtype=torch.float64))


def test_extremum_of_complex_is_rejected(ctx) -> None:
    x = ctx.rank_map(lambda r: torch.ones(2, dtype=torch.complex64))
    with pytest.raises(CollectiveArgumentError, match=r'all_reduce\(op="max"\) .*complex64 .*no order'):
        spmd.all_reduce(x, "tp", src=V, dst=R, op="max")


def test_complex_through_every_collective(ctx) -> None:
    x = ctx.rank_map(lambda r: torch.complex(torch.arange(16.0) + r, -torch.arange(16.0)).reshape(4, 4))
    real = ctx.rank_map(lambda r: (torch.arange(16.0) + r).reshape(4, 4))
    imag = ctx.rank_map(lambda r: -torch.arange(16.0).reshape(4, 4))
    calls = [
        lambda t: spmd.all_reduce(t, "tp", src=V, dst=R),
        lambda t: spmd.all_gather(t, "tp", src=S(1), dst=R),
        lambda t: spmd.reduce_scatter(t, "tp", src=P, dst=V),
        lambda t: spmd.all_to_all(t, "tp", src=S(0), dst=S(1)),
        lambda t: spmd.ppermute(t, "tp", [(0, 1), (1, 0)]),
    ]
    for call in calls:
        y = call(x)
        assert y.dtype == torch.complex64
        want = torch.complex(call(real), call(imag))
        for r in range(8):
            assert torch.equal(y._local_tensors[r], want._local_tensors[r])


# -- the cross-rank check (simulated ranks) ---------------------------------------------


@pytest.fixture
def checks():
    before = spmd.runtime_checks_enabled()
    spmd.set_runtime_checks(True)
    yield
    spmd.set_runtime_checks(before)


def test_shapes_that_differ_across_ranks_are_named(ctx, checks) -> None:
    x = ctx.rank_map(lambda r: torch.ones(3 if r == 2 else 2, 5))
    with pytest.raises(SpmdError, match=r"all_gather\(V -> R\) on axis 'tp': .*same dtype and shape.*rank 0 has float32\[2, 5\]; rank 2 has float32\[3, 5\]"):
        spmd.all_gather(x, "tp", dst=R)


def test_uneven_shards_may_differ_on_the_shard_dim_only(ctx, checks) -> None:
    sizes = [1, 2, 3, 4]
    x = ctx.rank_map(lambda r: torch.ones(sizes[r % 4], 2))
    y = spmd.all_gather(x, "tp", src=S(0), dst=R, split_sizes=sizes)
    assert y.shape == (10, 2)
    bad = ctx.rank_map(lambda r: torch.ones(sizes[r % 4], 3 if r == 1 else 2))
    with pytest.raises(SpmdError, match=r"rank 1 .*\[2, 3\]"):
        spmd.all_gather(bad, "tp", src=S(0), dst=R, split_sizes=sizes)


def test_matching_inputs_pass_the_check(ctx, checks) -> None:
    x = ctx.rank_map(lambda r: torch.full((4, 2), float(r)))
    y = spmd.all_reduce(x, "tp", src=V, dst=R)
    assert torch.equal(y._local_tensors[0], torch.full((4, 2), 6.0))


# -- errors under torch.compile ---------------------------------------------------------


def _bad_axis(x):
    return spmd.all_reduce(x, "pp", dst=R)


def _bad_pair(x):
    return spmd.all_gather(x, "tp", src=P, dst=R)


def _bad_shape(x):
    return spmd.convert(x, "tp", src=R, dst=V)


@pytest.mark.parametrize(
    "fn, cls, text",
    [
        (_bad_axis, UnknownAxisError, "the current mesh has no axis 'pp'; its axes are 'dp', 'tp'"),
        (_bad_pair, CollectiveArgumentError, "all_gather does not accept"),
        (_bad_shape, ShapeError, "one entry per rank of axis 'tp'"),
    ],
)
@pytest.mark.parametrize("fullgraph", [True, False])
def test_errors_keep_their_text_under_compile(sim8, fn, cls, text, fullgraph) -> None:
    import torch._dynamo

    torch._dynamo.reset()
    with spmd.set_current_mesh(sim8.mesh):
        with pytest.raises(Exception) as info:
            torch.compile(fn, fullgraph=fullgraph)(torch.ones(3))
    assert text in str(info.value), str(info.value)
    if not fullgraph:  # Dynamo falls back to eager, which raises the error itself
        assert isinstance(info.value, cls)


# -- shapes that differ across ranks, with run-time checks off ------------------------------


@pytest.mark.parametrize(
    "call, kwargs, describe",
    [
        ("all_reduce", {"src": V, "dst": R}, r"all_reduce\(P -> R\)"),
        ("all_reduce", {"src": V, "dst": I, "op": "max"}, r'all_reduce\(op="max"\)'),
        ("all_gather", {"dst": R}, r"all_gather\(V -> R\)"),
        ("all_gather", {"src": S(1), "dst": I}, r"all_gather\(S\(1\) -> I\)"),
        ("reduce_scatter", {"dst": S(1)}, r"reduce_scatter\(P -> S\(1\)\)"),
        ("all_to_all", {"src": S(1), "dst": S(1)}, r"all_to_all\(S\(1\) -> S\(1\)\)"),
        ("redistribute", {"src": P, "dst": R}, r"all_reduce\(P -> R\)"),
    ],
)
def test_shapes_that_differ_across_simulated_ranks_are_named_without_checks(ctx, call, kwargs, describe) -> None:
    """Simulated ranks are all at hand: the collectives compare them even with run-time checks off."""
    assert not spmd.runtime_checks_enabled()
    x = ctx.rank_map(lambda r: torch.ones(4, 3 if r == 6 else 4))
    with pytest.raises(ShapeError, match=rf"^{describe} on axis 'tp': every rank of the axis must pass a tensor of the "
                                         rf"same dtype and shape, but rank 4 has float32\[4, 4\]; rank 6 has float32\[4, 3\]"):
        getattr(spmd, call)(x, "tp", **kwargs)


def test_ppermute_shapes_that_differ_across_simulated_ranks(ctx) -> None:
    x = ctx.rank_map(lambda r: torch.ones(2 if r == 1 else 3))
    with pytest.raises(ShapeError, match=r"ppermute\(V -> V\) on axis 'tp': .*rank 0 has float32\[3\]; rank 1 has float32\[2\]"):
        spmd.ppermute(x, "tp", [(0, 1), (1, 0)])


# -- dtypes a reduction cannot take ----------------------------------------------------------


@pytest.mark.parametrize(
    "call, kwargs",
    [
        ("all_reduce", {"src": V, "dst": R}),
        ("reduce_scatter", {"src": V, "dst": V}),
        ("redistribute", {"src": P, "dst": R}),
        ("redistribute", {"src": P, "dst": S(0)}),
    ],
)
def test_sums_of_booleans_are_rejected(ctx, call, kwargs) -> None:
    x = ctx.rank_map(lambda r: torch.tensor([True, r % 2 == 0, False, True]))
    with pytest.raises(CollectiveArgumentError, match=rf"^{call} on axis 'tp': the sum of torch.bool values is not a "
                                                      r'bool; sum integers \(x.int\(\)\), or all_reduce with op="max"'):
        getattr(spmd, call)(x, "tp", **kwargs)


def test_booleans_reduce_with_max_and_min_and_move(ctx) -> None:
    x = ctx.rank_map(lambda r: torch.tensor([r % 4 == 1, False]))
    anywhere = spmd.all_reduce(x, "tp", src=V, dst=I, op="max")
    everywhere = spmd.all_reduce(x, "tp", src=V, dst=I, op="min")
    gathered = spmd.all_gather(x, "tp", dst=R)
    for r in range(8):
        assert anywhere._local_tensors[r].tolist() == [True, False]
        assert everywhere._local_tensors[r].tolist() == [False, False]
        assert gathered._local_tensors[r][:, 0].tolist() == [False, True, False, False]


# -- other arguments that are not what they should be -------------------------------------------


@pytest.mark.parametrize("mesh", [[1, 2], None, "dp"])
def test_set_current_mesh_needs_a_mesh(mesh) -> None:
    with pytest.raises(SpmdError, match=r"set_current_mesh needs a DeviceMesh, got"):
        with spmd.set_current_mesh(mesh):
            pass


def test_assert_type_with_checks_on_needs_a_tensor(ctx, checks) -> None:
    with pytest.raises(SpmdError, match=r"assert_type: x must be a torch.Tensor to check its SPMD types, got list"):
        spmd.assert_type([1.0, 2.0], R["tp"])


def test_assert_type_with_checks_off_returns_anything_unchanged() -> None:
    value = [1.0, 2.0]
    assert spmd.assert_type(value, R["tp"]) is value


def test_split_sizes_given_as_a_tensor_get_a_hint(ctx) -> None:
    x = ctx.rank_map(lambda r: torch.ones(8, 2))
    with pytest.raises(CollectiveArgumentError, match=r"split_sizes must be 4 non-negative ints .*; "
                                                      r"pass split_sizes=counts.tolist\(\)"):
        spmd.all_to_all(x, "tp", src=S(0), dst=S(0), split_sizes=torch.tensor([2, 2, 2, 2]))
