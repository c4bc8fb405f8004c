"""torch's differentiable collectives are typed as the collectives they are (spmd_types.typesystem.ecosystem)."""
from typing import Annotated

import torch
import torch.distributed._functional_collectives as funcol
import torch.distributed.nn.functional as dist_nn
import torch.nn.functional as F
from torch import Tensor
from torch.distributed import ProcessGroup, ReduceOp

from spmd_types import I, P, R, S, V, Axis

def row_parallel(p: Annotated[Tensor, P["tp"]],
                 g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return dist_nn.all_reduce(p * 2, group=g)  # OK


def missing_reduction(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return p * 2  # E: [spmd-boundary] expected R, got P; fix: all_reduce(p * 2, "tp", src=P, dst=R)


def doubled_reduction(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    once = dist_nn.all_reduce(p, group=g)
    twice = dist_nn.all_reduce(once, group=g)  # E: [spmd-collective] dist_nn.all_reduce (that is, all_reduce(src=P, dst=R)) on axis 'tp': the input is R but all_reduce was told src=P; summing R data over the axis multiplies it by the axis size


def torch_backward_is_an_all_reduce(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, I["tp"]]:
    # Its backward all-reduces the gradient: all_reduce(src=P, dst=R), not dst=I.
    return dist_nn.all_reduce(p, group=g)  # E: [spmd-boundary] expected I, got R


def maximum_is_a_statistic(logits: Annotated[Tensor, V["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, V["tp"]]:
    # op=MAX is no sum: its result is a constant (no gradient), which V logits can be shifted by.
    top = dist_nn.all_reduce(logits.amax(dim=-1, keepdim=True), op=ReduceOp.MAX, group=g)
    return logits - top  # OK


def maximum_of_a_pending_sum(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    dist_nn.all_reduce(p, op=ReduceOp.MAX, group=g)  # E: [spmd-partial] dist_nn.all_reduce (that is, all_reduce(src=P, dst=R, op='max')) on axis 'tp': all_reduce with op='max' of a pending sum (P)


def unreadable_reduction(r: Annotated[Tensor, R["tp"]], g: Annotated[ProcessGroup, Axis["tp"]], op: ReduceOp) -> None:
    dist_nn.all_reduce(r, op=op, group=g)  # OK


def world_group_is_unknown_without_axes(r: Annotated[Tensor, R["tp"]]) -> None:
    dist_nn.all_reduce(r)  # OK


def gathered_tuple(v: Annotated[Tensor, V["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, R["tp"]]:
    parts = dist_nn.all_gather(v, group=g)
    reveal_type(parts)  # N: tuple[spmd_types._typed.SpmdTensor[Literal['tp:R']], ...]
    return torch.cat(parts)  # OK


def gathered_twice(v: Annotated[Tensor, V["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    parts = dist_nn.all_gather(v, group=g)
    dist_nn.all_gather(parts[0], group=g)  # E: [spmd-collective] dist_nn.all_gather (that is, all_gather(src=V, dst=R)) on axis 'tp': the input is R but all_gather was told src=V


def reduce_scatter_of_a_list(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, V["tp"]]:
    chunks = list(p.chunk(2))
    return dist_nn.reduce_scatter(torch.empty_like(chunks[0]), chunks, group=g)  # OK


def reduce_scatter_of_replicated_pieces(r: Annotated[Tensor, R["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    chunks = list(r.chunk(2))
    dist_nn.reduce_scatter(torch.empty_like(chunks[0]), chunks, group=g)  # E: [spmd-collective] dist_nn.reduce_scatter (that is, reduce_scatter(src=P, dst=V)) on axis 'tp': the input is R but reduce_scatter was told src=P


def exchange_chunks_of_dim_0(s: Annotated[Tensor, S["tp", 0]], g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, S["tp", 0]]:
    return dist_nn.all_to_all_single(torch.empty_like(s), s, group=g)  # OK


# -- torch.distributed._functional_collectives ----------------------------------------


def functional_row_parallel(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return funcol.all_reduce(p, "sum", g)  # OK


def functional_doubled_reduction(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    once = funcol.all_reduce(p, "sum", g)
    funcol.all_reduce(once, "sum", g)  # E: [spmd-collective] funcol.all_reduce (that is, all_reduce(src=P, dst=R)) on axis 'tp': the input is R


def functional_gather_dim(s1: Annotated[Tensor, S["tp", 1]], s0: Annotated[Tensor, S["tp", 0]], g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    funcol.all_gather_tensor(s1, 1, g)  # OK
    funcol.all_gather_single_autograd(s0, 1, g)  # E: [spmd-collective] funcol.all_gather_single_autograd (that is, all_gather(src=S(1), dst=R)) on axis 'tp': the input is S(0) but all_gather was told src=S(1)


def functional_scatter_dim(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, S["tp", 0]]:
    ok: Annotated[Tensor, S["tp", 1]] = funcol.reduce_scatter_tensor(p, "sum", 1, g)  # OK
    return funcol.reduce_scatter_tensor_autograd(p, "sum", 1, g)  # E: [spmd-boundary] expected S(0), got S(1)


def functional_gather_of_a_pending_sum(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    funcol.all_gather_tensor(p, 0, g)  # E: [spmd-collective] funcol.all_gather_tensor (that is, all_gather(src=S(0), dst=R)) on axis 'tp': the input is P
