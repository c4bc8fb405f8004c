"""One op on the same operand types at places whose facts differ: each place is checked by its own facts.

The plugin remembers what an op on given operand types found where it reported nothing
(``spmd_mypy.ops``); a place that runs without autograd, or in a global_spmd function, is
checked by rules of its own, which another place's remembered outcome must not stand in for.
Each pair checks the place that accepts more first.
"""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import I, P, PartitionSpec, R, V, global_spmd, reinterpret


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
