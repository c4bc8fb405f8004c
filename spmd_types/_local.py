"""Type changes without communication: ``reinterpret`` and ``convert``.

``reinterpret`` keeps every rank's local data and changes only the type, so
the *global* value may change (three ranks holding replicated ``A``,
reinterpreted as partial, denote ``3A``).  ``convert`` keeps the global value
and changes the local data with a local operation (a slice, a zero mask, zero
padding).  Neither communicates in the forward; their backwards may, as the
rule core's table says.

Diagrams: one row per rank (three shown), ``=>`` from input to output, a
value on one row only is the same on every rank, ``+`` marks a pending sum.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from spmd_types._checking import collective
from spmd_types._mesh import AxisLike, resolve_axis
from spmd_types._prims import check_dim, check_tensor, plan, run, shard_sizes
from spmd_types.typesystem import Endpoint, Shard

__all__ = ["convert", "reinterpret"]


@collective("reinterpret")
def reinterpret(x: torch.Tensor, axis: AxisLike, *, src: Endpoint, dst: Endpoint) -> torch.Tensor:
    """``reinterpret(x, axis, *, src, dst) -> dst``

    Changes the type on ``axis`` and keeps the local data: a no-op forward.
    The global value may change; use :func:`convert` to keep it.  Shards are
    not accepted (keeping the local data, ``S(i)`` would mean ``V``).

    ``reinterpret(R -> V)``: the same tensor on every rank becomes N tensors
    that happen to be equal.  Backward ``reinterpret(V -> P)`` (no-op)::

               A               +G0      G0
        A  =>  A      and      +G1  <=  G1
               A               +G2      G2

    ``reinterpret(V -> P)``: the ranks' tensors become summands of one pending
    sum.  Backward ``reinterpret(R -> V)`` (no-op)::

        A      +A              G      G
        B  =>  +B      and     G  <=  G
        C      +C              G

    ``reinterpret(R -> P)``: every rank's copy becomes a summand, so the value
    is multiplied by the axis size.  Backward ``reinterpret(R -> P)`` (no-op).

    ``reinterpret(I -> R)``: same data; the gradient, now partial, is summed.
    Backward ``all_reduce(P -> I)``; this is Megatron's
    copy-to-tensor-parallel region (also accepted as ``convert(I -> R)``)::

        A  =>  A               Gx + Gy + Gz  <=  +Gx, +Gy, +Gz

    ``reinterpret(R -> I)``: same data; the invariant gradient must not be
    counted N times, so the backward ``convert(I -> P)`` keeps it on rank 0::

        A  =>  A               +G, +0, +0  <=  G

    ``reinterpret(I -> V)`` is ``I -> R`` then ``R -> V``.

    Args:
        x: the local tensor.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: the type on ``axis`` now: ``R``, ``I`` or ``V``.
        dst: the type wanted: ``R``, ``I``, ``V`` or ``P``.
    """
    x = check_tensor("reinterpret", x)
    group = resolve_axis(axis)
    return run(plan("reinterpret", src, dst, group), x, group)


@collective("convert")
def convert(
    x: torch.Tensor,
    axis: AxisLike,
    *,
    src: Endpoint,
    dst: Endpoint,
    split_sizes: Sequence[int] | None = None,
) -> torch.Tensor:
    """``convert(x, axis, *, src, dst, split_sizes=None) -> dst``

    Changes the type on ``axis`` and keeps the global value, with a local
    operation and no communication.  ``V`` is read as "one entry per rank
    along dim 0", ``S(i)`` as "chunks along dim ``i``".  There is no way out
    of ``P`` without summing: use :func:`all_reduce` or :func:`reduce_scatter`.

    ``convert(R -> V)``, ``convert(I -> V)``: dim 0 must have the axis size;
    each rank keeps its own entry (dim 0 disappears)::

                       A
        [A, B, C]  =>  B
                       C

    Backward of ``R -> V`` is ``convert(V -> P)`` (zero padding); of ``I -> V``
    it is ``all_gather(V -> I)``::

        +[G0, 0, 0]      G0                              G0
        +[0, G1, 0]  <=  G1    (R)       [G0, G1, G2]  <=  G1    (I)
        +[0, 0, G2]      G2                              G2

    ``convert(R -> S(i))``, ``convert(I -> S(i))``: each rank keeps its chunk
    along ``i`` (``split_sizes`` for uneven chunks); backward
    ``convert(S(i) -> P)`` or ``all_gather(S(i) -> I)``::

                                      [A0, A1]
        [A0, A1, B0, B1, C0, C1]  =>  [B0, B1]
                                      [C0, C1]

    ``convert(R -> P)``, ``convert(I -> P)``: rank 0 keeps the value, the
    others hold zeros, so the pending sum is the value.  Backward
    ``convert(R -> P)`` and ``reinterpret(R -> I)`` (no-op)::

                +A                        +G
        A  =>   +0         and (R)        +0  <=  G
                +0                        +0

    ``convert(V -> P)``: a new dim 0 of the axis size, holding the rank's
    tensor at its own index and zeros elsewhere; backward ``convert(R -> V)``::

        A      +[A, 0, 0]                G0
        B  =>  +[0, B, 0]      and       G1  <=  [G0, G1, G2]
        C      +[0, 0, C]                G2

    ``convert(S(i) -> P)``: the same with zero padding along ``i``; backward
    ``convert(R -> S(i))``.

    ``convert(I -> R)`` (Megatron's copy-to-tensor-parallel region: no-op
    forward, all-reduce backward) and ``convert(R -> I)`` are the reinterprets
    of the same names, which already keep the value.

    Args:
        x: the local tensor; any layout.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: ``R``, ``I``, ``V`` or ``S(i)``.
        dst: ``R``, ``I``, ``V``, ``S(i)`` or ``P``.
        split_sizes: for a shard end only: every rank's chunk length along
            the shard dim, for uneven chunks.
    """
    x = check_tensor("convert", x)
    group = resolve_axis(axis)
    steps = plan("convert", src, dst, group)
    ndim = x.dim()
    if isinstance(src, Shard):
        a = check_dim(src.dim, ndim, "src=S(dim)")
        sizes = shard_sizes(split_sizes, group, "convert", src)
        return run(steps, x, group, a, 0, sizes, sizes)
    if isinstance(dst, Shard):
        b = check_dim(dst.dim, ndim, "dst=S(dim)")
        sizes = shard_sizes(split_sizes, group, "convert", dst)
        return run(steps, x, group, 0, b, sizes, sizes)
    shard_sizes(split_sizes, group, "convert", dst)
    return run(steps, x, group)
