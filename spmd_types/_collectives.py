"""Differentiable collectives: ``all_reduce``, ``all_gather``, ``reduce_scatter``,
``all_to_all``, ``ppermute`` and ``redistribute``.

Each call takes the local SPMD type of its input and output on ``axis`` as
keyword-only ``src=``/``dst=`` arguments.  The types do not change what the
forward computes (beyond choosing stack versus concatenate); they choose the
backward, which is always the one the rule core's table gives
(:mod:`spmd_types._prims` runs both directions from that table).  Each call's
docstring starts with its signature in SPMD types and ends with that table:
every ``src``/``dst`` pair the call accepts, the primitive transitions it runs
forward and the ones its backward runs, both computed from the rule core.

The diagrams show what happens to the data, per rank: one row per rank of the
axis, shown for three ranks; ``=>`` separates input from output; a value
written on one row only is the same on every rank; a leading ``+`` marks a
pending sum (the value is the sum of the rows).  Backward diagrams read
``grad_input <= grad_output``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import torch

from spmd_types import _checks, _comm
from spmd_types._checking import collective
from spmd_types._checks import check_exchange_sizes, check_ranks_agree
from spmd_types._errors import CollectiveArgumentError, NotDifferentiableError
from spmd_types._mesh import AxisLike, Group, local_tensors, rank_values, resolve_axis, simulated
from spmd_types._precision import precision
from spmd_types._prims import (
    Permutation,
    Precision,
    check_dim,
    check_tensor,
    need_sizes,
    permutation,
    plan,
    run,
    shard_sizes,
    size_list,
)
from spmd_types.typesystem import NO_GRADIENT_REDUCTIONS, Endpoint, P, Shard, V

__all__ = ["all_gather", "all_reduce", "all_to_all", "ppermute", "redistribute", "reduce_scatter"]

ReduceOp = Literal["sum", "avg", "max", "min"]


def _agree(call: str, name: str, given: int | None, dim: int, ndim: int, endpoint: Shard) -> None:
    if given is not None and check_dim(given, ndim, name) != dim:
        raise CollectiveArgumentError(
            f"{call}: {name}={given} disagrees with {endpoint.code}, which already fixes dim {dim}; "
            f"drop {name}= or change the shard"
        )


def _sharded_dim(
    call: str,
    side: str,
    endpoint: Endpoint,
    dim_name: str,
    dim: int | None,
    unsharded_ndim: int,
    x: torch.Tensor,
    group: Group,
    split_sizes: Sequence[int] | None,
) -> tuple[int, tuple[int, ...] | None]:
    """The dim a gather or scatter works on, and the shard sizes along it.

    A shard endpoint (``side`` is ``"src"`` for a gather, ``"dst"`` for a
    scatter) fixes the dim, which ``dim_name=`` may repeat but not contradict;
    otherwise ``dim_name=`` picks it (default 0) among ``unsharded_ndim`` dims.
    """
    if isinstance(endpoint, Shard):
        fixed = check_dim(endpoint.dim, x.dim(), f"{side}=S(dim)")
        _agree(call, dim_name, dim, fixed, x.dim(), endpoint)
        return fixed, shard_sizes(split_sizes, group, call, endpoint)
    shard_sizes(split_sizes, group, call, endpoint)  # rejects split_sizes without a shard
    return (0 if dim is None else check_dim(dim, unsharded_ndim, dim_name)), None


def _summable(call: str, x: torch.Tensor, group: Group) -> None:
    """Refuse to sum booleans: the backends' "sum" of bools is an or, or overflows, depending on the backend."""
    if x.dtype is torch.bool:
        raise CollectiveArgumentError(
            f"{call} on axis {group.label!r}: the sum of torch.bool values is not a bool; sum integers "
            f'(x.int()), or all_reduce with op="max" (a logical or) or op="min" (a logical and)'
        )


# -- all_reduce --------------------------------------------------------------------


