"""Context-parallel ring attention written torchtitan-style, with online softmax.

Correct code in the style of real training code, not written for the checker: the plugin must
report nothing here (each false positive it once gave is a regression test).
"""
from __future__ import annotations

from typing import Annotated, Final

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from spmd_types import P, R, S, V, all_gather, all_reduce, ppermute, reinterpret

CP: Final = "cp"


def ring_attention(
    q: Annotated[Tensor, S["cp", 2]], k: Annotated[Tensor, S["cp", 2]], v: Annotated[Tensor, S["cp", 2]], n: int
) -> Annotated[Tensor, S["cp", 2]]:
    scale = q.shape[-1] ** -0.5
    out = torch.zeros_like(q)
    lse = torch.full(q.shape[:-1], float("-inf"))
    perm = [(i, (i + 1) % n) for i in range(n)]
    for step in range(n):
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) * scale
        block_lse = torch.logsumexp(s, dim=-1)
        new_lse = torch.logaddexp(lse, block_lse)
        out = out * torch.exp(lse - new_lse).unsqueeze(-1) + torch.einsum(
            "bhqk,bhkd->bhqd", torch.exp(s - new_lse.unsqueeze(-1)), v)
        lse = new_lse
        if step < n - 1:
            k = ppermute(k, CP, perm)
            v = ppermute(v, CP, perm)
    return out


class CPAttention(nn.Module):
    wq: Annotated[nn.Parameter, R["cp"]]
    wo: Annotated[nn.Parameter, R["cp"]]

    def __init__(self, d: int) -> None:
        super().__init__()
        self.wq = nn.Parameter(torch.empty(d, d))
        self.wo = nn.Parameter(torch.empty(d, d))

    def forward(self, x: Annotated[Tensor, S["cp", 1]]) -> Annotated[Tensor, S["cp", 1]]:
        b, s, d = x.shape
        q = (x @ self.wq).view(b, s, 4, d // 4).transpose(1, 2)
        o = ring_attention(q, q, q, 4)
        return o.transpose(1, 2).reshape(b, s, d) @ self.wo


def cp_loss(logits: Annotated[Tensor, S["cp", 1]], labels: Annotated[Tensor, S["cp", 1]],
            total_tokens: int) -> Annotated[Tensor, P["cp"]]:
    local = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum")
    return reinterpret(local / total_tokens, CP, src=V, dst=P)


def zero3_linear(x: Annotated[Tensor, V["dp"]], w_shard: Annotated[Tensor, S["dp", 0]],
                 b_shard: Annotated[Tensor, S["dp", 0]]) -> Annotated[Tensor, V["dp"]]:
    w = all_gather(w_shard, "dp", src=S(0), dst=R)
    b = all_gather(b_shard, "dp", src=S(0), dst=R)
    return F.linear(x, w, b)


def grad_norm(grads: list[Annotated[Tensor, P["dp"]]]) -> Annotated[Tensor, R["dp"]]:
    total = torch.zeros(())
    for g in grads:
        total = total + all_reduce(g, "dp", src=P, dst=R).pow(2).sum()
    return total.sqrt()
