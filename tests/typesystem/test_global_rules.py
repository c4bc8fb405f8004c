"""Global SPMD's shard propagation is correct: checked exhaustively on small shapes against the denotation.

For every op below and every assignment of partition specs to its operands
on a 2x2 mesh (each axis replicated, partial or cutting one dim, two axes on
one dim in both orders), :func:`propagate` either rejects the call or names
the result's spec.  An accepted spec is a claim, checked here: run the op on
the global tensors and partition the result by the spec (the denotation,
:func:`local_indices`), against running the op on every rank's pieces; over
the result's partial axes, the ranks' results must add up to the piece.
Partial operands are split into unequal summands, so that a non-linear op on
them cannot pass by chance.  A call rejected for an implicit pending sum is
checked again with ``out_partial_axes`` on the axes named: that is the fix
the message offers, and it must be right.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

torch = pytest.importorskip("torch")

from spmd_types.typesystem import (  # noqa: E402
    Code,
    MeshAxes,
    PartitionSpec,
    Violation,
    all_specs,
    global_annotation_violation,
    global_cast_violation,
    local_indices,
    mesh_axes,
    parse,
    propagate,
    spec_type,
)
from spmd_types.typesystem.local_types import I, P, R, Shard, V  # noqa: E402


@dataclass(frozen=True)
class Mesh:
    """A mesh, its ranks' coordinates, and the unequal weights that split a partial operand into summands."""

    axes: MeshAxes
    weights: dict[str, tuple[float, ...]]

    @property
    def coords(self) -> list[dict[str, int]]:
        names = [name for name, _ in self.axes]
        return [dict(zip(names, c)) for c in itertools.product(*(range(size) for _, size in self.axes))]


def _weights(size: int) -> tuple[float, ...]:
    raw = [k + 1.5 for k in range(size)]
    return tuple(w / sum(raw) for w in raw)


MESH_2X2 = Mesh(mesh_axes({"dp": 2, "tp": 2}), {"dp": (0.25, 0.75), "tp": (0.375, 0.625)})
MESH_2X4 = Mesh(mesh_axes({"dp": 2, "tp": 4}), {"dp": _weights(2), "tp": _weights(4)})
AXES = MESH_2X2.axes


@dataclass(frozen=True)
class Case:
    op: str
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    run: Callable[..., torch.Tensor]
    args: dict[str, object] = field(default_factory=dict)


CASES = [
    Case("torch.matmul", (("input", (4, 8)), ("other", (8, 4))), torch.matmul),
    Case("torch.matmul", (("input", (4, 4, 8)), ("other", (8, 4))), torch.matmul),
    Case("torch.nn.functional.linear", (("input", (4, 8)), ("weight", (4, 8))), torch.nn.functional.linear),
    Case("torch.nn.functional.linear", (("input", (4, 8)), ("weight", (4, 8)), ("bias", (4,))),
         torch.nn.functional.linear),
    Case("torch.einsum", (("args", (4, 8)), ("args", (8, 4))), lambda a, b: torch.einsum("ij,jk->ik", a, b),
         {"equation": "ij,jk->ik"}),
    Case("torch.einsum", (("args", (4, 8)), ("args", (4, 8))), lambda a, b: torch.einsum("ij,kj->jik", a, b),
         {"equation": "ij,kj->jik"}),
    Case("torch.einsum", (("args", (4, 8)),), lambda a: torch.einsum("ij->ji", a), {"equation": "ij->ji"}),
    Case("torch.einsum", (("args", (4, 4, 8)), ("args", (4, 8, 4))),
         lambda a, b: torch.einsum("bij,bjk->bik", a, b), {"equation": "bij,bjk->bik"}),
    Case("torch.sum", (("input", (4, 8)),), lambda a: torch.sum(a, 0), {"dim": 0}),
    Case("torch.sum", (("input", (4, 8)),), lambda a: torch.sum(a, 1), {"dim": 1}),
    Case("torch.add", (("input", (4, 8)), ("other", (8,))), torch.add),
    Case("torch.add", (("input", (4, 8)), ("other", (4, 8))), torch.add),
    Case("torch.mul", (("input", (4, 8)), ("other", (4, 8))), torch.mul),
    Case("torch.exp", (("input", (4, 8)),), torch.exp),
    Case("torch.transpose", (("input", (4, 8)),), lambda a: torch.transpose(a, 0, 1), {"dim0": 0, "dim1": 1}),
    Case("torch.unflatten", (("input", (4, 8)),), lambda a: torch.unflatten(a, 1, (2, 4)), {"dim": 1, "sizes": (2, 4)}),
]