class _Extremum(torch.autograd.Function):
    """all-reduce with max or min: a statistic, with no gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: Group, op: str, dtypes: Precision | None) -> torch.Tensor:
        ctx.op = op
        ctx.label = group.label
        if _checks.checking():
            check_ranks_agree(x, group, f'all_reduce(op="{op}")', None, None)
        if dtypes is None:
            return _comm.all_reduce(x, group, op)
        comm, out, _ = dtypes
        return _comm.all_reduce(x if comm is None else x.to(comm), group, op).to(out or x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> None:
        raise NotDifferentiableError(
            f'all_reduce(op="{ctx.op}") on axis {ctx.label!r} has no gradient, but one reached it. '
            f"It is meant for statistics such as the max logit subtracted before a softmax, which "
            f'does not change the result: pass x.detach(), or use op="sum"/"avg" if the gradient matters'
        )


_extremum: Callable[[torch.Tensor, Group, str, Precision | None], torch.Tensor] = _Extremum.apply


@collective("all_reduce")
def all_reduce(
    x: torch.Tensor,
    axis: AxisLike,
    *,
    src: Endpoint = P,
    dst: Endpoint,
    op: ReduceOp = "sum",
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``all_reduce(x: src, axis, *, src: V | P = P, dst: R | I) -> dst``

    Sums the ranks' tensors over ``axis``; every rank gets the total.  A
    partial input already *means* that sum, so on the denotation this is the
    identity: it only carries the pending sum out::

        +Ax
        +Ay  =>  Ax + Ay + Az
        +Az

    Args:
        x: the local tensor; any shape, any layout.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: the type of ``x`` on ``axis``.
        dst: the type of the result on ``axis``, which decides the backward.
        op: ``"sum"``; ``"avg"`` (the sum divided by the axis size,
            differentiable; floating-point and complex tensors only, since
            the average of integers is not an integer); ``"max"`` or ``"min"`` (statistics: element-wise
            extremum over the ranks, no gradient; a gradient reaching them
            raises :class:`~spmd_types._errors.NotDifferentiableError`).  The
            checker types a maximum or minimum as a constant on ``axis``
            (``R`` and ``I`` differ only in the gradient), so it combines
            with operands of any type, as the max-logit does.
        comm_dtype: the dtype the all-reduce runs in (and sums in); ``x`` is
            cast to it first.  Default: ``x``'s dtype.
        out_dtype: the result's dtype.  Default: ``x``'s dtype.
        grad_comm_dtype: the dtype the backward's communication runs in,
            if it communicates.  Default: the gradient's own.  The gradient
            comes back in ``x``'s dtype.  The three are explained in
            [Mixed precision](precision.md).

    Returns:
        A tensor of ``x``'s shape, of type ``dst`` on ``axis``.

    **Backward**, per rank (for ``op="sum"``; ``"avg"`` also divides by the
    axis size).  With ``dst=R``::

                          +Gx
        Gx + Gy + Gz  <=  +Gy
                          +Gz

    With ``dst=I``::

        G  <=  G

    Pick ``I`` when the ranks go on to do the same work (Megatron's
    reduce-from-tensor-parallel region), ``R`` when they go on to do
    different work with it.

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        src  dst  forward                                  backward
        V    R    reinterpret(V -> P), all_reduce(P -> R)  all_reduce(P -> R), reinterpret(R -> V)
                  (all-reduce)                             (all-reduce)
        V    I    reinterpret(V -> P), all_reduce(P -> I)  reinterpret(I -> R), reinterpret(R -> V)
                  (all-reduce)                             (no-op)
        P    R    all_reduce(P -> R)                       all_reduce(P -> R)
                  (all-reduce)                             (all-reduce)
        P    I    all_reduce(P -> I)                       reinterpret(I -> R)
                  (all-reduce)                             (no-op)
    """
    x = check_tensor("all_reduce", x)
    group = resolve_axis(axis)
    steps = plan("all_reduce", src, dst, group)
    dtypes = precision("all_reduce", x, comm_dtype, out_dtype, grad_comm_dtype)
    if op == "sum":
        _summable("all_reduce", x, group)
        return run(steps, x, group, precision=dtypes)
    if op == "avg":
        if not (x.is_floating_point() or x.is_complex()):
            raise CollectiveArgumentError(
                f'all_reduce(op="avg") on axis {group.label!r}: the average of {x.dtype} values is not a '
                f'{x.dtype} value; use op="sum" and divide (x.sum() / axis_size), or pass a float tensor'
            )
        return run(steps, x, group, precision=dtypes) / group.size
    if op in NO_GRADIENT_REDUCTIONS:
        if x.is_complex():
            raise CollectiveArgumentError(
                f'all_reduce(op="{op}") on axis {group.label!r}: {x.dtype} values have no order; '
                f"reduce x.abs() or x.real instead"
            )
        return _extremum(x, group, op, dtypes)
    raise CollectiveArgumentError(f'all_reduce: op must be "sum", "avg", "max" or "min", got {op!r}')


