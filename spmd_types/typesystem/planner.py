"""The redistribute planner: the collectives that take a tensor from one :class:`PartitionSpec` to another.

A plan is a list of :class:`Step` s.  Each step is one call of the per-axis
collectives table (:data:`~spmd_types.typesystem.collectives.CALLS`) over one
mesh axis or over several (one call on their flattened group), possibly with a
local :class:`~spmd_types.typesystem.layout.Reorder` of one dim before or after
it.  The moves (``G`` is a set of axes, ``i`` and ``j`` dims):

==================================  ==============================================
``all_reduce(P -> R)`` over ``G``   pending sums resolved everywhere
``reduce_scatter(P -> S(j))``       pending sums resolved, each rank keeping a piece
``all_gather(S(i) -> R)``           ``G`` stops sharding dim ``i``
``all_to_all(S(i) -> S(j))``        ``G`` moves from dim ``i`` to dim ``j`` (or within ``i``)
``ppermute``                        the ranks trade whole local tensors: the axes
                                    of int-free entries change places (``(dp,tp)``
                                    to ``(tp,dp)``)
``convert(R -> S(j))``              a local slice
``convert(R -> P)``, ``(S(i) -> P)``  a local mask or zero padding (for partial
                                    axes of the destination)
==================================  ==============================================

A scatter, slice or all-to-all puts the axes it adds at the minor end of the
entry, into a block count of the entry of exactly their size, or where the
destination has them (after the destination's prefix, with its block count:
how a strided shard is built).  A gather or all-to-all may take any axes of an
entry, the ones it frees becoming block counts (a strided entry where they
were major).

Cost: the elements one rank sends, by the bandwidth-optimal ring algorithm
that NCCL uses, on a local tensor of ``B`` elements over ``n`` ranks:
all-reduce ``2(n-1)/n B``, reduce-scatter and all-to-all ``(n-1)/n B``,
all-gather ``(n-1) B`` (``(n-1)/n`` of its output), ppermute ``B``, local
steps nothing.  Multiply by the element size for bytes.

Minimality: :func:`plan_redistribute` returns a cheapest sequence of these
moves: fewest elements sent, then fewest collectives, then fewest local steps.
It is an A* search over specs whose lower bound (:class:`_LowerBound`) never
overestimates, so the first plan to reach ``dst`` is a cheapest one.  With
``per_axis=True`` it searches the sequences of one-axis calls only (no
flattened groups, no ppermute, the same reorders): the best that the per-axis
``redistribute`` can do, which the full plan never exceeds.
:func:`plan_via_replicated` is the naive plan: resolve and gather every axis
one at a time, then slice out the destination.

The backward of a plan is its steps' backwards in reverse order
(:meth:`Step.backward`), a plan from ``dual(dst)`` to ``dual(src)`` that
sends as many elements as the forward.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import lcm, prod

from spmd_types.typesystem.collectives import Endpoint, Transition, backward
from spmd_types.typesystem.layout import Digit, Reorder, change, digits_of, entry_of, pattern
from spmd_types.typesystem.local_types import P, R, Shard, V
from spmd_types.typesystem.partition_spec import Factor, MeshAxes, PartitionSpec, mesh_axes

__all__ = ["Plan", "Step", "plan_redistribute", "plan_via_replicated"]

Entries = tuple[tuple[Factor, ...], ...]
State = tuple[Entries, frozenset[str]]
Cost = tuple[Fraction, int, int]


@dataclass(frozen=True)
class Step:
    """One call of a plan: ``call(x, axes, src=src, dst=dst)``, with the local reorders around it.

    ``axes`` are in the mesh's order (one axis, or the flattened group of
    several).  ``pairs`` is a ppermute's ``(source, destination)`` indices on
    that group.  ``spec`` is the spec after the step; ``sent`` the elements
    each rank sends.
    """

    call: str
    axes: tuple[str, ...]
    src: Endpoint
    dst: Endpoint
    spec: PartitionSpec
    sent: Fraction
    before: Reorder | None = None
    after: Reorder | None = None
    pairs: tuple[tuple[int, int], ...] = ()

    @property
    def communicates(self) -> bool:
        """Whether the step is a collective (a ``convert`` is local)."""
        return self.call != "convert"

    @property
    def transition(self) -> Transition:
        """The primitive transition of the collectives table the step runs on each of its axes."""
        return Transition(self.call, self.src, self.dst)

    def backward(self) -> Transition:
        """The transition its backward runs (the table's), over the same axes, with the reorders undone."""
        return backward(self.transition)

    def __str__(self) -> str:
        over = self.axes[0] if len(self.axes) == 1 else f"({', '.join(self.axes)})"
        text = f"{self.call}({self.src.code} -> {self.dst.code}) over {over}"
        notes = [f"{r} {when}" for r, when in ((self.before, "before"), (self.after, "after")) if r is not None]
        return text + (f" [{'; '.join(notes)}]" if notes else "")


@dataclass(frozen=True)
class Plan:
    """The steps from ``src`` to ``dst`` for a tensor of global ``shape`` on a mesh with ``axes``."""

    axes: MeshAxes
    shape: tuple[int, ...]
    src: PartitionSpec
    dst: PartitionSpec
    steps: tuple[Step, ...]

    @property
    def sent(self) -> Fraction:
        """Elements each rank sends over the whole plan (ring algorithms)."""
        return sum((s.sent for s in self.steps), Fraction(0))

    @property
    def collectives(self) -> int:
        """How many collectives the plan runs."""
        return sum(s.communicates for s in self.steps)

    def describe(self, dtype: str = "f32") -> str:
        """The plan, one line per step, with the spec after each (printed as ``f32[8@dp,16]``)."""
        lines = [f"{self.src.describe(self.shape, dtype)} -> {self.dst.describe(self.shape, dtype)}:"]
        lines += [f"  {step}  => {step.spec.describe(self.shape, dtype)}" for step in self.steps]
        if not self.steps:
            lines.append("  nothing to do")
        return "\n".join(lines)


def _ring(call: str, n: int, local: int) -> Fraction:
    """Elements one rank sends for ``call`` over ``n`` ranks on a local tensor of ``local`` elements."""
    if call == "all_reduce":
        return Fraction(2 * (n - 1) * local, n)
    if call in ("reduce_scatter", "all_to_all"):
        return Fraction((n - 1) * local, n)
    if call == "all_gather":
        return Fraction((n - 1) * local)
    if call == "ppermute":
        return Fraction(local)
    return Fraction(0)


class _Edge:
    """A move from a state: where it leads, what it sends, and the :class:`Step` it is (built on demand)."""

    __slots__ = ("_build", "sent", "state")

    def __init__(self, state: State, sent: Fraction, build: Callable[[], Step]) -> None:
        self.state = state
        self.sent = sent
        self._build = build

    def step(self) -> Step:
        return self._build()


class _Planner:
    """The moves from a spec, for one mesh, shape and destination."""

    def __init__(self, axes: MeshAxes, shape: tuple[int, ...], dst: PartitionSpec, per_axis: bool) -> None:
        self.sizes = dict(axes)
        self.order = {name: k for k, (name, _) in enumerate(axes)}
        self.shape = shape
        self.goal = _state(dst)
        self.per_axis = per_axis

    # -- helpers ------------------------------------------------------------------

    def _groups(self, names: Sequence[str]) -> Iterator[tuple[str, ...]]:
        """The non-empty sets of ``names`` a step may act on, each in mesh order."""
        names = sorted(names, key=self.order.__getitem__)
        if self.per_axis:
            yield from ((name,) for name in names)
            return
        for k in range(1, len(names) + 1):
            yield from itertools.combinations(names, k)

    def spec(self, state: State) -> PartitionSpec:
        """``state`` as a spec, its partial axes in mesh order."""
        entries, partial = state
        return PartitionSpec.canonical(entries, tuple(sorted(partial, key=self.order.__getitem__)))

    def digits(self, entries: Entries, dim: int) -> list[Digit]:
        return digits_of(entries[dim], self.shape[dim], self.sizes)

    def _local(self, entries: Entries) -> int:
        """Elements of the local tensor."""
        return prod(self.shape) // prod(self.sizes[f] for e in entries for f in e if isinstance(f, str))

    def step(
        self,
        state: State,
        call: str,
        group: tuple[str, ...],
        src: Endpoint,
        dst: Endpoint,
        changed: Mapping[int, list[Digit]],
        partial: frozenset[str],
    ) -> _Edge:
        """The step ``call`` over ``group`` whose digit changes on each dim are ``changed``."""
        entries = list(state[0])
        for dim, digits in changed.items():
            entries[dim] = entry_of(digits)
        nxt: State = (tuple(entries), partial)
        sent = _ring(call, prod(self.sizes[a] for a in group), self._local(state[0]))

        def build() -> Step:
            before = after = None
            for dim, digits in changed.items():
                pre, post = change(dim, digits, self.order)
                before, after = before or pre, after or post
            return Step(call, group, src, dst, self.spec(nxt), sent, before, after)

        return _Edge(nxt, sent, build)

    def _insertions(self, digits: list[Digit], group: tuple[str, ...], dim: int) -> Iterator[list[Digit]]:
        """Ways to fix the digits of ``group``'s axes out of the local digits of dim ``dim`` (refined digits).

        At the minor end (in any order of the axes); into a local digit of
        exactly their size; or, where the entry so far is a prefix of the
        destination's, as the destination continues it after a block count.
        """
        orders = list(itertools.permutations(group))
        candidates = [self.carve(digits, order) for order in orders]
        so_far = entry_of(digits)
        goal = self.goal[0][dim]
        if goal[: len(so_far)] == so_far:
            ahead = goal[len(so_far):]
            if ahead and isinstance(ahead[0], int) and sorted(map(str, ahead[1: 1 + len(group)])) == sorted(group):
                candidates.append(self.carve(digits, ahead[: 1 + len(group)]))
        block = prod(self.sizes[a] for a in group)
        for k, d in enumerate(digits[:-1]):
            if d.before is None and d.after is None and d.size == block:
                for order in orders:
                    candidates.append([*digits[:k], *(Digit(self.sizes[a], None, a) for a in order), *digits[k + 1:]])
        seen: set[tuple[Factor, ...]] = set()
        for refined in candidates:
            key = entry_of(refined)
            if refined and key not in seen:
                seen.add(key)
                yield refined

    def carve(self, digits: list[Digit], factors: Sequence[Factor]) -> list[Digit]:
        """``digits`` with the rest cut into ``factors`` (axes fixed, counts local) and a new rest; [] if it cannot."""
        rest = digits[-1]
        new = [Digit(self.sizes[f], None, f) if isinstance(f, str) else Digit(f, None, None) for f in factors]
        cut = prod(d.size for d in new)
        if rest.size % cut:
            return []
        return [*digits[:-1], *new, Digit(rest.size // cut, None, None)]

    # -- the moves ------------------------------------------------------------------

    def moves(self, state: State) -> Iterator[_Edge]:
        entries, partial = state
        goal_partial = self.goal[1]
        sharding = {f: dim for dim, e in enumerate(entries) for f in e if isinstance(f, str)}
        replicated = [a for a in self.sizes if a not in sharding and a not in partial]
        to_reduce = [a for a in partial if a not in goal_partial]
        for group in self._groups(to_reduce):
            left = partial - set(group)
            yield self.step(state, "all_reduce", group, P, R, {}, left)
            for j in range(len(entries)):
                for refined in self._insertions(self.digits(entries, j), group, j):
                    yield self.step(state, "reduce_scatter", group, P, Shard(j), {j: refined}, left)
        for group in self._groups(replicated):
            for j in range(len(entries)):
                for refined in self._insertions(self.digits(entries, j), group, j):
                    yield self.step(state, "convert", group, R, Shard(j), {j: refined}, partial)
            if set(group) <= goal_partial:
                yield self.step(state, "convert", group, R, P, {}, partial | set(group))
        for i, entry in enumerate(entries):
            for group in self._groups([f for f in entry if isinstance(f, str)]):
                yield from self._freeing(state, i, group)
        if not self.per_axis:
            yield from self._relabelings(state)

    def _freeing(self, state: State, i: int, group: tuple[str, ...]) -> Iterator[_Edge]:
        """Moves that free ``group``'s digits of dim ``i``: gather, all-to-all elsewhere, zero padding."""
        entries, partial = state
        freed = self.digits(entries, i)
        for d in freed:
            if d.before in group:
                d.after = None
        yield self.step(state, "all_gather", group, Shard(i), R, {i: freed}, partial)
        if set(group) <= self.goal[1]:
            yield self.step(state, "convert", group, Shard(i), P, {i: freed}, partial | set(group))
        for j in range(len(entries)):
            into = freed if j == i else self.digits(entries, j)
            for refined in self._insertions(into, group, j):
                changed = {j: refined} if j == i else {i: freed, j: refined}
                yield self.step(state, "all_to_all", group, Shard(i), Shard(j), changed, partial)

    def _relabelings(self, state: State) -> Iterator[_Edge]:
        """ppermutes: the axes of entries without block counts change places, each rank's piece keeping its size."""
        entries, partial = state
        slots = [(dim, k) for dim, e in enumerate(entries) if all(isinstance(f, str) for f in e)
                 for k in range(len(e))]
        names = tuple(entries[dim][k] for dim, k in slots)
        for order in sorted(set(itertools.permutations(names)) - {names}):
            new = [list(e) for e in entries]
            for (dim, k), name in zip(slots, order):
                new[dim][k] = name
            target: Entries = tuple(tuple(e) for e in new)
            changed = [dim for dim in range(len(entries)) if target[dim] != entries[dim]]
            if any(self._cut(target[dim]) != self._cut(entries[dim]) for dim in changed):
                continue
            group = tuple(sorted({str(f) for dim in changed for f in entries[dim]}, key=self.order.__getitem__))
            nxt: State = (target, partial)
            sent = _ring("ppermute", 0, self._local(entries))
            pairs = self._pairs(entries, target, changed, group)
            yield _Edge(nxt, sent, functools.partial(self._ppermute, nxt, group, sent, pairs))

    def _ppermute(self, nxt: State, group: tuple[str, ...], sent: Fraction, pairs: tuple[tuple[int, int], ...]) -> Step:
        return Step("ppermute", group, V, V, self.spec(nxt), sent, pairs=pairs)

    def _cut(self, factors: Sequence[Factor]) -> int:
        return prod(self.sizes[f] if isinstance(f, str) else f for f in factors)

    def _pairs(
        self, old: Entries, new: Entries, dims: Sequence[int], group: tuple[str, ...]
    ) -> tuple[tuple[int, int], ...]:
        """A ppermute's ``(source, destination)`` flattened indices over ``group`` from ``old`` to ``new``."""
        radices = [self.sizes[a] for a in group]
        pairs = []
        for dest in range(prod(radices)):
            coords = dict(zip(group, _unflatten(dest, radices)))
            source: dict[str, int] = {}
            for dim in dims:
                block = _flatten([coords[str(a)] for a in new[dim]], [self.sizes[str(a)] for a in new[dim]])
                source.update(zip(map(str, old[dim]), _unflatten(block, [self.sizes[str(a)] for a in old[dim]])))
            pairs.append((_flatten([source[a] for a in group], radices), dest))
        return tuple(pairs)


class _LowerBound:
    """A lower bound on the elements a rank still sends from a state (the search's A* heuristic).

    Reductions: every axis still partial that the destination is not is
    reduced by some step, which sends at least ``n - 1`` elements per
    ``1 / prod(mesh sizes)`` of the tensor over its ``n`` ranks (on the
    smallest local tensor it could have), and brings no index a rank did not
    hold.  Data: the ranks that differ only on the destination's partial axes
    end up holding the destination's indices between them (one rank each
    without partial axes); what none of them holds must reach them, and in
    these collectives a rank receives as many elements as it sends.  A group
    of ``n`` ranks that holds ``h_1, .., h_n`` of the ``g`` indices it needs
    lacks at least ``g - (h_1 + .. + h_n)``, so one of them receives a
    ``1/n`` share of that.  The bound is the largest lack over the groups,
    plus the reductions'.  It never exceeds what a plan still sends (the
    search stays optimal).
    """

    def __init__(self, axes: MeshAxes, shape: tuple[int, ...], goal: State) -> None:
        self.names = [name for name, _ in axes]
        self.sizes = dict(axes)
        self.shape = shape
        self.goal = goal
        self.cell = Fraction(prod(shape), prod(self.sizes.values()))
        self.goal_local = prod(shape) // prod(self.sizes[f] for e in goal[0] for f in e if isinstance(f, str))
        self.share = prod(self.sizes[a] for a in goal[1])
        self._overlaps: dict[tuple[int, tuple[Factor, ...]], tuple[tuple[str, ...], dict[tuple[int, ...], int]]] = {}

    def _overlap(self, dim: int, entry: tuple[Factor, ...]) -> tuple[tuple[str, ...], dict[tuple[int, ...], int]]:
        """For each coordinate on the axes of ``entry`` and of the destination's entry: the indices of dim
        ``dim`` that a rank holds and needs (counted on the shortest length with the same layout, scaled)."""
        key = (dim, entry)
        if key not in self._overlaps:
            goal = self.goal[0][dim]
            names = tuple(sorted({str(f) for f in (*entry, *goal) if isinstance(f, str)}))
            cut = lcm(*(prod(self.sizes[f] if isinstance(f, str) else f for f in e) for e in (entry, goal)))
            scale = self.shape[dim] // cut
            mine, held = pattern(entry, cut, self.sizes)
            theirs, needed = pattern(goal, cut, self.sizes)
            held_set = set(held)
            table = {}
            for values in itertools.product(*(range(self.sizes[n]) for n in names)):
                coords = dict(zip(names, values))
                shift = sum(coords[a] * s for a, s in theirs.items()) - sum(coords[a] * s for a, s in mine.items())
                table[values] = scale * sum(o + shift in held_set for o in needed)
            self._overlaps[key] = (names, table)
        return self._overlaps[key]

    def __call__(self, state: State) -> Fraction:
        entries, partial = state
        bound = Fraction(sum((self.sizes[a] - 1) * self.cell for a in partial - self.goal[1]))
        tables = [self._overlap(dim, entry) for dim, entry in enumerate(entries)]
        names = [n for n in self.names if any(n in axes for axes, _ in tables)]
        alike = prod(self.sizes[n] for n in self.goal[1] if n not in names)  # members no table tells apart
        held: dict[tuple[int, ...], int] = {}  # per group: the sum over its members of what they hold
        for values in itertools.product(*(range(self.sizes[n]) for n in names)):
            coords = dict(zip(names, values))
            group = tuple(v for n, v in zip(names, values) if n not in self.goal[1])
            mine = prod(table[tuple(coords[n] for n in axes)] for axes, table in tables)
            held[group] = held.get(group, 0) + alike * mine
        lack = max(0, self.goal_local - min(held.values()))
        return bound + Fraction(lack, self.share)


def _flatten(values: Sequence[int], radices: Sequence[int]) -> int:
    index = 0
    for v, n in zip(values, radices):
        index = index * n + v
    return index


def _unflatten(index: int, radices: Sequence[int]) -> list[int]:
    out = []
    for n in reversed(radices):
        index, v = divmod(index, n)
        out.append(v)
    return out[::-1]


def _state(spec: PartitionSpec) -> State:
    return tuple(spec.factors(dim) for dim in range(len(spec))), frozenset(spec.partial)


def _checked(
    axes: Mapping[str, int] | MeshAxes, shape: Sequence[int], src: PartitionSpec, dst: PartitionSpec
) -> tuple[MeshAxes, tuple[int, ...]]:
    """The mesh and shape, checked against both specs: known axes, one entry per dim, even cuts."""
    mesh = mesh_axes(axes)
    dims = tuple(shape)
    sizes = dict(mesh)
    for name, spec in (("src", src), ("dst", dst)):
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"{name} must be a PartitionSpec, got {type(spec).__name__}")
        if len(spec) != len(dims):
            raise ValueError(f"{name} {spec!r} has {len(spec)} entries for a tensor of shape {dims}")
        unknown = [a for a in (*spec.axes, *spec.partial) if a not in sizes]
        if unknown:
            raise ValueError(f"{name} {spec!r} names axis {unknown[0]!r}, which the mesh {sizes} does not have")
        for dim, length in enumerate(dims):
            digits_of(spec.factors(dim), length, sizes)
    return mesh, dims


def plan_redistribute(
    axes: Mapping[str, int] | MeshAxes,
    shape: Sequence[int],
    src: PartitionSpec,
    dst: PartitionSpec,
    *,
    per_axis: bool = False,
) -> Plan:
    """A cheapest plan from ``src`` to ``dst`` for a tensor of global ``shape`` on a mesh of ``axes``.

    ``axes`` maps the mesh's axis names, in its order, to their sizes
    (``{"dp": 2, "tp": 4}``).  Cheapest: fewest elements sent per rank, then
    fewest collectives, then fewest local steps, among the sequences of the
    moves in the module docstring (with ``per_axis``, of one-axis moves).
    Raises ``ValueError`` when a spec does not fit the mesh or the shape (a
    dim that its factors do not cut evenly).
    """
    mesh, dims = _checked(axes, shape, src, dst)
    planner = _Planner(mesh, dims, dst, per_axis)
    bound = _LowerBound(mesh, dims, planner.goal)
    start, goal = _state(src), planner.goal
    best: dict[State, Cost] = {start: (Fraction(0), 0, 0)}
    came: dict[State, tuple[State, Step]] = {}
    queue: list[tuple[Cost, int, Cost, State]] = [((bound(start), 0, 0), 0, best[start], start)]
    tie = itertools.count(1)
    while queue:
        _, _, cost, state = heapq.heappop(queue)
        if cost != best[state]:
            continue  # a cheaper way here was found after this entry was queued
        if state == goal:
            steps: list[Step] = []
            while state != start:
                state, step = came[state]
                steps.append(step)
            return Plan(mesh, dims, src, dst, tuple(reversed(steps)))
        for edge in planner.moves(state):
            nxt = edge.state
            if nxt in best and best[nxt][0] < cost[0] + edge.sent:
                continue
            step = edge.step()
            local = (step.before is not None) + (step.after is not None) + (not step.communicates)
            new = (cost[0] + step.sent, cost[1] + step.communicates, cost[2] + local)
            if nxt not in best or new < best[nxt]:
                best[nxt] = new
                came[nxt] = (state, step)
                heapq.heappush(queue, ((new[0] + bound(nxt), new[1], new[2]), next(tie), new, nxt))
    raise AssertionError(f"no plan from {src!r} to {dst!r}")  # pragma: no cover - plan_via_replicated is one


def plan_via_replicated(
    axes: Mapping[str, int] | MeshAxes, shape: Sequence[int], src: PartitionSpec, dst: PartitionSpec
) -> Plan:
    """The naive plan: every axis on its own, through the replicated tensor.

    All-reduce each partial axis that ``dst`` does not keep partial, gather
    each sharding axis (minor first), then slice ``dst``'s axes out one at a
    time and mask its new partial axes.  Always possible; the baseline of the
    benchmark.
    """
    mesh, dims = _checked(axes, shape, src, dst)
    planner = _Planner(mesh, dims, dst, per_axis=True)
    state = _state(src)
    steps: list[Step] = []

    def take(edge: _Edge) -> None:
        nonlocal state
        state = edge.state
        steps.append(edge.step())

    for axis in sorted(state[1] - planner.goal[1], key=planner.order.__getitem__):
        take(planner.step(state, "all_reduce", (axis,), P, R, {}, state[1] - {axis}))
    for dim in range(len(dims)):
        while state[0][dim]:
            axis = str(state[0][dim][-1])
            freed = planner.digits(state[0], dim)
            freed[-2].after = None
            take(planner.step(state, "all_gather", (axis,), Shard(dim), R, {dim: freed}, state[1]))
    for dim, goal in enumerate(planner.goal[0]):
        while state[0][dim] != goal:
            ahead = goal[len(state[0][dim]):]
            factors = ahead[:2] if isinstance(ahead[0], int) else ahead[:1]
            refined = planner.carve(planner.digits(state[0], dim), factors)
            take(planner.step(state, "convert", (str(factors[-1]),), R, Shard(dim), {dim: refined}, state[1]))
    for axis in sorted(planner.goal[1] - state[1], key=planner.order.__getitem__):
        take(planner.step(state, "convert", (axis,), R, P, {}, state[1] | {axis}))
    return Plan(mesh, dims, src, dst, tuple(steps))
