"""The redistribute planner against the denotation, on global indices (no torch).

Every rank's local tensor is represented by the global indices it holds along
each dim, in local order.  :func:`simulate` runs a plan's steps on those
lists with the collectives' own semantics (written here from their
docstrings, not from the planner's digit model): a gather concatenates the
group's lists in the order of the flattened group, a scatter or slice keeps
the rank's consecutive piece, an all-to-all does both, a ppermute takes the
source's lists; a reorder permutes blocks.  After every step each rank must
hold exactly what the step's spec says (:func:`local_indices`), and each
call must be one the collectives table allows for the types its axes have.

Checked: every pair of :func:`all_specs` of a 2-D tensor on 2x2 and 2x4
meshes (fused plans, per-axis plans and the naive plan; the planned cost never
above the other two), a sample of pairs on a 2x2x2 mesh and for 1-D and 3-D
tensors, and the plans the design notes call for.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import prod

import pytest

from spmd_types.typesystem.collectives import route
from spmd_types.typesystem.layout import Reorder, local_indices
from spmd_types.typesystem.local_types import P, R, Shard, V
from spmd_types.typesystem.partition_spec import PartitionSpec as PS
from spmd_types.typesystem.partition_spec import all_specs, mesh_axes, per_axis_types
from spmd_types.typesystem.planner import Plan, plan_redistribute, plan_via_replicated

MESHES = {"2x2": (("dp", 2), ("tp", 2)), "2x4": (("dp", 2), ("tp", 4))}
SHAPE = (8, 16)

Lists = tuple[tuple[int, ...], ...]


def _reordered(indices: tuple[int, ...], reorder: Reorder) -> tuple[int, ...]:
    """``indices`` viewed as digits ``reorder.sizes`` (row-major), digit k of the result being digit order[k]."""
    sizes, order = reorder.sizes, reorder.order
    assert prod(sizes) == len(indices), f"{reorder} on {len(indices)} entries"
    out_sizes = [sizes[o] for o in order]
    result = []
    for out_digits in itertools.product(*(range(n) for n in out_sizes)):
        src_digits = [0] * len(sizes)
        for k, o in enumerate(order):
            src_digits[o] = out_digits[k]
        flat = 0
        for v, n in zip(src_digits, sizes):
            flat = flat * n + v
        result.append(indices[flat])
    return tuple(result)


def _chunk(indices: tuple[int, ...], n: int, k: int) -> tuple[int, ...]:
    assert len(indices) % n == 0, f"{len(indices)} entries do not split into {n}"
    size = len(indices) // n
    return indices[k * size: (k + 1) * size]


def _with(lists: Lists, dim: int, value: tuple[int, ...]) -> Lists:
    return tuple(value if d == dim else v for d, v in enumerate(lists))


def _members(coords: dict[str, int], group: tuple[str, ...], sizes: dict[str, int]) -> list[dict[str, int]]:
    """The ranks of ``coords``' copy of the group, in the flattened order of ``group`` (row-major)."""
    values = itertools.product(*(range(sizes[a]) for a in group))
    return [{**coords, **dict(zip(group, v))} for v in values]


def _flat(coords: dict[str, int], group: tuple[str, ...], sizes: dict[str, int]) -> int:
    index = 0
    for a in group:
        index = index * sizes[a] + coords[a]
    return index


