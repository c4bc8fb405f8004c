"""The four communication primitives every collective is built from, issued through the backend.

Each takes a tensor and a resolved :class:`~spmd_types._mesh.Group` and
returns a new tensor (the input is never written): a sum (or max, min)
all-reduce, an all-gather and a sum reduce-scatter along dim 0, and an
all-to-all of row blocks along dim 0.  They call the ``torch.distributed``
functions of the backend :mod:`spmd_types._dist` holds, blocking, on
contiguous real data: complex tensors travel as their real view (a trailing
dim of 2), on which sums and data movement act part by part, and which gloo
supports.

Under ``LocalTensorMode`` the same calls run on the simulated ranks, with one
exception: ``torch.distributed.all_to_all_single`` takes one list of split
sizes for every simulated rank, so an exchange whose sizes differ from rank
to rank (``ppermute``, an uneven ``all_to_all``) runs as an even exchange of
blocks padded to the longest piece, trimmed afterwards on each rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from spmd_types import _dist
from spmd_types._mesh import Group, rank_values, simulated

__all__ = ["all_gather", "all_reduce", "all_to_all", "pad_dim", "reduce_scatter"]

SplitSize = int | torch.SymInt


def pad_dim(t: torch.Tensor, dim: int, before: int, after: int) -> torch.Tensor:
    """``t`` with ``before``/``after`` zeros added along ``dim``."""
    if before == 0 and after == 0:
        return t
    spec = [0, 0] * (t.dim() - 1 - dim) + [before, after]
    return F.pad(t, spec)


def _real(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t) if t.is_complex() else t


def all_reduce(x: torch.Tensor, group: Group, op: str = "sum") -> torch.Tensor:
    """The element-wise sum (``op="max"``/``"min"``: extremum) of ``x`` over the ranks of ``group``."""
    out = x.clone(memory_format=torch.contiguous_format)
    reduce_op = _dist.SUM if op == "sum" else _dist.MAX if op == "max" else _dist.MIN
    _dist.all_reduce(_real(out), op=reduce_op, group=group.pg)
    return out


def all_gather(x: torch.Tensor, group: Group) -> torch.Tensor:
    """The ranks' ``x`` concatenated along dim 0, in rank order (every rank's ``x`` has one shape)."""
    out = x.new_empty((group.size * x.shape[0], *x.shape[1:]))
    _dist.all_gather(_real(out), _real(x.contiguous()), group=group.pg)
    return out


def reduce_scatter(x: torch.Tensor, group: Group) -> torch.Tensor:
    """Block ``k`` (of ``group.size`` equal blocks along dim 0) of the ranks' sum, on rank ``k``."""
    out = x.new_empty((x.shape[0] // group.size, *x.shape[1:]))
    _dist.reduce_scatter(_real(out), _real(x.contiguous()), op=_dist.SUM, group=group.pg)
    return out


def all_to_all(
    x: torch.Tensor, group: Group, out_splits: Sequence[SplitSize], in_splits: Sequence[SplitSize]
) -> torch.Tensor:
    """Rows ``in_splits[k]`` of ``x`` (consecutive blocks along dim 0) go to rank ``k``.

    The result holds the ``out_splits[k]`` rows received from rank ``k``, in
    rank order.  Under ``LocalTensorMode`` a size may be a per-rank ``SymInt``.
    """
    mode = simulated()
    if mode is not None and not _uniform(out_splits, in_splits):
        return _padded_all_to_all(x, group, out_splits, in_splits, mode)
    out = x.new_empty((sum(out_splits), *x.shape[1:]))
    _dist.all_to_all_single(_real(out), _real(x.contiguous()), list(out_splits), list(in_splits), group=group.pg)
    return out


def _uniform(*lists: Sequence[SplitSize]) -> bool:
    """All sizes are one plain int (the same for every simulated rank)."""
    values = {s if type(s) is int else None for sizes in lists for s in sizes}
    return len(values) == 1 and None not in values


def _padded_all_to_all(
    x: torch.Tensor, group: Group, out_splits: Sequence[SplitSize], in_splits: Sequence[SplitSize], mode: Any
) -> torch.Tensor:
    """``all_to_all`` on simulated ranks whose sizes differ: even blocks of the longest piece, then trimmed."""
    ranks = mode.ranks
    sends = [rank_values(s, ranks) for s in in_splits]
    gets = [rank_values(s, ranks) for s in out_splits]
    longest = max([1] + [v for sizes in (*sends, *gets) for v in sizes.values()])

    def pad(rank: int, t: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(t, [sizes[rank] for sizes in sends])
        return torch.cat([pad_dim(p, 0, 0, longest - p.shape[0]) for p in pieces])

    padded = mode.tensor_map(x, pad)
    out = padded.new_empty(padded.shape)
    _dist.all_to_all_single(_real(out), _real(padded.contiguous()), None, None, group=group.pg)

    def trim(rank: int, t: torch.Tensor) -> torch.Tensor:
        return torch.cat([t.narrow(0, k * longest, sizes[rank]) for k, sizes in enumerate(gets)])

    return mode.tensor_map(out, trim)  # type: ignore[no-any-return]
