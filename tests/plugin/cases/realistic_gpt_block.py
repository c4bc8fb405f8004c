"""Megatron-style GPT block with TP + SP, written the way users write it.

Correct code in the style of real training code, not written for the checker: the plugin must
report nothing here (each false positive it once gave is a regression test).
"""
from __future__ import annotations

import math
from typing import Annotated, Final, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import spmd_types as spmd
from spmd_types import P, R, S, V, all_gather, all_reduce, reduce_scatter, reinterpret

TP: Final = "tp"


def rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1) * sin + x * cos


class ParallelAttention(nn.Module):
    qkv_weight: Annotated[nn.Parameter, S["tp", 0]]
    qkv_bias: Annotated[nn.Parameter, S["tp", 0]]
    proj_weight: Annotated[nn.Parameter, S["tp", 1]]
    proj_bias: Annotated[nn.Parameter, I["tp"]]

    def __init__(self, hidden: int, heads: int, tp: int) -> None:
        super().__init__()
        self.heads = heads // tp
        self.head_dim = hidden // heads
        self.qkv_weight = nn.Parameter(torch.empty(3 * hidden // tp, hidden))
        self.qkv_bias = nn.Parameter(torch.zeros(3 * hidden // tp))
        self.proj_weight = nn.Parameter(torch.empty(hidden, hidden // tp))
        self.proj_bias = nn.Parameter(torch.zeros(hidden))

    def forward(self, x: Annotated[Tensor, R["tp"]], mask: Optional[Tensor] = None) -> Annotated[Tensor, P["tp"]]:
        b, s, _ = x.shape
        qkv = F.linear(x, self.qkv_weight, self.qkv_bias)
        qkv = qkv.view(b, s, self.heads, 3 * self.head_dim).transpose(1, 2)
        q, k, v = qkv.split(self.head_dim, dim=-1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        probs = F.dropout(torch.softmax(scores, dim=-1), p=0.1, training=self.training)
        ctx = torch.matmul(probs, v).transpose(1, 2).contiguous().view(b, s, -1)
        return F.linear(ctx, self.proj_weight)


class ParallelMLP(nn.Module):
    fc1: Annotated[nn.Parameter, S["tp", 0]]
    fc2: Annotated[nn.Parameter, S["tp", 1]]

    def __init__(self, hidden: int, ffn: int, tp: int) -> None:
        super().__init__()
        self.fc1 = nn.Parameter(torch.empty(ffn // tp, hidden))
        self.fc2 = nn.Parameter(torch.empty(hidden, ffn // tp))

    def forward(self, x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
        h = F.gelu(F.linear(x, self.fc1), approximate="tanh")
        return reinterpret(F.linear(h, self.fc2), TP, src=V, dst=P)


class Block(nn.Module):
    ln1_weight: Annotated[nn.Parameter, R["tp"]]
    ln2_weight: Annotated[nn.Parameter, R["tp"]]
    attn_bias: Annotated[nn.Parameter, R["tp"]]

    def __init__(self, hidden: int, heads: int, ffn: int, tp: int) -> None:
        super().__init__()
        self.ln1_weight = nn.Parameter(torch.ones(hidden))
        self.ln2_weight = nn.Parameter(torch.ones(hidden))
        self.attn_bias = nn.Parameter(torch.zeros(hidden))
        self.attn = ParallelAttention(hidden, heads, tp)
        self.mlp = ParallelMLP(hidden, ffn, tp)
        self.eps = 1e-5

    def forward(self, x: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, S["tp", 1]]:
        residual = x
        h = F.layer_norm(x, (x.shape[-1],), self.ln1_weight, None, self.eps)
        h = all_gather(h, TP, src=S(1), dst=R)
        a = self.attn(h)
        a = reduce_scatter(a, TP, src=P, dst=S(1))
        x = residual + F.dropout(a + self.attn_bias, p=0.1, training=self.training)
        h = F.rms_norm(x, (x.shape[-1],), self.ln2_weight, eps=self.eps)
        h = all_gather(h, TP, src=S(1), dst=R)
        m = reduce_scatter(self.mlp(h), TP, src=P, dst=S(1))
        out = x + m
        out = out * 0.5 + out.detach().mean() * 0
        return out


def loss_fn(logits: Annotated[Tensor, S["tp", -1]], target: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    local_max = logits.detach().amax(dim=-1, keepdim=True)
    gmax = all_reduce(local_max, TP, src=V, dst=R, op="max")
    shifted = logits - gmax
    sum_exp = all_reduce(shifted.exp().sum(-1), TP, src=P, dst=R)
    vocab_start = spmd.axis_index(TP) * logits.shape[-1]
    local_target = target - vocab_start
    in_range = (local_target >= 0) & (local_target < logits.shape[-1])
    safe = torch.where(in_range, local_target, torch.zeros_like(local_target))
    picked = shifted.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    picked = picked * in_range
    target_logit = all_reduce(picked, TP, src=P, dst=R)
    return (torch.log(sum_exp) - target_logit).mean()
