"""torchtitan-style: FSDP over dp, TP over tp, a loop over layers, DP loss averaging.

Correct code in the style of real training code, not written for the checker: the plugin must
report nothing here (each false positive it once gave is a regression test).
"""
from __future__ import annotations

from typing import Annotated, Final, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from spmd_types import I, P, R, S, V, all_gather, all_reduce, convert, reinterpret

DP: Final = "dp"
TP: Final = "tp"


class FSDPLinear(nn.Module):
    weight: Annotated[nn.Parameter, S["dp", 0], S["tp", 0]]
    bias: Optional[Annotated[nn.Parameter, S["dp", 0], S["tp", 0]]]

    def __init__(self, n: int, m: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, m))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x: Annotated[Tensor, V["dp"], R["tp"]]) -> Annotated[Tensor, V["dp"], V["tp"]]:
        w = all_gather(self.weight, DP, src=S(0), dst=R)
        out = F.linear(x, w)
        if self.bias is not None:
            b = all_gather(self.bias, DP, src=S(0), dst=R)
            out = out + b
        return out


class RowFSDPLinear(nn.Module):
    weight: Annotated[nn.Parameter, S["dp", 0], S["tp", 1]]

    def __init__(self, n: int, m: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, m))

    def forward(self, x: Annotated[Tensor, V["dp"], V["tp"]]) -> Annotated[Tensor, V["dp"], R["tp"]]:
        w = all_gather(self.weight, DP, src=S(0), dst=R)
        partial = reinterpret(F.linear(x, w), TP, src=V, dst=P)
        return all_reduce(partial, TP, src=P, dst=R)


class Layer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.up = FSDPLinear(4 * d, d)
        self.down = RowFSDPLinear(d, 4 * d)

    def forward(self, x: Annotated[Tensor, V["dp"], R["tp"]]) -> Annotated[Tensor, V["dp"], R["tp"]]:
        return x + self.down(F.silu(self.up(x)))


class Model(nn.Module):
    def __init__(self, d: int, n_layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(d) for _ in range(n_layers)])

    def forward(self, x: Annotated[Tensor, V["dp"], I["tp"]]) -> Annotated[Tensor, V["dp"], R["tp"]]:
        h = convert(x, TP, src=I, dst=R)
        for layer in self.layers:
            h = layer(h)
        return h


def train_step(model: Model, x: Annotated[Tensor, V["dp"], I["tp"]],
               target: Annotated[Tensor, V["dp"], I["tp"]],
               n_tokens: Annotated[Tensor, V["dp"], R["tp"]]) -> float:
    out = model(x)
    local = F.mse_loss(out, convert(target, TP, src=I, dst=R), reduction="sum")
    global_tokens = all_reduce(n_tokens, DP, src=V, dst=R)
    loss = reinterpret(local / global_tokens, DP, src=V, dst=P)
    loss = convert(loss, TP, src=R, dst=I)
    loss.backward()
    with torch.no_grad():
        reported = all_reduce(loss.detach(), DP, src=P, dst=R)
    return reported.item()


def accumulate(model: Model, batches: list[Annotated[Tensor, V["dp"], I["tp"]]]) -> Annotated[Tensor, V["dp"], R["tp"]]:
    total = torch.zeros(())
    for b in batches:
        total = total + model(b).sum()
    return total
