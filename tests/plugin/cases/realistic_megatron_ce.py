"""Megatron's vocab-parallel embedding and cross entropy, written in Megatron's own style.

Correct code in the style of real training code, not written for the checker: the plugin must
report nothing here (each false positive it once gave is a regression test).

Token ids are declared ``R``: they carry no gradient, so ``R`` and ``I`` hold the same values, and
only ``R`` may be offset by the rank's own vocabulary start (``input_ - start``, a number that
differs by rank): an ``I`` value mixed with per-rank data would get a per-rank gradient.
"""
from __future__ import annotations

from typing import Annotated, Final

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import spmd_types as spmd
from spmd_types import I, P, R, S, V, all_reduce

TP: Final = "tp"


class VocabParallelEmbedding(nn.Module):
    weight: Annotated[nn.Parameter, S["tp", 0]]

    def __init__(self, vocab: int, dim: int, tp: int) -> None:
        super().__init__()
        self.per_rank = vocab // tp
        self.weight = nn.Parameter(torch.empty(self.per_rank, dim))

    def forward(self, input_: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, I["tp"]]:
        start = spmd.axis_index(TP) * self.per_rank
        end = start + self.per_rank
        input_mask = (input_ < start) | (input_ >= end)
        masked_input = input_.clone() - start
        masked_input[input_mask] = 0
        output_parallel = F.embedding(masked_input, self.weight)
        output_parallel[input_mask, :] = 0.0
        output = all_reduce(reinterpret_partial(output_parallel), TP, src=P, dst=I)
        return output


def reinterpret_partial(x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return spmd.reinterpret(x, TP, src=V, dst=P)


def vocab_parallel_cross_entropy(
    vocab_parallel_logits: Annotated[Tensor, S["tp", -1]], target: Annotated[Tensor, R["tp"]]
) -> Annotated[Tensor, I["tp"]]:
    logits_max = torch.max(vocab_parallel_logits.detach(), dim=-1)[0]
    logits_max = all_reduce(logits_max, TP, src=V, dst=I, op="max")
    vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(dim=-1)

    partition_vocab_size = vocab_parallel_logits.size()[-1]
    vocab_start_index = spmd.axis_index(TP) * partition_vocab_size
    vocab_end_index = vocab_start_index + partition_vocab_size

    target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
    masked_target = target.clone() - vocab_start_index
    masked_target[target_mask] = 0

    logits_2d = vocab_parallel_logits.view(-1, partition_vocab_size)
    masked_target_1d = masked_target.view(-1)
    arange_1d = torch.arange(start=0, end=logits_2d.size()[0], device=logits_2d.device)
    predicted_logits_1d = logits_2d[arange_1d, masked_target_1d]
    predicted_logits_1d = predicted_logits_1d.clone().contiguous()
    predicted_logits = predicted_logits_1d.view_as(target)
    predicted_logits = predicted_logits * (~target_mask)
    predicted_logits = all_reduce(spmd.reinterpret(predicted_logits, TP, src=V, dst=P), TP, src=P, dst=I)

    exp_logits = torch.exp(vocab_parallel_logits)
    sum_exp_logits = exp_logits.sum(dim=-1)
    sum_exp_logits = all_reduce(spmd.reinterpret(sum_exp_logits, TP, src=V, dst=P), TP, src=P, dst=I)

    loss = torch.log(sum_exp_logits) - predicted_logits
    return loss
