"""Everyday Python around SPMD tensors: dataclasses, tuples, Optional, dicts, decorators, subclasses.

Correct code in the style of real training code, not written for the checker: the plugin must
report nothing here (each false positive it once gave is a regression test).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Final, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from spmd_types import R, V, all_to_all

EP: Final = "ep"
TP: Final = "tp"

Tokens = Annotated[Tensor, V["ep"]]


@dataclass
class Batch:
    tokens: Annotated[Tensor, V["ep"]]
    weights: Annotated[Tensor, V["ep"]]


def split_heads(x: Annotated[Tensor, V["tp"]], n: int) -> tuple[Annotated[Tensor, V["tp"]], Annotated[Tensor, V["tp"]]]:
    a, b = torch.split(x, n, dim=-1)
    return a, b


class Router(nn.Module):
    def __init__(self, d: int, e: int) -> None:
        super().__init__()
        self.gate: Annotated[nn.Parameter, R["ep"]] = nn.Parameter(torch.empty(e, d))

    def forward(self, x: Annotated[Tensor, V["ep"]]) -> tuple[Annotated[Tensor, V["ep"]], Annotated[Tensor, V["ep"]]]:
        scores = F.softmax(F.linear(x, self.gate), dim=-1)
        w, idx = torch.topk(scores, 2, dim=-1)
        return w, idx


@torch.no_grad()
def count_tokens(idx: Annotated[Tensor, V["ep"]], e: int) -> Annotated[Tensor, V["ep"]]:
    return torch.bincount(idx.flatten(), minlength=e)


def combine(batch: Batch, expert_out: Annotated[Tensor, V["ep"]]) -> Annotated[Tensor, V["ep"]]:
    out = expert_out * batch.weights.unsqueeze(-1)
    parts = [out[i] for i in range(out.shape[0])]
    return torch.stack(parts).sum(0)


def heads(x: Annotated[Tensor, V["tp"]], w: Optional[Annotated[Tensor, R["tp"]]] = None) -> Annotated[Tensor, V["tp"]]:
    a, b = split_heads(x, 4)
    y = a * torch.sigmoid(b)
    if w is not None:
        y = y * w
    outs: dict[str, Annotated[Tensor, V["tp"]]] = {"y": y}
    return outs["y"]


def rotate(x: Annotated[Tensor, V["ep"]]) -> Annotated[Tensor, V["ep"]]:
    x = all_to_all(x, EP, src=V, dst=V)
    x = x.reshape(2, -1).transpose(0, 1).contiguous()
    x = all_to_all(x, EP, src=V, dst=V)
    return x


class Expert(nn.Module):
    w: Annotated[nn.Parameter, V["ep"]]

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.empty(d, d))

    def forward(self, x: Annotated[Tensor, V["ep"]]) -> Annotated[Tensor, V["ep"]]:
        return torch.relu(x @ self.w)


class Shared(Expert):
    def forward(self, x: Annotated[Tensor, V["ep"]]) -> Annotated[Tensor, V["ep"]]:
        y = super().forward(x)
        return y + x
