"""``PartitionSpec``: how a tensor's dims are sharded over mesh axes, and which axes hold a pending sum.

A spec has one *entry* per tensor dim and a set of *partial* axes::

    PartitionSpec("dp", None, ("tp", "cp"), partial="ep")

says: dim 0 is sharded over ``dp``; dim 1 is not sharded; dim 2 is cut into
``tp`` pieces, each of them cut again into ``cp`` pieces (``tp`` major,
``cp`` minor); every rank holds a summand of its piece over ``ep``, whose sum
is the value; on every other mesh axis the tensor is replicated.  It prints,
for a global shape ``(8, 16, 32)`` in ``float32``, as ``f32[8@dp,16,32@(tp,cp)]+ep``.

An entry is ``None``, an axis name, or a tuple of *factors*, major to minor:
an axis name, or an int ``k``, a cut into ``k`` blocks that every rank keeps.
``(2, "dp")`` is the strided shard (DTensor's ``_StridedShard`` with
``split_factor=2``): the dim is cut into 2 blocks, each block is sharded over
``dp``, and a rank holds its piece of both blocks, one after the other.

The denotation, for a rank with coordinate ``c[a]`` on each axis ``a``: on a
dim whose factors have sizes ``n_1 .. n_m`` (an axis's size is its mesh size)
and global length ``D``, write a global index in mixed radix over
``(n_1, .., n_m, D / (n_1 .. n_m))``.  The rank holds the indices whose digit
of every axis factor is its coordinate on that axis, in increasing order (the
local tensor is the global one restricted to those indices on every dim);
over the partial axes, the ranks' local tensors add up to that restriction.

Per mesh axis this is one local SPMD type (:func:`per_axis_types`): ``S(i)``
on an axis that shards dim ``i``, ``P`` on a partial axis, ``R`` on every
other axis.  ``S(i)`` is the global meaning of the axis's own collectives only
for the minor-most factor of the entry: gathering ``dp`` out of
``("dp", "tp")`` leaves the strided ``(n_dp, "tp")``, which the per-axis types
cannot say and a spec can.

Annotation metadata: a ``PartitionSpec`` in ``Annotated[Tensor, ...]``
declares the per-axis types :func:`spec_type` gives (see
:mod:`~spmd_types.typesystem.annotations`); :func:`spmd_types.redistribute_spec` takes specs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TypeAlias

from spmd_types.typesystem.local_types import AxisType, P, R, Shard
from spmd_types.typesystem.spmd_type import SpmdType

__all__ = [
    "Entry", "Factor", "MeshAxes", "PartitionSpec", "all_specs", "dual", "global_shape", "mesh_axes", "per_axis_types",
    "spec_type",
]

Factor: TypeAlias = str | int
"""A mesh axis that cuts a dim (each rank keeps its piece), or a number of blocks every rank keeps."""

Entry: TypeAlias = str | tuple[Factor, ...] | None
"""One dim of a spec: unsharded (``None``), one axis, or factors major to minor."""

MeshAxes: TypeAlias = tuple[tuple[str, int], ...]
"""Mesh axis names with their sizes, in the mesh's order."""


