"""Type changes without communication: ``reinterpret`` and ``convert``.

``reinterpret`` keeps every rank's local data and changes only the type, so
the *global* value may change (three ranks holding replicated ``A``,
reinterpreted as partial, denote ``3A``).  ``convert`` keeps the global value
and changes the local data with a local operation (a slice, a zero mask, zero
padding).  Each docstring ends with the rule core's table of the pairs the
call accepts and what runs forward and backward.

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
    """``reinterpret(x: src, axis, *, src: R | I | V, dst: R | I | V | P) -> dst``

    Changes the type on ``axis`` and keeps the local data: a no-op forward.
    The global value may change; use :func:`convert` to keep it.

    Forward and backward, per rank.  ``R -> V``: the same tensor on every rank
    becomes N tensors that happen to be equal::

               A               +G0      G0
        A  =>  A      and      +G1  <=  G1
               A               +G2      G2

    ``V -> P``: the ranks' tensors become summands of one pending sum::

        A      +A              G      G
        B  =>  +B      and     G  <=  G
        C      +C              G

    ``R -> P``: every rank's copy becomes a summand, so the value is
    multiplied by the axis size.

    ``I -> R``: the same data, whose gradients, one per rank, are summed
    (Megatron's copy-to-tensor-parallel region)::

        A  =>  A               Gx + Gy + Gz  <=  +Gx, +Gy, +Gz

    ``R -> I``: the same data; the invariant gradient must not be counted
    once per rank::

        A  =>  A               +G, +0, +0  <=  G

    Args:
        x: the local tensor.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: the type of ``x`` on ``axis``.
        dst: the type wanted on ``axis``.

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        src  dst  forward                                   backward
        R    I    reinterpret(R -> I)                       convert(I -> P)
                  (no-op)                                   (mask to rank 0)
        R    V    reinterpret(R -> V)                       reinterpret(V -> P)
                  (no-op)                                   (no-op)
        R    P    reinterpret(R -> P)                       reinterpret(R -> P)
                  (no-op)                                   (no-op)
        I    R    reinterpret(I -> R)                       all_reduce(P -> I)
                  (no-op)                                   (all-reduce)
        I    V    reinterpret(I -> R), reinterpret(R -> V)  reinterpret(V -> P), all_reduce(P -> I)
                  (no-op)                                   (all-reduce)
        V    P    reinterpret(V -> P)                       reinterpret(R -> V)
                  (no-op)                                   (no-op)
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
    """``convert(x: src, axis, *, src: R | I | V | S(i), dst: R | I | V | P | S(i)) -> dst``

    Changes the type on ``axis`` and keeps the global value, with a local
    operation and no communication.  ``V`` is read as "one entry per rank
    along dim 0", ``S(i)`` as "chunks along dim ``i``".  There is no way out
    of ``P`` without summing: use :func:`all_reduce` or :func:`reduce_scatter`.

    Forward and backward, per rank.  ``R -> V`` and ``I -> V``: dim 0 must
    have the axis size; each rank keeps its own entry (dim 0 disappears)::

                       A
        [A, B, C]  =>  B
                       C

    Their backwards, from ``R`` and from ``I``::

        +[G0, 0, 0]      G0                              G0
        +[0, G1, 0]  <=  G1    (R)       [G0, G1, G2]  <=  G1    (I)
        +[0, 0, G2]      G2                              G2

    ``R -> S(i)`` and ``I -> S(i)``: each rank keeps its chunk along ``i``
    (``split_sizes`` for uneven chunks)::

                                      [A0, A1]
        [A0, A1, B0, B1, C0, C1]  =>  [B0, B1]
                                      [C0, C1]

    ``R -> P`` and ``I -> P``: rank 0 keeps the value, the others hold zeros,
    so the pending sum is the value; the backward from ``R``::

                +A                        +G
        A  =>   +0         and (R)        +0  <=  G
                +0                        +0

    ``V -> P``: a new dim 0 of the axis size, holding the rank's tensor at its
    own index and zeros elsewhere::

        A      +[A, 0, 0]                G0
        B  =>  +[0, B, 0]      and       G1  <=  [G0, G1, G2]
        C      +[0, 0, C]                G2

    ``S(i) -> P``: the same with zero padding along ``i``.

    Args:
        x: the local tensor; any layout.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: the type of ``x`` on ``axis``.
        dst: the type wanted on ``axis``.
        split_sizes: for a shard end only: every rank's chunk length along
            the shard dim, for uneven chunks.

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        src   dst   forward              backward
        R     I     reinterpret(R -> I)  convert(I -> P)
                    (no-op)              (mask to rank 0)
        R     V     convert(R -> V)      convert(V -> P)
                    (local slice)        (zero padding)
        R     P     convert(R -> P)      convert(R -> P)
                    (mask to rank 0)     (mask to rank 0)
        R     S(i)  convert(R -> S(i))   convert(S(i) -> P)
                    (local slice)        (zero padding)
        I     R     reinterpret(I -> R)  all_reduce(P -> I)
                    (no-op)              (all-reduce)
        I     V     convert(I -> V)      all_gather(V -> I)
                    (local slice)        (all-gather)
        I     P     convert(I -> P)      reinterpret(R -> I)
                    (mask to rank 0)     (no-op)
        I     S(i)  convert(I -> S(i))   all_gather(S(i) -> I)
                    (local slice)        (all-gather)
        V     P     convert(V -> P)      convert(R -> V)
                    (zero padding)       (local slice)
        S(i)  P     convert(S(i) -> P)   convert(R -> S(i))
                    (zero padding)       (local slice)
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
