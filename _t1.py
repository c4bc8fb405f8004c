from typing import Annotated

import torch
from torch import Tensor

import spmd_types as spmd
from spmd_types import PartitionSpec, R, global_spmd


@global_spmd
def chain_contracts_cut_dim(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Tensor:
    wt = w.transpose(0, 1)
    h = wt * 2.0
    return x @ h


@global_spmd
def chain_ok(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]], w: Annotated[Tensor, PartitionSpec("tp", None)]
) -> Annotated[Tensor, PartitionSpec("dp", "tp")]:
    h = torch.relu(w).T
    return x @ h


@global_spmd
def held_whole(
    x: Annotated[Tensor, PartitionSpec("dp", None), R["tp"]], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Tensor:
    return x @ w.T