STRIDED_CASES = [
    Case("torch.matmul", (("input", (8, 8)), ("other", (8, 8))), torch.matmul),
    Case("torch.nn.functional.linear", (("input", (8, 8)), ("weight", (8, 8)), ("bias", (8,))),
         torch.nn.functional.linear),
    Case("torch.einsum", (("args", (8, 8)), ("args", (8, 8))), lambda a, b: torch.einsum("ij,kj->jik", a, b),
         {"equation": "ij,kj->jik"}),
    Case("torch.sum", (("input", (8, 8)),), lambda a: torch.sum(a, 0), {"dim": 0}),
    Case("torch.sum", (("input", (8, 8)),), lambda a: torch.sum(a, 1), {"dim": 1}),
    Case("torch.add", (("input", (8, 8)), ("other", (8,))), torch.add),
    Case("torch.mul", (("input", (8, 8)), ("other", (8, 8))), torch.mul),
    Case("torch.exp", (("input", (8, 8)),), torch.exp),
    Case("torch.transpose", (("input", (8, 8)),), lambda a: torch.transpose(a, 0, 1), {"dim0": 0, "dim1": 1}),
    Case("torch.cumsum", (("input", (8, 8)),), lambda a: torch.cumsum(a, 1), {"dim": 1}),
    Case("torch.flatten", (("input", (8, 8)),), torch.flatten),
    Case("torch.unflatten", (("input", (8, 8)),), lambda a: torch.unflatten(a, 1, (2, 4)), {"dim": 1, "sizes": (2, 4)}),
]
"""Ops on tensors of 8 on every dim, which every spec of :func:`all_specs` cuts evenly on both meshes."""


def _strided(spec: PartitionSpec) -> bool:
    return any(isinstance(f, int) for d in range(len(spec)) for f in spec.factors(d))


def _specs(ndim: int) -> list[PartitionSpec]:
    return [s for s in all_specs(AXES, ndim) if not _strided(s)]


def _piece(x: torch.Tensor, spec: PartitionSpec, coords: dict[str, int], mesh: Mesh = MESH_2X2) -> torch.Tensor:
    for dim, index in enumerate(local_indices(spec, mesh.axes, tuple(x.shape), coords)):
        x = x.index_select(dim, torch.tensor(index, dtype=torch.long))
    return x


def _local(x: torch.Tensor, spec: PartitionSpec, coords: dict[str, int], mesh: Mesh) -> torch.Tensor:
    weight = 1.0
    for axis in spec.partial:
        weight *= mesh.weights[axis][coords[axis]]
    return _piece(x, spec, coords, mesh) * weight


def _holds(case: Case, specs: Sequence[PartitionSpec], out: PartitionSpec, inputs: Sequence[torch.Tensor],
           mesh: Mesh = MESH_2X2) -> bool:
    """Whether the ranks' results, read by ``out``, are the global result partitioned."""
    expected = case.run(*inputs)
    coords = mesh.coords
    results = [case.run(*(_local(x, s, c, mesh) for x, s in zip(inputs, specs))) for c in coords]
    groups: dict[tuple[int, ...], list[torch.Tensor]] = {}
    for rank, result in zip(coords, results):
        key = tuple(v for axis, v in rank.items() if axis not in out.partial)
        groups.setdefault(key, []).append(result)
    for rank in coords:
        key = tuple(v for axis, v in rank.items() if axis not in out.partial)
        total = torch.stack(groups[key]).sum(0)
        piece = _piece(expected, out, rank, mesh)
        if total.shape != piece.shape or not torch.allclose(total, piece):
            return False
    return True


def _implicit_partial_axes(violations: Sequence[Violation]) -> tuple[str, ...]:
    return tuple(v.axis for v in violations if v.axis and "to make the pending sum" in v.reason)


def _checked(case: Case, all_operand_specs: Sequence[Sequence[PartitionSpec]], mesh: Mesh,
             keep: Callable[[Sequence[PartitionSpec]], bool] = lambda specs: True) -> list[PartitionSpec]:
    """Every spec :func:`propagate` gives for ``case`` (or with the ``out_partial_axes`` its error offers),
    each checked against the denotation on ``mesh``."""
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(shape, generator=generator, dtype=torch.float64) for _, shape in case.shapes]
    out_ndim = case.run(*inputs).dim()
    accepted = []
    for specs in itertools.product(*all_operand_specs):
        if not keep(specs):
            continue
        operands = [(param, spec, len(shape)) for (param, shape), spec in zip(case.shapes, specs)]
        out = propagate(case.op, operands, out_ndim, case.args)
        if not isinstance(out, PartitionSpec):
            axes = _implicit_partial_axes(out)
            if not axes or len(axes) != len(out):
                continue
            out = propagate(case.op, operands, out_ndim, case.args, out_partial_axes=axes)
            assert isinstance(out, PartitionSpec), (specs, out)
        accepted.append(out)
        assert _holds(case, specs, out, inputs, mesh), f"{case.op} on {specs} claimed {out}"
    return accepted


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.op}{[s for _, s in c.shapes]}")
def test_propagation_matches_the_denotation(case: Case) -> None:
    assert _checked(case, [_specs(len(shape)) for _, shape in case.shapes], MESH_2X2)