def mesh_axes(mesh: Mapping[str, int] | Iterable[tuple[str, int]]) -> MeshAxes:
    """``{"dp": 2, "tp": 4}`` (or pairs) as :data:`MeshAxes`, checked: distinct names, sizes >= 1."""
    pairs = tuple(mesh.items() if isinstance(mesh, Mapping) else mesh)
    names = [name for name, _ in pairs]
    for name, size in pairs:
        if not isinstance(name, str) or not name or names.count(name) > 1:
            raise ValueError(f"mesh axes must have distinct non-empty names, got {names!r}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"mesh axis {name!r} needs a positive int size, got {size!r}")
    return pairs


def _factors(entry: object) -> tuple[Factor, ...]:
    """An entry as given, checked and turned into its factors."""
    if entry is None:
        return ()
    if isinstance(entry, str):
        entry = (entry,)
    if not isinstance(entry, tuple):
        raise TypeError(f"a PartitionSpec entry is None, an axis name or a tuple of factors, got {entry!r}")
    if not entry:
        raise ValueError("PartitionSpec: use None, not an empty tuple, for an unsharded dim")
    for position, factor in enumerate(entry):
        if isinstance(factor, bool) or not isinstance(factor, (str, int)) or factor == "":
            raise TypeError(f"a factor of a PartitionSpec entry is an axis name or an int >= 2, got {factor!r}")
        if isinstance(factor, int) and factor < 2:
            raise ValueError(f"a block count in a PartitionSpec entry must be >= 2, got {factor} in {entry!r}")
        if isinstance(factor, int) and position + 1 < len(entry) and isinstance(entry[position + 1], int):
            raise ValueError(f"{entry!r}: write two adjacent block counts as one ({factor * entry[position + 1]})")
    if isinstance(entry[-1], int):
        raise ValueError(f"{entry!r}: a block count after the last axis changes nothing; drop it")
    return entry


def _entry(factors: tuple[Factor, ...]) -> Entry:
    """Factors as an entry: ``None`` for none, the name for one axis, else the tuple."""
    if not factors:
        return None
    return factors[0] if len(factors) == 1 and isinstance(factors[0], str) else factors


class PartitionSpec:
    """One entry per tensor dim (see the module docstring) and the partial axes; immutable and hashable.

    Indexing and iteration give the entries, normalized: ``None``, a name for
    a one-axis entry, a tuple otherwise.  ``partial`` is the tuple of partial
    axes in the order given; two specs are equal when their entries are and
    their partial axes are the same set.
    """

    __slots__ = ("_entries", "_hash", "partial")

    _entries: tuple[Entry, ...]
    partial: tuple[str, ...]
    _hash: int

    def __init__(self, *entries: Entry, partial: str | Iterable[str] = ()) -> None:
        normalized: list[Entry] = []
        seen: list[str] = []
        for entry in entries:
            factors = _factors(entry)
            seen.extend(f for f in factors if isinstance(f, str))
            normalized.append(_entry(factors))
        names = (partial,) if isinstance(partial, str) else tuple(partial)
        for name in names:
            if not isinstance(name, str) or not name:
                raise TypeError(f"PartitionSpec: partial axes are axis names, got {name!r}")
        every = seen + list(names)
        twice = sorted({name for name in every if every.count(name) > 1})
        if twice:
            raise ValueError(f"PartitionSpec: axis {twice[0]!r} appears twice (an axis shards one dim or is partial)")
        object.__setattr__(self, "_entries", tuple(normalized))
        object.__setattr__(self, "partial", names)
        object.__setattr__(self, "_hash", hash((self._entries, frozenset(names))))

    @classmethod
    def canonical(cls, factors: Sequence[tuple[Factor, ...]], partial: tuple[str, ...]) -> PartitionSpec:
        """The spec of already valid, canonical factors (a planner's states), built without checking them."""
        spec = object.__new__(cls)
        entries = tuple(_entry(f) for f in factors)
        object.__setattr__(spec, "_entries", entries)
        object.__setattr__(spec, "partial", partial)
        object.__setattr__(spec, "_hash", hash((entries, frozenset(partial))))
        return spec

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("PartitionSpec is immutable")

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    def __getitem__(self, dim: int) -> Entry:
        return self._entries[dim]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionSpec):
            return NotImplemented
        return self._entries == other._entries and set(self.partial) == set(other.partial)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        parts = [repr(entry) for entry in self._entries]
        if self.partial:
            parts.append(f"partial={self.partial[0]!r}" if len(self.partial) == 1 else f"partial={self.partial!r}")
        return f"PartitionSpec({', '.join(parts)})"

    def factors(self, dim: int) -> tuple[Factor, ...]:
        """The factors of dim ``dim``, major to minor: ``()`` for an unsharded dim."""
        entry = self._entries[dim]
        return () if entry is None else (entry,) if isinstance(entry, str) else entry

    @property
    def axes(self) -> tuple[str, ...]:
        """Every mesh axis that shards some dim, in dim order (major to minor within a dim)."""
        return tuple(f for dim in range(len(self)) for f in self.factors(dim) if isinstance(f, str))

    def shard_dims(self) -> dict[str, int]:
        """Each sharding axis and the dim it shards."""
        return {f: dim for dim in range(len(self)) for f in self.factors(dim) if isinstance(f, str)}

    def describe(self, shape: Sequence[int], dtype: str = "f32") -> str:
        """The seed's printed form: ``f32[8@dp,16,32@(tp,cp)]``, a pending sum as ``+ep`` or ``+(dp,ep)``.

        ``shape`` is the global shape (one size per entry).
        """
        if len(shape) != len(self):
            raise ValueError(f"a spec of {len(self)} dims describes a shape of as many dims, got {tuple(shape)}")
        dims = []
        for dim, size in enumerate(shape):
            factors = self.factors(dim)
            if not factors:
                dims.append(str(size))
            elif len(factors) == 1:
                dims.append(f"{size}@{factors[0]}")
            else:
                dims.append(f"{size}@({','.join(map(str, factors))})")
        text = f"{dtype}[{','.join(dims)}]"
        if self.partial:
            text += "+" + (self.partial[0] if len(self.partial) == 1 else f"({','.join(self.partial)})")
        return text


