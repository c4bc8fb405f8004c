"""Where a spec puts a tensor's elements: a dim as the digits of a mixed-radix index.

A dim of global length ``D`` whose entry has factors ``f_1 .. f_m`` is read as
the digits ``(f_1, .., f_m, rest)`` of a mixed-radix index, major to minor,
``rest`` being what is left of ``D``.  A digit is either fixed by a mesh axis
(every rank holds only the slice where it equals the rank's coordinate) or
*local* (the rank holds every value of it).  The local tensor holds the local
digits in their global order: that order is the denotation
(:func:`local_indices`).

A collective changes which digits are local.  A gather over axes ``G`` makes
their digits local, and puts them *first* in the local tensor (the ranks'
pieces are concatenated in the order of the flattened group); a scatter (or a
local slice) over ``G`` fixes digits that were local, and takes them *first*
(it cuts the local tensor into equal consecutive pieces).  Where that is not
the global order of the digits, a :class:`Reorder` before or after the
collective permutes blocks of the local tensor: this is what lets a plan
gather any axis of a multi-axis entry, and sort the blocks of a strided shard
(DTensor's ``_StridedShard`` does the same with an index sort).

This module computes those reorders (:func:`change`) and the denotation; the
planner (:mod:`.planner`) decides which digits change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod

from spmd_types.typesystem.partition_spec import Factor, MeshAxes, PartitionSpec

__all__ = ["Digit", "Reorder", "change", "digits_of", "dim_indices", "entry_of", "local_indices", "pattern"]


class Digit:
    """A digit of a dim's index: its size, and the axis that fixes it before and after a step (``None``: local)."""

    __slots__ = ("after", "before", "size")

    def __init__(self, size: int, before: str | None, after: str | None) -> None:
        self.size = size
        self.before = before
        self.after = after

    def __repr__(self) -> str:
        return f"Digit({self.size}, {self.before!r} -> {self.after!r})"


def digits_of(factors: Sequence[Factor], length: int, sizes: Mapping[str, int]) -> list[Digit]:
    """The digits of a dim of global ``length`` with these factors; the last one is the rest.

    Raises ``ValueError`` when the factors' sizes do not divide ``length``.
    """
    out = [Digit(sizes[f], f, f) if isinstance(f, str) else Digit(f, None, None) for f in factors]
    cut = prod(d.size for d in out)
    if length % cut:
        raise ValueError(f"a dim of size {length} cannot be cut into {cut} equal blocks by {tuple(factors)}")
    return [*out, Digit(length // cut, None, None)]


def entry_of(digits: Sequence[Digit]) -> tuple[Factor, ...]:
    """The canonical factors after a step: adjacent local digits merged, the trailing ones dropped."""
    out: list[Factor] = []
    block = 1
    for d in digits:
        if d.after is None:
            block *= d.size
            continue
        if block > 1:
            out.append(block)
        out.append(d.after)
        block = 1
    return tuple(out)


@dataclass(frozen=True)
class Reorder:
    """A permutation of blocks along dim ``dim`` of the local tensor, the same on every rank.

    The dim is viewed as the digits ``sizes`` (major to minor); digit ``k``
    of the result is digit ``order[k]`` of the input::

        x.unflatten(dim, sizes).permute(..., *(dim + o for o in order), ...).flatten(dim, dim + len(sizes) - 1)
    """

    dim: int
    sizes: tuple[int, ...]
    order: tuple[int, ...]

    def __str__(self) -> str:
        return f"dim {self.dim} as blocks {self.sizes} permuted {self.order}"


def _reorder(dim: int, current: Sequence[Digit], wanted: Sequence[Digit]) -> Reorder | None:
    """The reorder from local digits in ``current`` order to ``wanted`` order; ``None`` when they agree.

    Digits of size 1 are left out, and runs of digits that are adjacent in
    both orders are merged, so that the permutation is as short as it can be.
    """
    current = [d for d in current if d.size > 1]
    wanted = [d for d in wanted if d.size > 1]
    if current == wanted:
        return None
    runs: list[list[Digit]] = []
    for d in current:
        if runs and wanted.index(d) == wanted.index(runs[-1][-1]) + 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    by_wanted = sorted(range(len(runs)), key=lambda k: wanted.index(runs[k][0]))
    return Reorder(dim, tuple(prod(d.size for d in run) for run in runs), tuple(by_wanted))


def change(dim: int, digits: Sequence[Digit], mesh_order: Mapping[str, int]) -> tuple[Reorder | None, Reorder | None]:
    """The reorders around one collective that changes the digits of dim ``dim`` from ``before`` to ``after``.

    Digits going from local to an axis (*added*) must lead the local tensor,
    in the mesh order of their axes, for the collective to cut them off;
    digits going from an axis to local (*removed*) arrive leading, in the mesh
    order of theirs.  Returns the reorder before the collective and the one
    after it (each ``None`` where the order already fits).
    """
    local = [d for d in digits if d.before is None]
    added = sorted((d for d in local if d.after is not None), key=lambda d: mesh_order[str(d.after)])
    removed = sorted((d for d in digits if d.before is not None and d.after is None),
                     key=lambda d: mesh_order[str(d.before)])
    kept = [d for d in local if d.after is None]
    before = _reorder(dim, local, added + kept) if added else None
    after = _reorder(dim, removed + kept, [d for d in digits if d.after is None]) if removed else None
    return before, after


def pattern(
    factors: Sequence[Factor], length: int, sizes: Mapping[str, int]
) -> tuple[dict[str, int], tuple[int, ...]]:
    """A dim's layout as the stride of each axis digit and the offsets of the local digits.

    The rank at ``coords`` holds ``sum(coords[a] * stride[a]) + offset`` for
    each offset, in the offsets' order (its local order).
    """
    strides: dict[str, int] = {}
    offsets = [0]
    stride = length
    for d in digits_of(factors, length, sizes):
        stride //= d.size
        if d.before is not None:
            strides[d.before] = stride
        else:
            offsets = [o + v * stride for o in offsets for v in range(d.size)]
    return strides, tuple(offsets)


def dim_indices(
    factors: Sequence[Factor], length: int, sizes: Mapping[str, int], coords: Mapping[str, int]
) -> tuple[int, ...]:
    """The global indices along one dim that the rank at ``coords`` holds, in local order."""
    strides, offsets = pattern(factors, length, sizes)
    base = sum(coords[a] * stride for a, stride in strides.items())
    return tuple(base + o for o in offsets)


def local_indices(
    spec: PartitionSpec, axes: MeshAxes, shape: Sequence[int], coords: Mapping[str, int]
) -> tuple[tuple[int, ...], ...]:
    """The denotation: the global indices, per dim and in local order, that the rank at ``coords`` holds.

    The rank's local tensor is the global tensor indexed by these lists on
    every dim (``global[ix_(*indices)]``); over ``spec.partial`` the ranks'
    local tensors add up to it.
    """
    sizes = dict(axes)
    return tuple(dim_indices(spec.factors(dim), length, sizes, coords) for dim, length in enumerate(shape))
