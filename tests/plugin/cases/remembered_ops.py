"""One op on the same operand types at places whose facts differ: each place is checked by its own facts.

The plugin remembers what an op on given operand types found where it reported nothing
(``spmd_mypy.ops``); a place that runs without autograd, or in a global_spmd function, is
checked by rules of its own, which another place's remembered outcome must not stand in for; so
is a local_region, whose axes are local inside a global program; and a constant whose buffer is
written in place later holds what is written into it, not the constant.
Each pair checks the place that accepts more first.
"""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import I, P, PartitionSpec, R, V, all_reduce, global_spmd, local_region, reinterpret


def without_autograd_first(i: Annotated[Tensor, I["tp"]], v: Annotated[Tensor, V["tp"]],
                           r: Annotated[Tensor, R["tp"]]) -> None:
    with torch.no_grad():
        reveal_type(i * v)  # N: SpmdTensor[Literal['tp:V']]
        reveal_type(r * 2)  # N: SpmdTensor[Any]
    reveal_type(i * v)  # E: [spmd-mix] * on axis 'tp': I does not mix with V # N: SpmdTensor[Any]
    reveal_type(r * 2)  # N: SpmdTensor[Literal['tp:R']]


def local_first(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # OK: local SPMD, each rank's product
    return reinterpret(y, "tp", src=V, dst=P)  # OK


@global_spmd
def global_after(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # E: [spmd-global] torch.nn.functional.linear on axis 'tp': dim 'k' is summed over

    return reinterpret(y, "tp", src=V, dst=P)  # E: [spmd-global] only the shard-preserving variants


@local_region("tp", in_specs=(PartitionSpec("dp", "tp"), PartitionSpec(None, "tp")),
              out_specs=PartitionSpec("dp", None, partial="tp"))
def region_first(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, V["tp"]]:
    return F.linear(x, w)  # OK: local on tp inside the region


@global_spmd
def global_after_region(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # E: [spmd-global] torch.nn.functional.linear on axis 'tp': dim 'k' is summed over

    return reinterpret(y, "tp", src=V, dst=P)  # E: [spmd-global] only the shard-preserving variants


def zeros_of_a_parameter_size_first(p: Annotated[Tensor, P["tp"]], n: int) -> Annotated[Tensor, R["tp"]]:
    z = torch.zeros(n)  # the same zeros on every rank: adds nothing to a pending sum
    return all_reduce(p + z, "tp", src=P, dst=R)  # OK


def zeros_of_a_parameter_size_written_later(v: Annotated[Tensor, V["tp"]], n: int) -> None:
    acc = torch.zeros(n)  # a buffer: what it holds is what is written into it
    acc.add_(v)  # OK
