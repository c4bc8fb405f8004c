"""@global_spmd: a function whose values stay global, checked with the global rules on top of the local ones.

A contraction over a sharded dim needs out_partial_axes (a pending sum is never implicit); an op on
shards must keep them; collectives and casts only in their shard-preserving variants; V has no
global meaning in a declaration.  The same code without the decorator is local SPMD, and accepted.
"""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

import spmd_types as spmd
from spmd_types import P, PartitionSpec, R, S, V, all_gather, all_reduce, global_spmd, reinterpret


@global_spmd
def row_parallel(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None)]:
    y = spmd.linear(x, w, out_partial_axes="tp")  # OK: the pending sum is written
    return all_reduce(y, "tp", src=P, dst=R)  # OK


@global_spmd
def implicit_partial(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # E: [spmd-global] torch.nn.functional.linear on axis 'tp': dim 'k' is summed over and cut on 'tp'

    return reinterpret(y, "tp", src=V, dst=P)  # E: [spmd-global] only the shard-preserving variants


def local_row_parallel(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # OK: local SPMD, each rank's product
    return reinterpret(y, "tp", src=V, dst=P)  # OK


@global_spmd
def column_parallel(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]], w: Annotated[Tensor, PartitionSpec("tp", None)]
) -> Annotated[Tensor, PartitionSpec("dp", "tp")]:
    return F.linear(x, w)  # OK: the output features are cut on tp


@global_spmd
def column_parallel_einsum(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]], w: Annotated[Tensor, PartitionSpec("tp", None)]
) -> Annotated[Tensor, PartitionSpec("dp", "tp")]:
    return torch.einsum("bi,oi->bo", x, w)  # OK


@global_spmd
def rank_known_through_the_transpose(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]], w: Annotated[Tensor, PartitionSpec("tp", None)]
) -> Annotated[Tensor, PartitionSpec("dp", "tp")]:
    return x @ w.T  # OK: w.T has w's rank, 2, so its cut dim is the output features


@global_spmd
def contracted_without_ranks(
    x: Annotated[Tensor, S["tp", -1]], w: Annotated[Tensor, S["tp", 0]]
) -> Annotated[Tensor, P["tp"]]:
    return x @ w  # E: [spmd-global] a dim cut on 'tp' is summed over, so no rank holds a piece of the global result


@global_spmd
def einsum_contracts_a_shard(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    return torch.einsum("bi,oi->bo", x, w)  # E: [spmd-global] dim 'i' is summed over and cut on 'tp'


@global_spmd
def einsum_operand_held_whole(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, None), R["tp"]]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    return spmd.einsum("bi,oi->bo", x, w, out_partial_axes="tp")  # E: [spmd-global] holds whole


@global_spmd
def summed_over_shards(x: Annotated[Tensor, PartitionSpec(None, "tp")]) -> Annotated[Tensor, PartitionSpec(None, partial="tp")]:
    return x.sum(1)  # E: [spmd-global] write spmd_types.sum(..., out_partial_axes="tp")


@global_spmd
def summed_explicitly(x: Annotated[Tensor, PartitionSpec(None, "tp")]) -> Annotated[Tensor, PartitionSpec(None, partial="tp")]:
    return spmd.sum(x, 1, out_partial_axes="tp")  # OK


@global_spmd
def along_the_shard(x: Annotated[Tensor, PartitionSpec(None, "tp")]) -> Annotated[Tensor, PartitionSpec(None, "tp")]:
    return torch.softmax(x, dim=1)  # E: [spmd-global] no longer a partition of the global result


@global_spmd
def bias_held_whole(
    x: Annotated[Tensor, PartitionSpec(None, "tp")], b: Annotated[Tensor, PartitionSpec(None), R["tp"]]
) -> Annotated[Tensor, PartitionSpec(None, "tp")]:
    return x + b  # E: [spmd-global] holds whole


@global_spmd
def gathered(x: Annotated[Tensor, PartitionSpec(None, "tp")]) -> Annotated[Tensor, PartitionSpec(None, None), R["tp"]]:
    return all_gather(x, "tp", src=S(1), dst=R)  # OK


# The result is left untyped: the fix tester's reference, the function's own run on one rank, stacks the
# pieces as the bug does (examples/bugs/global_row_parallel_gather_as_varying.py runs the fix against one device).
@global_spmd
def gathered_as_varying(x: Annotated[Tensor, PartitionSpec(None, "tp")]) -> Tensor:
    return all_gather(x, "tp", src=V, dst=R)  # E: [spmd-global] only the shard-preserving variants


@global_spmd  # E: [spmd-global] parameter "x" of a global_spmd function on axis 'tp': V has no meaning
def declared_varying(x: Annotated[Tensor, V["tp"]]) -> None: ...
