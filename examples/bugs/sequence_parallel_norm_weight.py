"""BUG: the norm weight of a sequence-parallel block used without its cast (correct:
``examples/sequence_parallel_attention.py``).

In the sequence-parallel region each ``tp`` rank normalizes only its own
tokens.  The RMSNorm weight is the same on every rank, but each rank's
gradient for it covers only that rank's tokens: the true gradient is the sum
over ``tp``.  Used as it is, the weight gets a different, partial gradient on
every rank, and the replicas drift apart at the first optimizer step.  This
is the classic sequence-parallelism bug (Megatron-LM all-reduces such
"sequence_parallel" weights' gradients separately for this reason).

The plugin rejects the invariant weight on sequence-sharded tokens and names
the cast whose backward is the missing all-reduce.  Run it to see the
wrong gradient::

    python -m examples.bugs.sequence_parallel_norm_weight
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import sequence_parallel_attention as sp
from spmd_types import S


class NormWeightNotReduced(sp.SequenceParallelAttention):
    def norm(self, x: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, S["tp", 1]]:
        weight = self.norm_weight
        return F.rms_norm(x, weight.shape, weight, eps=1e-6)  # E: [spmd-mix] I does not mix with S(1)


EXAMPLE = replace(sp.EXAMPLE, module=NormWeightNotReduced)
WRONG = ("grad norm_weight",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