def simulate(plan: Plan) -> None:
    """Run ``plan`` on index lists and check each step against the denotation (AssertionError if not)."""
    names = [name for name, _ in plan.axes]
    sizes = dict(plan.axes)
    ranks = [dict(zip(names, c)) for c in itertools.product(*(range(sizes[n]) for n in names))]
    key = lambda coords: tuple(coords[n] for n in names)  # noqa: E731
    held = {key(c): local_indices(plan.src, plan.axes, plan.shape, c) for c in ranks}
    spec = plan.src
    for number, step in enumerate(plan.steps):
        where = f"step {number} ({step}) of\n{plan.describe()}"
        _check_types(spec, step, plan, where)
        group = step.axes
        n = prod(sizes[a] for a in group)
        if step.before is not None:
            held = {r: _with(v, step.before.dim, _reordered(v[step.before.dim], step.before)) for r, v in held.items()}
        new: dict[tuple[int, ...], Lists] = {}
        for coords in ranks:
            me, mine = _flat(coords, group, sizes), held[key(coords)]
            group_lists = [held[key(m)] for m in _members(coords, group, sizes)]
            src, dst = step.src, step.dst
            if step.call in ("all_reduce",) or (step.call == "convert" and src is R and dst is P):
                new[key(coords)] = mine
            elif step.call in ("all_gather",) or (step.call == "convert" and dst is P):
                assert isinstance(src, Shard)
                for other in group_lists:
                    assert _with(other, src.dim, ()) == _with(mine, src.dim, ()), f"{where}: gathered pieces differ"
                new[key(coords)] = _with(mine, src.dim, tuple(i for g in group_lists for i in g[src.dim]))
            elif step.call in ("reduce_scatter", "convert"):
                assert isinstance(dst, Shard)
                new[key(coords)] = _with(mine, dst.dim, _chunk(mine[dst.dim], n, me))
            elif step.call == "all_to_all":
                assert isinstance(src, Shard) and isinstance(dst, Shard)
                pieces = [_with(g, dst.dim, _chunk(g[dst.dim], n, me)) for g in group_lists]
                if src.dim == dst.dim:
                    joined = tuple(i for p in pieces for i in p[src.dim])
                else:
                    assert all(p[dst.dim] == pieces[0][dst.dim] for p in pieces), f"{where}: pieces differ"
                    joined = tuple(i for p in pieces for i in p[src.dim])
                new[key(coords)] = _with(pieces[0], src.dim, joined)
            elif step.call == "ppermute":
                (source,) = [s for s, d in step.pairs if d == me]
                new[key(coords)] = group_lists[source]
            else:
                raise AssertionError(f"{where}: no semantics for {step.call}")
        held = new
        if step.after is not None:
            held = {r: _with(v, step.after.dim, _reordered(v[step.after.dim], step.after)) for r, v in held.items()}
        for coords in ranks:
            want = local_indices(step.spec, plan.axes, plan.shape, coords)
            assert held[key(coords)] == want, f"{where}\nrank {coords}: holds {held[key(coords)]}, spec says {want}"
        spec = step.spec
    assert spec == plan.dst, f"the plan ends at {spec!r}, not {plan.dst!r}:\n{plan.describe()}"


def _check_types(spec: PS, step, plan: Plan, where: str) -> None:
    """The call is in the collectives table, and its src/dst are the types of its axes before and after."""
    assert route(step.call, step.src, step.dst), f"{where}: the table has no {step.transition}"
    before = per_axis_types(spec, plan.axes)
    after = per_axis_types(step.spec, plan.axes)
    for axis in step.axes:
        want_src, want_dst = (step.src, step.dst) if step.call != "ppermute" else (before.get(axis), after.get(axis))
        assert before.get(axis) == want_src, f"{where}: axis {axis} is {before.get(axis)} before, not {want_src}"
        assert after.get(axis) == want_dst, f"{where}: axis {axis} is {after.get(axis)} after, not {want_dst}"
    if step.call == "ppermute":
        assert all(isinstance(before.get(a), Shard) and isinstance(after.get(a), Shard) for a in step.axes), where
        assert step.src is V and step.dst is V, where
    for axis, t in before.items():
        if axis not in step.axes:
            assert after.get(axis) == t or step.call == "ppermute", f"{where}: axis {axis} changed"


