"""``redistribute_spec``: a tensor from one :class:`PartitionSpec` to another, by the planner's collectives."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import torch

from spmd_types._collectives import all_gather, all_reduce, all_to_all, ppermute, reduce_scatter
from spmd_types._errors import CollectiveArgumentError, NoCurrentMeshError
from spmd_types._local import convert
from spmd_types._mesh import current_mesh
from spmd_types._prims import check_tensor
from spmd_types.typesystem import MeshAxes, PartitionSpec, Plan, Reorder, Step, global_shape, plan_redistribute

__all__ = ["redistribute_spec"]

_CALLS: dict[str, Callable[..., torch.Tensor]] = {
    "all_reduce": all_reduce,
    "reduce_scatter": reduce_scatter,
    "all_gather": all_gather,
    "all_to_all": all_to_all,
    "convert": convert,
}


def redistribute_spec(x: torch.Tensor, src: PartitionSpec, dst: PartitionSpec) -> torch.Tensor:
    """``redistribute_spec(x, src: PartitionSpec, dst: PartitionSpec) -> dst``

    Takes ``x``, the local tensor of a global tensor laid out as ``src``,
    to the local tensor of the same global tensor laid out as ``dst``,
    with the collectives the planner picks
    (:func:`~spmd_types.typesystem.plan_redistribute`): the fewest elements
    sent per rank, then the fewest collectives.  Axes that do the same thing
    to the same dim are fused into one collective on their flattened group
    (a pending sum over ``dp`` and ``tp`` is one all-reduce), and any axis of
    a multi-axis or strided entry can move (local reorders of blocks sort the
    pieces).  The axis names are those of the current mesh
    (``set_current_mesh``), as for every call.  For example, on a 2x2 mesh
    ``("dp", "tp")``, ranks ``(dp, tp)`` in rows, ``f32[4@(dp,tp)]`` to
    ``f32[4@(tp,dp)]`` is one ppermute over ``(dp, tp)``; a pending sum over
    both axes to ``f32[4@(dp,tp)]`` is one reduce-scatter::

        (0,0)  [A]      [A]             +[A0, A1, A2, A3]      [A0 + B0 + C0 + D0]
        (0,1)  [B]  =>  [C]             +[B0, B1, B2, B3]  =>  [A1 + B1 + C1 + D1]
        (1,0)  [C]      [B]             +[C0, C1, C2, C3]      [A2 + B2 + C2 + D2]
        (1,1)  [D]      [D]             +[D0, D1, D2, D3]      [A3 + B3 + C3 + D3]

    Args:
        x: the local tensor; its shape is the global shape cut by ``src``'s
            axes (a dim sharded by ``dp`` and ``tp`` is ``1 / (dp size *
            tp size)`` of the global dim).
        src: how ``x`` is laid out: a :class:`PartitionSpec` with one entry
            per dim, its partial axes holding summands.  On every other mesh
            axis ``x`` is replicated (``R``).
        dst: the layout wanted.  Every dim must be cut evenly by both specs.

    Returns:
        The local tensor of type ``dst`` (per axis: ``S(i)``, ``P`` or ``R``).

    **Backward:** each step's backward in reverse order, which is the
    collectives table's backward of its call (an all-gather's is a
    reduce-scatter, a slice's is zero padding, and so on), the reorders undone
    by autograd: a redistribution from the gradient spec of ``dst`` to that
    of ``src`` (``R`` and ``P`` swapped, shards kept), sending as many
    elements as the forward.  For the ppermute above, the gradient ``GX``
    of block ``X`` goes back to the rank ``X`` came from::

        (0,0)  [GA]      [GA]
        (0,1)  [GB]  <=  [GC]
        (1,0)  [GC]      [GB]
        (1,1)  [GD]      [GD]

    and the reduce-scatter's backward is an all-gather over ``(dp, tp)``.
    """
    x = check_tensor("redistribute_spec", x)
    for name, spec in (("src", src), ("dst", dst)):
        if not isinstance(spec, PartitionSpec):
            raise CollectiveArgumentError(
                f"redistribute_spec: {name} must be a PartitionSpec, got {type(spec).__name__}; "
                f'e.g. PartitionSpec("dp", None) for a 2-D tensor sharded over dp along dim 0'
            )
    mesh = current_mesh()
    if mesh is None:
        raise NoCurrentMeshError(
            "redistribute_spec names mesh axes in its specs, but no mesh is current; wrap the code in "
            "`with spmd_types.set_current_mesh(device_mesh):`"
        )
    axes = tuple(zip(mesh.mesh_dim_names or (), mesh.shape))
    try:
        plan = _plan(axes, global_shape(src, tuple(x.shape), axes), src, dst)
    except (TypeError, ValueError) as error:
        raise CollectiveArgumentError(f"redistribute_spec: {error}") from error
    for step in plan.steps:
        x = _run(x, step)
    return x


@lru_cache(maxsize=512)
def _plan(axes: MeshAxes, shape: tuple[int, ...], src: PartitionSpec, dst: PartitionSpec) -> Plan:
    return plan_redistribute(axes, shape, src, dst)


def _run(x: torch.Tensor, step: Step) -> torch.Tensor:
    """One step of a plan: the reorder before, the call, the reorder after."""
    if step.before is not None:
        x = _reorder(x, step.before)
    axis: Any = step.axes[0] if len(step.axes) == 1 else step.axes
    if step.call == "ppermute":
        x = ppermute(x, axis, step.pairs)
    else:
        x = _CALLS[step.call](x, axis, src=step.src, dst=step.dst)
    if step.after is not None:
        x = _reorder(x, step.after)
    return x


def _reorder(x: torch.Tensor, blocks: Reorder) -> torch.Tensor:
    """``x`` with the blocks of one dim permuted (:class:`~spmd_types.typesystem.layout.Reorder`).

    A local op, the same on every rank: linear, so it keeps every axis's
    type, and its gradient is the inverse permutation (autograd's).
    """
    n = len(blocks.sizes)
    split = torch.unflatten(x, blocks.dim, blocks.sizes)
    order = [*range(blocks.dim), *(blocks.dim + o for o in blocks.order), *range(blocks.dim + n, split.dim())]
    return split.permute(order).flatten(blocks.dim, blocks.dim + n - 1)