def _check_on_mesh(spec: PartitionSpec, axes: MeshAxes) -> None:
    names = {name for name, _ in axes}
    unknown = [a for a in (*spec.axes, *spec.partial) if a not in names]
    if unknown:
        raise ValueError(f"{spec!r} names axis {unknown[0]!r}, which the mesh {dict(axes)} does not have")


def per_axis_types(spec: PartitionSpec, axes: MeshAxes) -> SpmdType:
    """The local SPMD type of every mesh axis: ``S(i)`` if it shards dim ``i``, ``P`` if partial, else ``R``."""
    _check_on_mesh(spec, axes)
    shards = spec.shard_dims()
    types: dict[str, AxisType] = {}
    for name, _ in axes:
        types[name] = Shard(shards[name]) if name in shards else P if name in spec.partial else R
    return SpmdType(types)


def spec_type(spec: PartitionSpec, others: Iterable[str] = ()) -> SpmdType:
    """The per-axis types of ``spec``: ``S(i)`` on each axis cutting dim ``i``, ``P`` on its partial axes,
    and ``R`` on each of ``others`` it does not name (the mesh's other axes, where they are known)."""
    named = (*spec.axes, *spec.partial)
    rest = [axis for axis in dict.fromkeys(others) if axis not in named]
    return per_axis_types(spec, mesh_axes([(axis, 1) for axis in (*named, *rest)]))


def dual(spec: PartitionSpec, axes: MeshAxes) -> PartitionSpec:
    """The spec of the gradient: the same shards, partial where ``spec`` is replicated and the other way round.

    ``R`` and ``P`` are each other's gradient types and ``S(i)`` is its own
    (see :func:`~spmd_types.typesystem.local_types.gradient_type`); the
    backward of a redistribution from ``src`` to ``dst`` is one from
    ``dual(dst)`` to ``dual(src)``.
    """
    _check_on_mesh(spec, axes)
    sharding = set(spec.axes)
    replicated = tuple(name for name, _ in axes if name not in sharding and name not in spec.partial)
    return PartitionSpec(*spec, partial=replicated)


def global_shape(spec: PartitionSpec, local_shape: Sequence[int], axes: MeshAxes) -> tuple[int, ...]:
    """The global shape of a tensor of spec ``spec`` whose local tensor has ``local_shape``."""
    _check_on_mesh(spec, axes)
    if len(local_shape) != len(spec):
        raise ValueError(f"{spec!r} has {len(spec)} entries, but the local tensor has shape {tuple(local_shape)}")
    sizes = dict(axes)
    out = []
    for dim, length in enumerate(local_shape):
        for factor in spec.factors(dim):
            length *= sizes[factor] if isinstance(factor, str) else 1
        out.append(length)
    return tuple(out)


def all_specs(axes: MeshAxes, ndim: int) -> tuple[PartitionSpec, ...]:
    """Every spec of an ``ndim``-dim tensor over ``axes`` of the kinds a plan is checked on.

    Each axis is replicated, partial, or shards one dim, the axes of a dim in
    every order; and, for every two axes ``a`` and ``b``, every such spec in
    which one dim is the strided ``(size of b, a)`` (what gathering ``b`` out
    of ``(b, a)`` leaves, and 2-D FSDP + TP with ``b = "tp"``) and the other
    axes are placed on the other dims.  For two axes and two dims: 30 specs.
    """
    names = [name for name, _ in axes]
    sizes = dict(axes)
    found: list[PartitionSpec] = []

    def place(free: Sequence[str], fixed: dict[int, tuple[Factor, ...]]) -> None:
        open_dims = [dim for dim in range(ndim) if dim not in fixed]
        for roles in itertools.product(["R", "P", *open_dims], repeat=len(free)):
            on = {dim: [a for a, role in zip(free, roles) if role == dim] for dim in open_dims}
            partial = [a for a, role in zip(free, roles) if role == "P"]
            for orders in itertools.product(*(itertools.permutations(on[dim]) for dim in open_dims)):
                entries: dict[int, tuple[Factor, ...]] = {**fixed, **dict(zip(open_dims, orders))}
                found.append(PartitionSpec(*(entries[dim] or None for dim in range(ndim)), partial=partial))

    place(names, {})
    for a, b in itertools.permutations(names, 2):
        for dim in range(ndim):
            if sizes[b] > 1:
                place([n for n in names if n != a], {dim: (sizes[b], a)})
    return tuple(dict.fromkeys(found))