@pytest.mark.parametrize("mesh", list(MESHES), ids=list(MESHES))
def test_every_pair_of_specs_of_a_2d_tensor(mesh: str) -> None:
    axes = MESHES[mesh]
    specs = all_specs(axes, 2)
    assert len(specs) == 30
    fused_wins = 0
    for src, dst in itertools.product(specs, repeat=2):
        planned = plan_redistribute(axes, SHAPE, src, dst)
        per_axis = plan_redistribute(axes, SHAPE, src, dst, per_axis=True)
        naive = plan_via_replicated(axes, SHAPE, src, dst)
        for plan in (planned, per_axis, naive):
            simulate(plan)
        assert all(len(s.axes) == 1 and s.call != "ppermute" for s in per_axis.steps), per_axis.describe()
        assert planned.sent <= per_axis.sent <= naive.sent, (planned.describe(), per_axis.describe(), naive.describe())
        fused_wins += planned.sent < per_axis.sent
        if src == dst:
            assert planned.steps == ()
    assert fused_wins > 0


def _sample(specs: tuple[PS, ...], every: int) -> list[tuple[PS, PS]]:
    return list(itertools.product(specs, repeat=2))[::every]


@pytest.mark.parametrize(
    "axes, shape, every",
    [
        ((("a", 2), ("b", 2), ("c", 2)), (8, 8), 97),
        ((("dp", 2), ("tp", 4)), (16,), 1),
        ((("dp", 2), ("tp", 2)), (4, 8, 4), 13),
    ],
    ids=["2x2x2 mesh, 2-D", "2x4 mesh, 1-D", "2x2 mesh, 3-D"],
)
def test_a_sample_of_pairs_on_other_meshes_and_ranks(axes, shape, every) -> None:
    specs = all_specs(axes, len(shape))
    for src, dst in _sample(specs, every):
        planned = plan_redistribute(axes, shape, src, dst)
        simulate(planned)
        assert planned.sent <= plan_via_replicated(axes, shape, src, dst).sent


# -- the plans the design notes ask for -------------------------------------------------------


def _calls(plan: Plan) -> list[str]:
    return [f"{s.call}{s.axes}" for s in plan.steps]


def test_partial_on_two_axes_is_one_all_reduce_on_the_flattened_group() -> None:
    plan = plan_redistribute(MESHES["2x4"], SHAPE, PS(None, None, partial=("dp", "tp")), PS(None, None))
    assert _calls(plan) == ["all_reduce('dp', 'tp')"]
    assert plan.sent == Fraction(2 * 7, 8) * 128
    assert plan_via_replicated(MESHES["2x4"], SHAPE, plan.src, plan.dst).sent == 128 + Fraction(6, 4) * 128


def test_partial_to_a_dim_sharded_by_both_axes_is_one_reduce_scatter() -> None:
    for order in (("dp", "tp"), ("tp", "dp")):
        plan = plan_redistribute(MESHES["2x4"], SHAPE, PS(None, None, partial=("dp", "tp")), PS(order, None))
        assert _calls(plan) == ["reduce_scatter('dp', 'tp')"]
        # the flattened group orders ranks dp-major: (tp, dp) needs the blocks sorted first
        assert (plan.steps[0].before is None) == (order == ("dp", "tp"))


def test_swapping_the_axes_of_a_dim_is_one_ppermute() -> None:
    """``f32[8@(dp,tp)] -> f32[8@(tp,dp)]``: each rank needs another rank's whole shard."""
    plan = plan_redistribute(MESHES["2x4"], SHAPE, PS(("dp", "tp"), None), PS(("tp", "dp"), None))
    assert _calls(plan) == ["ppermute('dp', 'tp')"]
    assert plan.sent == 16
    per_axis = plan_redistribute(MESHES["2x4"], SHAPE, plan.src, plan.dst, per_axis=True)
    assert per_axis.sent > plan.sent
    # rank (dp, tp) holds block 4 dp + tp and needs block 2 tp + dp
    for source, dest in plan.steps[0].pairs:
        d, t = divmod(dest, 4)
        assert source == 2 * t + d