# -- all_gather --------------------------------------------------------------------


@collective("all_gather")
def all_gather(
    x: torch.Tensor,
    axis: AxisLike,
    *,
    src: Endpoint = V,
    dst: Endpoint,
    gather_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``all_gather(x: src, axis, *, src: V | S(i) = V, dst: R | I) -> dst``

    Every rank gets every rank's tensor.  With ``src=V`` the tensors are
    stacked along a new dim ``gather_dim`` (default 0); with ``src=S(i)`` they
    are concatenated along dim ``i`` (the global tensor the shards make up)::

        src=V:                       src=S(0):
        A                            [A0, A1]
        B  =>  [A, B, C]             [B0, B1]  =>  [A0, A1, B0, B1, C0, C1]
        C                            [C0, C1]

    Args:
        x: the local tensor (``V``) or shard (``S(i)``); any layout.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: the type of ``x`` on ``axis``.
        dst: the type of the result on ``axis``, which decides the backward.
        gather_dim: for ``src=V``, where the new dim goes (default 0); for
            ``src=S(i)`` it may be given only as ``i``.
        split_sizes: for ``src=S(i)`` only: the shard length of every rank
            along ``i``, for shards of unequal length (each rank's ``x`` must
            have its own length).  Implemented by padding to the longest.
        comm_dtype: the dtype the gather runs in (``torch.bfloat16`` halves
            the bytes of a ``float32`` parameter).  Default: ``x``'s dtype.
        out_dtype: the result's dtype.  Default: ``x``'s dtype.
        grad_comm_dtype: the dtype the backward's communication runs in,
            if it communicates.  Default: the gradient's own.  The gradient
            comes back in ``x``'s dtype; see [Mixed precision](precision.md).

    Returns:
        ``V``: shape ``x.shape`` with the axis size inserted at ``gather_dim``.
        ``S(i)``: ``x.shape`` with dim ``i`` multiplied by the axis size (or
        ``sum(split_sizes)``).

    **Backward**, per rank.  ``V -> R``: each rank's row ``k`` is a partial
    gradient of rank ``k``'s input::

        Gx0 + Gy0 + Gz0      +[Gx0, Gx1, Gx2]
        Gx1 + Gy1 + Gz1  <=  +[Gy0, Gy1, Gy2]
        Gx2 + Gy2 + Gz2      +[Gz0, Gz1, Gz2]

    ``V -> I``: each rank takes its own entry::

        G0
        G1  <=  [G0, G1, G2]
        G2

    From ``S(i)``, the same with chunks along ``i``.

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        src   dst  forward                backward
        V     R    all_gather(V -> R)     reduce_scatter(P -> V)
                   (all-gather)           (reduce-scatter)
        V     I    all_gather(V -> I)     convert(I -> V)
                   (all-gather)           (local slice)
        S(i)  R    all_gather(S(i) -> R)  reduce_scatter(P -> S(i))
                   (all-gather)           (reduce-scatter)
        S(i)  I    all_gather(S(i) -> I)  convert(I -> S(i))
                   (all-gather)           (local slice)
    """
    x = check_tensor("all_gather", x)
    group = resolve_axis(axis)
    steps = plan("all_gather", src, dst, group)
    # Without a shard the ranks' tensors are stacked, on a new dim.
    a, sizes = _sharded_dim("all_gather", "src", src, "gather_dim", gather_dim, x.dim() + 1, x, group, split_sizes)
    dtypes = precision("all_gather", x, comm_dtype, out_dtype, grad_comm_dtype)
    return run(steps, x, group, a, 0, sizes, sizes, dtypes)


# -- reduce_scatter ----------------------------------------------------------------


@collective("reduce_scatter")
def reduce_scatter(
    x: torch.Tensor,
    axis: AxisLike,
    *,
    src: Endpoint = P,
    dst: Endpoint = V,
    scatter_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``reduce_scatter(x: src, axis, *, src: V | P = P, dst: V | S(i) = V) -> dst``

    Sums over the ranks, and each rank keeps only its own part of the sum
    (an all-reduce that drops what the rank does not need).  ``dst=V``:
    dim ``scatter_dim`` (default 0) must have one entry per rank; rank ``k``
    keeps entry ``k`` and the dim disappears.  ``dst=S(i)``: dim ``i`` is
    cut into equal chunks (or ``split_sizes``) and rank ``k`` keeps chunk ``k``::

        dst=V:
        +[Ax, Bx, Cx]      Ax + Ay + Az
        +[Ay, By, Cy]  =>  Bx + By + Bz
        +[Az, Bz, Cz]      Cx + Cy + Cz

        dst=S(0):
        +[A0x, A1x, B0x, B1x, C0x, C1x]      [A0x + A0y + A0z, A1x + A1y + A1z]
        +[A0y, A1y, B0y, B1y, C0y, C1y]  =>  [B0x + B0y + B0z, B1x + B1y + B1z]
        +[A0z, A1z, B0z, B1z, C0z, C1z]      [C0x + C0y + C0z, C1x + C1y + C1z]

    Args:
        x: the local partial tensor; any layout.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: the type of ``x`` on ``axis``.
        dst: the type of the result on ``axis``.
        scatter_dim: for ``dst=V``, the dim of size axis-size to scatter
            (default 0); for ``dst=S(i)`` it may be given only as ``i``.
        split_sizes: for ``dst=S(i)`` only: every rank's chunk length along
            ``i`` (they must add up to ``x.shape[i]``), for uneven chunks.
        comm_dtype: the dtype the reduce-scatter runs in (and sums in).
            Default: ``x``'s dtype.
        out_dtype: the result's dtype.  Default: ``x``'s dtype.
        grad_comm_dtype: the dtype the backward's communication runs in.
            Default: the gradient's own.  The gradient comes back in ``x``'s
            dtype; see [Mixed precision](precision.md).

    Returns:
        A tensor of type ``dst`` on ``axis``.

    **Backward**, per rank: every rank gets the gradient of every entry it
    contributed to.  ``P -> V``::

                          G0
        [G0, G1, G2]  <=  G1
                          G2

    ``P -> S(i)``::

                                      [G0, G1]
        [G0, G1, G2, G3, G4, G5]  <=  [G2, G3]
                                      [G4, G5]

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        src  dst   forward                                         backward
        V    V     reinterpret(V -> P), reduce_scatter(P -> V)     all_gather(V -> R), reinterpret(R -> V)
                   (reduce-scatter)                                (all-gather)
        V    S(i)  reinterpret(V -> P), reduce_scatter(P -> S(i))  all_gather(S(i) -> R), reinterpret(R -> V)
                   (reduce-scatter)                                (all-gather)
        P    V     reduce_scatter(P -> V)                          all_gather(V -> R)
                   (reduce-scatter)                                (all-gather)
        P    S(i)  reduce_scatter(P -> S(i))                       all_gather(S(i) -> R)
                   (reduce-scatter)                                (all-gather)
    """
    x = check_tensor("reduce_scatter", x)
    group = resolve_axis(axis)
    steps = plan("reduce_scatter", src, dst, group)
    _summable("reduce_scatter", x, group)
    b, sizes = _sharded_dim("reduce_scatter", "dst", dst, "scatter_dim", scatter_dim, x.dim(), x, group, split_sizes)
    dtypes = precision("reduce_scatter", x, comm_dtype, out_dtype, grad_comm_dtype)
    return run(steps, x, group, 0, b, sizes, sizes, dtypes)


# -- all_to_all --------------------------------------------------------------------


@collective("all_to_all")
def all_to_all(
    x: torch.Tensor,
    axis: AxisLike,
    *,
    src: Endpoint = V,
    dst: Endpoint = V,
    split_dim: int | None = None,
    concat_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
    out_split_sizes: Sequence[int] | None = None,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``all_to_all(x: src, axis, *, src: V | S(i) = V, dst: V | S(i) = V) -> dst``

    Every rank cuts its tensor into one piece per rank, sends piece ``k`` to
    rank ``k``, and joins the pieces it receives in source-rank order.  ``dst``
    says how a tensor is cut: ``V`` unbinds dim ``split_dim`` (default 0; its
    size must be the axis size), ``S(j)`` chunks along ``j``.  ``src`` says how
    received pieces are joined: ``V`` stacks them along a new dim
    ``concat_dim`` (default 0), ``S(i)`` concatenates them along ``i``.  For
    shards of different dims this keeps the global tensor and moves the
    sharding from dim ``i`` to dim ``j``::

        V -> V (transpose the axis with dim 0):
        [A0, A1, A2]      [A0, B0, C0]
        [B0, B1, B2]  =>  [A1, B1, C1]
        [C0, C1, C2]      [A2, B2, C2]

        S(0) -> S(1) (global [[a, b, c], [d, e, f], [g, h, k]]):
        [[a, b, c]]      [[a], [d], [g]]
        [[d, e, f]]  =>  [[b], [e], [h]]
        [[g, h, k]]      [[c], [f], [k]]

    ``S(i) -> S(j)`` thus splits on ``j`` and concatenates on ``i``.  With
    ``i == j`` that exchanges sub-blocks (rank ``k`` gets chunk ``k`` of every
    rank's shard, in rank order): the token exchange of mixture-of-experts
    layers; it keeps the type but not the global order.  In the
    mixed cases the dims follow the tensor they describe: for ``V -> S(j)``,
    ``j`` and ``concat_dim`` are dims of the output (they must differ); for
    ``S(i) -> V``, ``i`` and ``split_dim`` are dims of the input (they must
    differ).

    Uneven pieces (the token exchange of a mixture-of-experts layer, where
    each rank sends each expert's rank as many tokens as were routed there):
    with ``src=S(i)`` and ``dst=S(i)``, ``split_sizes`` lists the lengths
    along ``i`` of the consecutive pieces this rank sends to ranks 0, 1, ...,
    and ``out_split_sizes`` the lengths of the pieces it receives from them,
    which are the senders' ``split_sizes`` entries for this rank.  Left out,
    ``out_split_sizes`` is found by exchanging the sizes first (one
    all-to-all of ``n`` int64 counts and a copy to the host, which also
    breaks a ``torch.compile`` graph).  Sizes per rank ``[to rank 0, 1, 2]``::

        [a0 | a1 a2 | ]      split_sizes [1, 2, 0]       [a0 | | c0 c1]
        [ | b0 | b1]     =>  split_sizes [0, 1, 1]   =>  [a1 a2 | b0 | ]
        [c0 c1 | | c2]       split_sizes [2, 0, 1]       [ | b1 | c2]

    On real ranks the sizes are ints; under ``LocalTensorMode`` they may be
    per-rank ``SymInt``, such as ``counts.tolist()`` gives.

    Args:
        x: the local tensor; any layout.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        src: the type of ``x`` on ``axis``.
        dst: the type of the result on ``axis``.
        split_dim: the dim unbound for ``dst=V`` (may be given only as ``j`` for ``dst=S(j)``).
        concat_dim: the dim stacked for ``src=V`` (may be given only as ``i`` for ``src=S(i)``).
        split_sizes: uneven pieces (``src=S(i)``, ``dst=S(i)`` only): the
            length along ``i`` of the piece this rank sends to each rank;
            they add up to ``x.shape[i]``.
        out_split_sizes: with ``split_sizes``: the length of the piece this
            rank receives from each rank (default: exchanged).  The result's
            dim ``i`` has their sum.
        comm_dtype: the dtype the exchange runs in.  Default: ``x``'s dtype.
        out_dtype: the result's dtype.  Default: ``x``'s dtype.
        grad_comm_dtype: the dtype the backward's exchange runs in.  Default:
            the gradient's own; it comes back in ``x``'s dtype.  See
            [Mixed precision](precision.md).

    **Backward**, per rank: the exchange with the roles swapped, ``split_dim``
    and ``concat_dim`` trading places.  ``V -> V``::

        [G0a, G1a, G2a]      [G0a, G0b, G0c]
        [G0b, G1b, G2b]  <=  [G1a, G1b, G1c]
        [G0c, G1c, G2c]      [G2a, G2b, G2c]

    With uneven pieces the backward is the transposed exchange:
    ``split_sizes`` and ``out_split_sizes`` swapped, which sends every
    gradient row back to the rank its token came from.

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        src   dst   forward                   backward
        V     V     all_to_all(V -> V)        all_to_all(V -> V)
                    (all-to-all)              (all-to-all)
        V     S(i)  all_to_all(V -> S(i))     all_to_all(S(i) -> V)
                    (all-to-all)              (all-to-all)
        S(i)  V     all_to_all(S(i) -> V)     all_to_all(V -> S(i))
                    (all-to-all)              (all-to-all)
        S(i)  S(i)  all_to_all(S(i) -> S(i))  all_to_all(S(i) -> S(i))
                    (all-to-all)              (all-to-all)
        S(i)  S(j)  all_to_all(S(i) -> S(j))  all_to_all(S(j) -> S(i))
                    (all-to-all)              (all-to-all)
    """
    x = check_tensor("all_to_all", x)
    group = resolve_axis(axis)
    steps = plan("all_to_all", src, dst, group)
    ndim = x.dim()
    src_v = not isinstance(src, Shard)
    dst_v = not isinstance(dst, Shard)
    out_ndim = ndim + src_v - dst_v
    if isinstance(src, Shard):
        a = check_dim(src.dim, ndim, "src=S(dim)")
        _agree("all_to_all", "concat_dim", concat_dim, a, ndim, src)
    else:
        a = 0 if concat_dim is None else check_dim(concat_dim, out_ndim, "concat_dim")
    if isinstance(dst, Shard):
        b = check_dim(dst.dim, out_ndim, "dst=S(dim)")
        _agree("all_to_all", "split_dim", split_dim, b, out_ndim, dst)
    else:
        b = 0 if split_dim is None else check_dim(split_dim, ndim, "split_dim")
    if src_v != dst_v and a == b:
        which = ("concat_dim", "output", "dst") if src_v else ("split_dim", "input", "src")
        raise CollectiveArgumentError(
            f"all_to_all {src.code} -> {dst.code}: {which[0]} and the shard dim are both dim {a} of the "
            f"{which[1]}; pass {which[0]}= a different dim (or shard another dim in {which[2]}=)"
        )
    dtypes = precision("all_to_all", x, comm_dtype, out_dtype, grad_comm_dtype)
    if split_sizes is None and out_split_sizes is None:
        return run(steps, x, group, a, b, precision=dtypes)
    sends, gets = _piece_sizes(x, group, src, dst, split_sizes, out_split_sizes)
    return run(steps, x, group, a, b, (sends, gets), (gets, sends), dtypes)


def _piece_sizes(
    x: torch.Tensor,
    group: Group,
    src: Endpoint,
    dst: Endpoint,
    split_sizes: Sequence[int] | None,
    out_split_sizes: Sequence[int] | None,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """An uneven all_to_all's sizes, checked: what this rank sends to each rank, and receives from each."""
    if not (isinstance(src, Shard) and src == dst):
        raise CollectiveArgumentError(
            f"all_to_all: split_sizes= and out_split_sizes= cut pieces of uneven length along one dim, so they "
            f"need src=S(i) and dst=S(i) with the same i (the token exchange of a mixture-of-experts layer), "
            f"got src={src.code}, dst={dst.code}"
        )
    if split_sizes is None:
        raise CollectiveArgumentError(
            "all_to_all: out_split_sizes= needs split_sizes=, the lengths of the pieces this rank sends"
        )
    dim = check_dim(src.dim, x.dim(), "src=S(dim)")
    sends = size_list(split_sizes, group, "all_to_all", "split_sizes", per_rank=True)
    mode = simulated()
    local = local_tensors(x)
    if mode is None:
        need_sizes(sends, x.shape[dim], dim, "all_to_all")
    elif local is not None:
        for rank, t in local.items():
            need_sizes(tuple(rank_values(s, (rank,))[rank] for s in sends), t.shape[dim], dim,
                       f"all_to_all on rank {rank}")
    if out_split_sizes is None:
        return sends, _exchanged(sends, group, x.device, mode)
    gets = size_list(out_split_sizes, group, "all_to_all", "out_split_sizes", per_rank=True)
    check_exchange_sizes("all_to_all", group, sends, gets, x.device)
    return sends, gets


def _exchanged(sends: tuple[int, ...], group: Group, device: torch.device, mode: Any) -> tuple[int, ...]:
    """What every rank sends this one: the senders' sizes, by one all-to-all of the counts."""
    if mode is None:
        counts = torch.tensor(sends, dtype=torch.int64, device=device)
    else:
        values = [rank_values(s, mode.ranks) for s in sends]
        counts = mode.rank_map(lambda r: torch.tensor([v[r] for v in values], dtype=torch.int64, device=device))
    ones = [1] * group.size
    return tuple(_comm.all_to_all(counts, group, ones, ones).tolist())


# -- ppermute ----------------------------------------------------------------------


@collective("ppermute")
def ppermute(x: torch.Tensor, axis: AxisLike, perm: Iterable[tuple[int, int]]) -> torch.Tensor:
    """``ppermute(x: V, axis, perm) -> V``

    Point-to-point exchange along a permutation of the axis (as in JAX):
    ``perm`` lists ``(source index, destination index)`` pairs; the source
    sends its whole tensor to the destination.  A rank that receives nothing
    gets zeros.  A ring shift by one on three ranks,
    ``perm=[(0, 1), (1, 2), (2, 0)]``::

        A      C
        B  =>  A
        C      B

    Every rank's ``x`` must have the same shape and dtype.  It runs as one
    all-to-all in which each rank's only non-empty piece goes to its
    destination (NCCL and gloo turn that into point-to-point transfers).

    Args:
        x: the local tensor; any layout.
        axis: mesh-axis name, tuple of names (one call over their
            flattened group; see [several axes](uneven-and-multi-axis.md)),
            process group or 1-D mesh.
        perm: ``(source, destination)`` pairs, in any iterable (a list, a
            tuple, a generator: it is read once); no index may appear twice
            as a source or twice as a destination.

    **Backward**, per rank: along the inverse permutation, each rank sends the
    gradient of what it received back to the rank it came from; a rank whose
    tensor went nowhere gets a zero gradient::

        G1      G0
        G2  <=  G1
        G0      G2

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        src  dst  forward                    backward
        V    V    ppermute(V -> V)           ppermute(V -> V)
                  (point-to-point exchange)  (point-to-point exchange)
    """
    x = check_tensor("ppermute", x)
    group = resolve_axis(axis)
    steps = plan("ppermute", V, V, group)
    if not isinstance(perm, Iterable):
        raise CollectiveArgumentError(
            f"ppermute: perm must be an iterable of (source, destination) pairs, got {perm!r}; "
            f"e.g. [(k, (k + 1) % n) for k in range(n)] for a ring shift"
        )
    pairs = tuple(perm)  # read once: a generator has nothing left for a second pass
    key = (group.size, *pairs)
    try:
        plans = _PERMUTATIONS.get(key)
        hashable = True
    except TypeError:  # unhashable pairs: validated (and rejected) below
        plans, hashable = None, False
    if plans is None:
        plans = permutation(pairs, group.size)
        if hashable and not torch.compiler.is_compiling() and len(_PERMUTATIONS) < 1024:
            _PERMUTATIONS[key] = plans
    return run(steps, x, group, 0, 0, plans[0], plans[1])


# Validated permutations by (axis size, *pairs): a training step repeats the same few.
_PERMUTATIONS: dict[tuple[object, ...], tuple[Permutation, Permutation]] = {}


# -- redistribute ------------------------------------------------------------------


@collective("redistribute")
def redistribute(
    x: torch.Tensor,
    axis: AxisLike,
    *,
    src: Endpoint,
    dst: Endpoint,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``redistribute(x: src, axis, *, src: R | I | V | P | S(i), dst: R | I | V | P | S(i)) -> dst``

    Changes the type on ``axis`` while keeping the global value, with
    whatever communication that takes: it runs the call that makes the
    change, forward and backward, as the table below lists.  A ``V`` end
    means "one entry per rank along dim 0" (the dim that ``all_gather``
    stacks on and ``convert`` takes from).

    ``comm_dtype``, ``out_dtype`` and ``grad_comm_dtype`` apply to the call it
    routes to, as they do there ([Mixed precision](precision.md)); a route
    without communication applies only ``out_dtype``.

    Accepted types, from the rule core (rewritten by ``make generated-docs``)::

        runs            src -> dst
        nothing         R -> R, I -> I, V -> V, V -> S(i), P -> P, S(i) -> V, S(i) -> S(i)
        reinterpret     R -> I, I -> R
        convert         R -> V, R -> P, R -> S(i), I -> V, I -> P, I -> S(i), V -> P, S(i) -> P
        all_gather      V -> R, V -> I, S(i) -> R, S(i) -> I
        all_reduce      P -> R, P -> I
        reduce_scatter  P -> V, P -> S(i)
        all_to_all      S(i) -> S(j)
    """
    x = check_tensor("redistribute", x)
    group = resolve_axis(axis)
    steps = plan("redistribute", src, dst, group)
    if src is P and dst is not P:
        _summable("redistribute", x, group)
    ndim = x.dim()
    a = check_dim(src.dim, ndim, "src=S(dim)") if isinstance(src, Shard) else 0
    b = check_dim(dst.dim, ndim, "dst=S(dim)") if isinstance(dst, Shard) else 0
    return run(steps, x, group, a, b, precision=precision("redistribute", x, comm_dtype, out_dtype, grad_comm_dtype))
