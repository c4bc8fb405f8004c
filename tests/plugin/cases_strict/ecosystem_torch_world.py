"""torch's default group (group.WORLD) is every configured axis at once: here ("dp", "tp"), flattened."""
from typing import Annotated

import torch.distributed as dist
import torch.distributed.nn.functional as dist_nn
from torch import Tensor

from spmd_types import P, R


def loss_over_every_rank(loss: Annotated[Tensor, P["dp"], P["tp"]]) -> Annotated[Tensor, R["dp"], R["tp"]]:
    return dist_nn.all_reduce(loss)  # OK


def world_spelled_out(loss: Annotated[Tensor, P["dp"], P["tp"]]) -> Annotated[Tensor, R["dp"], R["tp"]]:
    return dist_nn.all_reduce(loss, group=dist.group.WORLD)  # OK


def summed_where_it_was_replicated(loss: Annotated[Tensor, R["dp"], P["tp"]]) -> None:
    dist_nn.all_reduce(loss)  # E: [spmd-collective] dist_nn.all_reduce (that is, all_reduce(src=P, dst=R)) on axis 'dp': the input is R but all_reduce was told src=P; summing R data over the axis multiplies it by the axis size