def test_gathering_the_major_axis_leaves_a_strided_shard() -> None:
    """2-D FSDP + TP: ``(tp, dp)`` gathered over tp (one all-gather, no reorder) is dp strided by the tp size."""
    plan = plan_redistribute(MESHES["2x4"], SHAPE, PS(("tp", "dp"), None), PS((4, "dp"), None))
    assert _calls(plan) == ["all_gather('tp',)"]
    assert plan.steps[0].before is None and plan.steps[0].after is None


def test_gathering_both_axes_in_another_order_than_the_mesh_sorts_blocks_after() -> None:
    plan = plan_redistribute(MESHES["2x4"], SHAPE, PS(("tp", "dp"), None), PS(None, None))
    assert _calls(plan) == ["all_gather('dp', 'tp')"]
    assert plan.steps[0].after == Reorder(0, (2, 4), (1, 0))


def test_replicated_to_any_spec_is_local() -> None:
    axes = MESHES["2x4"]
    for dst in all_specs(axes, 2):
        plan = plan_redistribute(axes, SHAPE, PS(None, None), dst)
        assert plan.sent == 0 and plan.collectives == 0, plan.describe()


def test_describe() -> None:
    plan = plan_redistribute(MESHES["2x2"], SHAPE, PS(None, None, partial=("dp", "tp")), PS(("dp", "tp"), None))
    assert plan.describe() == (
        "f32[8,16]+(dp,tp) -> f32[8@(dp,tp),16]:\n"
        "  reduce_scatter(P -> S(0)) over (dp, tp)  => f32[8@(dp,tp),16]"
    )
    assert str(plan.steps[0].backward()) == "all_gather(S(0) -> R)"


def test_bad_arguments() -> None:
    axes = MESHES["2x2"]
    with pytest.raises(ValueError, match="cannot be cut into 4 equal blocks"):
        plan_redistribute(axes, (6, 8), PS(("dp", "tp"), None), PS(None, None))
    with pytest.raises(ValueError, match="does not have"):
        plan_redistribute(axes, SHAPE, PS("ep", None), PS(None, None))
    with pytest.raises(ValueError, match="has 1 entries"):
        plan_redistribute(axes, SHAPE, PS("dp"), PS(None, None))
    with pytest.raises(TypeError, match="must be a PartitionSpec"):
        plan_redistribute(axes, SHAPE, ("dp", None), PS(None, None))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="distinct"):
        mesh_axes((("dp", 2), ("dp", 2)))
    with pytest.raises(ValueError, match="positive int"):
        mesh_axes({"dp": 0})



def test_the_lower_bound_only_prunes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the search's A* bound (a plain shortest-path search) the plans cost exactly as much."""
    from spmd_types.typesystem import planner

    cases = [(MESHES["2x4"], SHAPE, 11), ((("a", 2), ("b", 2), ("c", 2)), (8, 8), 997)]
    guided = [[plan_redistribute(axes, shape, s, d) for s, d in _sample(all_specs(axes, 2), every)]
              for axes, shape, every in cases]
    monkeypatch.setattr(planner._LowerBound, "__call__", lambda self, state: Fraction(0))
    for (axes, shape, every), plans in zip(cases, guided):
        for plan, (s, d) in zip(plans, _sample(all_specs(axes, 2), every)):
            plain = plan_redistribute(axes, shape, s, d)
            assert (plan.sent, plan.collectives) == (plain.sent, plain.collectives), (plan.describe(), plain.describe())


def test_the_backward_sends_as_much_as_the_forward() -> None:
    """Each step's backward (the table's) runs on the gradient of its output and sends what the step sends."""
    from spmd_types.typesystem.planner import _ring

    axes = MESHES["2x4"]
    sizes = dict(axes)
    for src, dst in itertools.product(all_specs(axes, 2), repeat=2):
        for step in plan_redistribute(axes, SHAPE, src, dst).steps:
            after = prod(SHAPE) // prod(sizes[a] for a in step.spec.axes)
            back = step.backward()
            assert _ring(back.call, prod(sizes[a] for a in step.axes), after) == step.sent, str(step)
