"""Where a shard's dim goes through an op: a shard on another dim does not fit S(i).

A transposed shard used to be V, which fits every S(j): returning it as S(0) or gathering it with
src=S(0) passed.  Where the rank decides the answer, the result is V (gradual) and fits.
"""
from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import R, S, Spmd, all_gather, all_to_all

S0 = Spmd[Tensor, Literal["tp:S(0)"]]


def transposed_returned(x: S0) -> S0:
    return x.transpose(0, 1)  # E: [spmd-boundary] expected S(0), got S(1)


def transposed_gathered(x: S0) -> Annotated[Tensor, R["tp"]]:
    return all_gather(x.transpose(0, 1), "tp", src=S(0), dst=R)  # E: [spmd-collective] the input is S(1)


def takes_rows(x: S0) -> None: ...


def transposed_passed(x: S0) -> None:
    takes_rows(x.permute(1, 0))  # E: [spmd-boundary] expected S(0), got S(1)
    takes_rows(x.unsqueeze(0))  # E: [spmd-boundary] expected S(0), got S(1)


def moved_back(x: S0) -> S0:
    return x.transpose(0, 1).exp().transpose(0, 1)  # OK


def reversed_dims(x: S0) -> Annotated[Tensor, S["tp", -1]]:
    return x.T  # OK: S(0) is the last dim after .T, at every rank


def outer_factor(x: S0) -> S0:
    return x.flatten(0, 1) * 2.0  # OK: the sharded dim is the outer factor of the merge


def reduced_elsewhere(x: S0) -> S0:
    return F.gelu(x).sum(dim=1)  # OK


def concatenated_elsewhere(x: S0, y: S0) -> S0:
    return torch.cat([x, y], dim=1)  # OK


def contracted(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, R["tp"]]) -> S0:
    return torch.einsum("bsh,hd->sbd", x, w)  # OK: the sharded s is the output's dim 0


def indexed(x: S0) -> Annotated[Tensor, S["tp", 1]]:
    return x[None]  # OK


def resharded(x: S0) -> Annotated[Tensor, S["tp", 1]]:
    return all_to_all(x.transpose(0, 1), "tp", src=S(1), dst=S(1))  # OK


def rank_decides(x: Annotated[Tensor, S["tp", -1]]) -> S0:
    reveal_type(x.transpose(0, 1))  # N: SpmdTensor[Literal['tp:V']]
    return x.transpose(0, 1)  # OK: V (the rank decides), which fits like Any


def written_two_ways(x: Annotated[Tensor, S["tp", -1]]) -> Annotated[Tensor, S["tp", 2]]:
    return x  # OK: S(-1) is S(2) in a 3-D tensor; without the rank both may hold