@pytest.mark.parametrize("mesh", [MESH_2X2, MESH_2X4], ids=["2x2", "2x4"])
@pytest.mark.parametrize("case", STRIDED_CASES, ids=lambda c: f"{c.op}{[s for _, s in c.shapes]}")
def test_strided_propagation_matches_the_denotation(case: Case, mesh: Mesh) -> None:
    """Every assignment of specs in which some operand has a strided entry (a block count of 2 or 4)."""
    specs = [all_specs(mesh.axes, len(shape)) for _, shape in case.shapes]
    accepted = _checked(case, specs, mesh, keep=lambda chosen: any(_strided(s) for s in chosen))
    assert any(_strided(out) for out in accepted), case.op


def test_the_seed_example_row_parallel_needs_out_partial_axes() -> None:
    operands = [("input", PartitionSpec("dp", "tp"), 2), ("weight", PartitionSpec(None, "tp"), 2)]
    rejected = propagate("torch.nn.functional.linear", operands, 2)
    assert not isinstance(rejected, PartitionSpec)
    assert [v.code for v in rejected] == [Code.GLOBAL]
    assert 'spmd_types.linear(..., out_partial_axes="tp")' in rejected[0].reason
    explicit = propagate("torch.nn.functional.linear", operands, 2, out_partial_axes=("tp",))
    assert explicit == PartitionSpec("dp", None, partial="tp")


def test_einsum_rejects_an_operand_that_holds_the_cut_label_whole() -> None:
    operands = [("args", PartitionSpec("tp", None), 2), ("args", PartitionSpec(None, None), 2)]
    rejected = propagate("torch.einsum", operands, 2, {"equation": "ij,ij->ij"})
    assert not isinstance(rejected, PartitionSpec)
    assert "holds whole" in rejected[0].reason


def test_spec_type_is_one_local_type_per_axis() -> None:
    assert spec_type(PartitionSpec("dp", None, ("tp", "cp")), ["ep"]) == parse("dp:S(0), tp:S(2), cp:S(2), ep:R")
    assert spec_type(PartitionSpec(None, partial="tp")) == parse("tp:P")


def test_casts_and_annotations_in_global_mode() -> None:
    assert global_cast_violation("all_gather", "tp", Shard(0), R) is None
    assert global_cast_violation("all_reduce", "tp", P, R) is None
    assert global_cast_violation("convert", "tp", R, Shard(1)) is None
    assert global_cast_violation("reinterpret", "tp", R, I) is None
    assert global_cast_violation("all_gather", "tp", V, R) is not None
    assert global_cast_violation("reinterpret", "tp", V, P) is not None
    assert global_cast_violation("reinterpret", "tp", R, P) is not None
    assert global_annotation_violation(parse("dp:S(0), tp:R")) is None
    violation = global_annotation_violation(parse("dp:S(0), tp:V"))
    assert violation is not None and violation.axis == "tp"


def test_a_strided_entry_is_carried_through_a_dim_kept_whole_and_not_split() -> None:
    fsdp_tp = PartitionSpec((2, "tp"), "dp")
    moved = propagate("torch.transpose", [("input", fsdp_tp, 2)], 2, {"dim0": 0, "dim1": 1})
    assert moved == PartitionSpec("dp", (2, "tp"))
    kept = propagate("torch.unflatten", [("input", PartitionSpec((2, "tp"), None), 2)], 3, {"dim": 1, "sizes": (2, 4)})
    assert kept == PartitionSpec((2, "tp"), None, None)
    for op, args in (("torch.unflatten", {"dim": 0, "sizes": (2, 4)}), ("torch.Tensor.reshape", {"shape": (64,)})):
        rejected = propagate(op, [("input", fsdp_tp, 2)], 3 if "unflatten" in op else 1, args)
        assert not isinstance(rejected, PartitionSpec)
        assert [v.axis for v in rejected] == ["tp"] and "strided entry (2, 'tp')" in rejected[0].reason


def test_a_split_of_a_cut_dim_is_rejected_as_its_pieces_land_by_the_axis_sizes() -> None:
    # On a tp of 4, a dim of 8 cut over tp and split into (2, 4) is cut across both new dims.
    rejected = propagate("torch.unflatten", [("input", PartitionSpec("tp"), 1)], 2, {"dim": 0, "sizes": (2, 4)})
    assert not isinstance(rejected, PartitionSpec)
    assert "depends on the sizes of the axes" in rejected[0].reason


def test_operands_that_cut_one_dim_with_different_block_counts_do_not_meet() -> None:
    operands = [("input", PartitionSpec(None, (2, "tp")), 2), ("other", PartitionSpec("tp", None), 2)]
    rejected = propagate("torch.matmul", operands, 2, out_partial_axes=("tp",))
    assert not isinstance(rejected, PartitionSpec)
    assert "different orders" in rejected[0].reason
