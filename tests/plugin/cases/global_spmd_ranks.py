"""@global_spmd after ops: an op's result has a known rank where its operands' ranks and literal arguments say it.

The einsum reading of a contraction or a broadcasting op needs every operand's rank; a PartitionSpec
declares it, and each op passes it on (transpose, elementwise ops, matmul, sums over literal dims, view
with literal sizes, indexing with literal indices).  So a mistake several ops after the parameters is
reported where it is made, instead of the value turning gradual (V).
"""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

import spmd_types as spmd
from spmd_types import P, PartitionSpec, R, all_reduce, global_spmd


@global_spmd
def held_whole_two_ops_later(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Tensor:
    h = w.transpose(0, 1)  # OK: f32[i@tp, o]
    g = h * 2.0  # OK
    return x @ g  # E: [spmd-global] @ on axis 'tp': operand 1 (input) is cut on 'tp' along dim 'k'


@global_spmd
def bias_held_whole_after_matmul(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]],
    w: Annotated[Tensor, PartitionSpec("tp", None)],
    b: Annotated[Tensor, PartitionSpec(None), R["tp"]],
) -> Tensor:
    y = x @ w.T  # OK: f32[b@dp, o@tp]
    return y + b  # E: [spmd-global] holds whole


@global_spmd
def column_parallel_chain(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]],
    w: Annotated[Tensor, PartitionSpec("tp", None)],
    b: Annotated[Tensor, PartitionSpec("tp")],
) -> Annotated[Tensor, PartitionSpec("dp", "tp")]:
    y = x @ torch.relu(w).T  # OK
    z = y.unsqueeze(0).sum(0)  # OK: back to rank 2
    return F.gelu(z + b)  # OK: the bias is cut like the features


@global_spmd
def reshaped_then_contracted(
    x: Annotated[Tensor, PartitionSpec("dp", None, "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None), R["tp"]]:
    h = x[:, 0, :]  # OK: f32[b@dp, k@tp]
    y = spmd.matmul(h, w.transpose(0, 1), out_partial_axes="tp")  # OK: the pending sum is written
    v = y.view(-1)  # OK: rank 1 now
    return all_reduce(v.view(4, -1), "tp", src=P, dst=R)  # OK


@global_spmd
def cut_along_different_dims_after_ops(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec("tp", None)]
) -> Tensor:
    h = w.T * 1.0  # OK: f32[k, o@tp]
    return x @ h  # E: [spmd-global] cut on 'tp' along different dims
