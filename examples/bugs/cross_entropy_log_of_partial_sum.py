"""BUG: the log taken before the vocabulary-parallel sum (correct:
``examples/vocab_parallel_cross_entropy.py``).

Each ``tp`` rank sums ``exp`` over its slice of the vocabulary: one summand of
the softmax normalizer.  Taking the log of each summand and adding the logs
afterwards computes ``log(a) + log(b)`` where the loss needs ``log(a + b)``.
The result looks like a loss, decreases like a loss, and is wrong.

The plugin rejects a non-linear op on a partial value and names the
reduction that must come first.  Run it to see the wrong loss::

    python -m examples.bugs.cross_entropy_log_of_partial_sum
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from examples import vocab_parallel_cross_entropy as vpce
from spmd_types import I, P, R, S, V, all_reduce, convert, reinterpret


def cross_entropy_summing_logs(
    logits: Annotated[Tensor, S["tp", -1]], target: Annotated[Tensor, R["tp"]]
) -> Annotated[Tensor, I["tp"]]:
    top = all_reduce(logits.detach().amax(-1, keepdim=True), "tp", src=V, dst=R, op="max")
    shifted = logits - top
    sum_exp = reinterpret(shifted.exp().sum(-1), "tp", src=V, dst=P)
    target_logit = vpce.owned_target_logit(shifted, target)
    return all_reduce(torch.log(sum_exp) - target_logit, "tp", dst=I)  # E: [spmd-partial] P (a pending sum) through a non-linear op


class LMHeadSummingLogs(vpce.VocabParallelLMHead):
    def forward(
        self, hidden: Annotated[Tensor, I["tp"]], target: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, I["tp"]]:
        logits = F.linear(convert(hidden, "tp", src=I, dst=R), self.weight)
        return cross_entropy_summing_logs(logits, target)


EXAMPLE = replace(vpce.EXAMPLE, module=LMHeadSummingLogs)
WRONG = ("output", "grad weight", "grad hidden (input)")  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
