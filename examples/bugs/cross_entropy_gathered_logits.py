"""BUG: all-gathered logits fed to the vocabulary-parallel loss (correct:
``examples/vocab_parallel_cross_entropy.py``).

Gathering the logits over ``tp`` looks like a harmless way to "have the
whole vocabulary", but ``vocab_parallel_cross_entropy`` expects each rank's
*slice*: given the full logits on every rank, it counts every vocabulary
entry ``tp`` times in the normalizer and finds every target on rank 0 only.
The loss is off by ``log(tp)``.  Here the gradient survives by luck (the
error is a constant), but the logged loss and perplexity are wrong, and
gathering vocabulary-sized logits costs exactly the memory the parallel loss
exists to save.

The plugin sees a replicated tensor passed where a shard of the last dim is
declared.  Run it to see the wrong loss::

    python -m examples.bugs.cross_entropy_gathered_logits
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import vocab_parallel_cross_entropy as vpce
from spmd_types import I, R, S, all_gather, convert


class LMHeadWithGatheredLogits(vpce.VocabParallelLMHead):
    def forward(
        self, hidden: Annotated[Tensor, I["tp"]], target: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, I["tp"]]:
        logits = all_gather(F.linear(convert(hidden, "tp", src=I, dst=R), self.weight), "tp", src=S(-1), dst=R)
        return vpce.vocab_parallel_cross_entropy(logits, target)  # E: [spmd-boundary] argument "logits" of "vocab_parallel_cross_entropy" on axis 'tp': expected S(-1), got R


EXAMPLE = replace(vpce.EXAMPLE, module=LMHeadWithGatheredLogits)
WRONG = ("output",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
