"""Collectives over several mesh axes at once: ``axis=("dp", "tp")``, one call on the flattened group.

On a simulated 2x2x2 mesh ``("pp", "dp", "tp")``, for the flattened groups of
``("dp", "tp")``, ``("pp", "tp")`` (not adjacent) and all three axes:

* every case of the rule core's table runs through the same oracle as the
  single-axis tests (per-rank forward semantics, type validity, the adjoint
  identity, the single-device reference), with the ranks of each flattened
  group ordered row-major over the axes as listed;
* ``all_reduce``, ``all_gather`` and ``reduce_scatter`` (and ``all_to_all``)
  equal, forward and backward, the same calls made on each axis in turn
  (exactly: float64 sums of at most 8 terms in the same grouping differ at
  most by rounding, checked to 1e-12);
* the resolution: axis order, unknown or repeated names, the group's size and
  each rank's index.

On gloo (4 processes, a 2x2 mesh) the flattened calls equal the sequential
ones on real ranks.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types._errors import NoCurrentMeshError, UnknownAxisError  # noqa: E402
from tests.runtime.runtime_oracle import Case, check, prepare, run_simulated, table_cases  # noqa: E402

AXES = [("dp", "tp"), ("pp", "tp"), ("pp", "dp", "tp")]
CASES = [c for c in table_cases() if c.call != "ppermute"]
F64 = torch.float64


@pytest.fixture
def mesh3(sim8) -> Any:
    """A ("pp", "dp", "tp") mesh of 2x2x2 over the simulated world of 8 ranks."""
    return init_device_mesh("cpu", (2, 2, 2), mesh_dim_names=("pp", "dp", "tp"))


def flattened_groups(mesh: Any, names: tuple[str, ...]) -> list[list[int]]:
    """The global ranks of each flattened group of ``names``, row-major over the names as listed."""
    dims = [mesh.mesh_dim_names.index(n) for n in names]
    others = [d for d in range(mesh.mesh.dim()) if d not in dims]
    size = math.prod(mesh.mesh.shape[d] for d in dims)
    return mesh.mesh.permute(*others, *dims).reshape(-1, size).tolist()


@pytest.mark.parametrize("axes", AXES, ids=["+".join(a) for a in AXES])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_table_case_on_flattened_axes(mesh3, case: Case, axes: tuple[str, ...]) -> None:
    trial = prepare(case, flattened_groups(mesh3, axes))
    check(run_simulated(trial, 8, mesh3, axes))


# -- the same as one axis after another ---------------------------------------------------


def _sequential(call: str, x: torch.Tensor, axes: tuple[str, ...], src: Any, dst: Any) -> torch.Tensor:
    """``call`` over ``axes`` made as one call per axis (what the flattened call must equal)."""
    if call == "all_reduce":
        for axis in axes:
            x = spmd.all_reduce(x, axis, src=src, dst=dst)
        return x
    if call == "all_gather":  # the innermost axis first: its shards are adjacent in the flattened order
        if src is V:
            for axis in reversed(axes):
                x = spmd.all_gather(x, axis, src=V, dst=dst)
            return x.flatten(0, len(axes) - 1)
        for axis in reversed(axes):
            x = spmd.all_gather(x, axis, src=src, dst=dst)
        return x
    if call == "reduce_scatter":  # the outermost axis first: it picks the biggest blocks
        if dst is V:
            x = x.unflatten(0, [spmd.axis_size(a) for a in axes])
        for axis in axes:
            x = spmd.reduce_scatter(x, axis, src=src, dst=dst)
        return x
    raise AssertionError(call)


def _cotangent(shape: tuple[int, ...], invariant: bool, rank: int) -> torch.Tensor:
    """Rank ``rank``'s cotangent: an I output's is I (the same on every rank), otherwise any per-rank values."""
    seed = 50 if invariant else 50 + rank
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


SEQUENTIAL = [("all_reduce", P, R), ("all_reduce", P, I), ("all_reduce", V, R), ("all_gather", S(0), R),
              ("all_gather", S(1), I), ("all_gather", V, R), ("reduce_scatter", P, S(0)), ("reduce_scatter", P, S(1)),
              ("reduce_scatter", P, V)]


@pytest.mark.parametrize("axes", AXES, ids=["+".join(a) for a in AXES])
@pytest.mark.parametrize("call, src, dst", SEQUENTIAL, ids=[f"{c}({s.code}->{d.code})" for c, s, d in SEQUENTIAL])
def test_flattened_equals_sequential(mesh3, call: str, src: Any, dst: Any, axes: tuple[str, ...]) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    n = math.prod(mesh3.size(mesh3.mesh_dim_names.index(a)) for a in axes)
    shape = (n, 2 * n) if dst is V else (2 * n, 2 * n)
    gen = torch.Generator().manual_seed(len(axes))
    xs = {r: torch.randn(shape, generator=gen, dtype=F64) for r in range(8)}
    results = []
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(mesh3):
        for run in ("flattened", "sequential"):
            x = mode.rank_map(lambda r: xs[r].clone()).requires_grad_()
            y = getattr(spmd, call)(x, axes, src=src, dst=dst) if run == "flattened" else _sequential(
                call, x, axes, src, dst)
            y.backward(mode.rank_map(functools.partial(_cotangent, tuple(y.shape), dst is I)))
            results.append(({r: t.detach() for r, t in y._local_tensors.items()},
                            {r: t.clone() for r, t in x.grad._local_tensors.items()}))
    (y_flat, g_flat), (y_seq, g_seq) = results
    for r in range(8):
        assert y_flat[r].shape == y_seq[r].shape, f"rank {r}: {tuple(y_flat[r].shape)} vs {tuple(y_seq[r].shape)}"
        assert torch.allclose(y_flat[r], y_seq[r], rtol=1e-12, atol=1e-12), f"forward, rank {r}"
        assert torch.allclose(g_flat[r], g_seq[r], rtol=1e-12, atol=1e-12), f"backward, rank {r}"


def test_flattened_all_to_all_equals_the_global_reshard(mesh3) -> None:
    """S(0) -> S(1) over ("pp", "tp"): every rank ends with its column block of the global tensor."""
    from torch.distributed._local_tensor import LocalTensorMode

    groups = flattened_groups(mesh3, ("pp", "tp"))
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(mesh3):
        x = mode.rank_map(lambda r: torch.arange(8.0).reshape(2, 4) + 100 * r)
        y = spmd.all_to_all(x, ("pp", "tp"), src=S(0), dst=S(1))
    for members in groups:
        whole = torch.cat([x._local_tensors[r] for r in members])  # the global tensor, row blocks in order
        for index, r in enumerate(members):
            assert torch.equal(y._local_tensors[r], whole.chunk(4, dim=1)[index])


# -- resolution -------------------------------------------------------------------------


def test_size_and_index_of_flattened_axes(mesh3) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    with LocalTensorMode(8) as mode, spmd.set_current_mesh(mesh3):
        assert spmd.axis_size(("pp", "dp", "tp")) == 8 and spmd.axis_size(("pp", "tp")) == 4
        assert spmd.axis_size(("tp",)) == 2
        index = spmd.axis_index(("pp", "tp"))
        got = mode.rank_map(lambda r: torch.zeros(())) + index
    coordinates = {r: divmod(r, 4) for r in range(8)}  # r = 4 pp + 2 dp + tp
    for r in range(8):
        pp, rest = coordinates[r]
        assert int(got._local_tensors[r]) == pp * 2 + rest % 2


@pytest.mark.parametrize(
    "axes, cls, pattern",
    [
        (("tp", "dp"), UnknownAxisError, r"the axes \('tp', 'dp'\) are not in the order of the mesh's axes "
                                          r"\('pp', 'dp', 'tp'\); write \('dp', 'tp'\)"),
        (("dp", "dp"), UnknownAxisError, r"the axes \('dp', 'dp'\) name 'dp' twice; list each mesh axis once"),
        (("dp", "ep"), UnknownAxisError, r"the current mesh has no axis 'ep'; its axes are 'pp', 'dp', 'tp'"),
        ((), UnknownAxisError, r"an axis is a mesh-axis name or a non-empty tuple of them, got \(\)"),
        (("dp", 1), UnknownAxisError, r"non-empty tuple of them, got \('dp', 1\)"),
    ],
)
def test_bad_axis_tuples(mesh3, axes, cls, pattern) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    with LocalTensorMode(8) as mode, spmd.set_current_mesh(mesh3):
        x = mode.rank_map(lambda r: torch.ones(4))
        with pytest.raises(cls, match=pattern):
            spmd.all_reduce(x, axes, src=V, dst=R)


def test_axis_tuple_needs_a_mesh(sim8) -> None:
    with pytest.raises(NoCurrentMeshError, match=r"axis \('dp', 'tp'\) names mesh axes, but no mesh is current"):
        spmd.all_reduce(torch.ones(2), ("dp", "tp"), src=V, dst=R)


# -- real processes ---------------------------------------------------------------------


def _flattened_on_gloo(rank: int, world: int, mesh: Any) -> int:
    done = 0
    with spmd.set_current_mesh(mesh):
        axes = ("dp", "tp")
        assert spmd.axis_size(axes) == world and spmd.axis_index(axes) == rank
        for call, src, dst in SEQUENTIAL:
            shape = (world, 2 * world) if dst is V else (2 * world, 2 * world)
            x0 = torch.randn(shape, generator=torch.Generator().manual_seed(rank), dtype=F64)
            outs = []
            for run in ("flattened", "sequential"):
                x = x0.clone().requires_grad_()
                y = getattr(spmd, call)(x, axes, src=src, dst=dst) if run == "flattened" else _sequential(
                    call, x, axes, src, dst)
                y.backward(_cotangent(tuple(y.shape), dst is I, rank))
                outs.append((y.detach(), x.grad))
            (y1, g1), (y2, g2) = outs
            assert torch.allclose(y1, y2, rtol=1e-12, atol=1e-12), f"{call} forward on rank {rank}"
            assert torch.allclose(g1, g2, rtol=1e-12, atol=1e-12), f"{call} backward on rank {rank}"
            done += 1
    return done


def test_flattened_equals_sequential_on_gloo(gloo) -> None:
    assert gloo(4, _flattened_on_gloo) == [len(SEQUENTIAL)] * 4
