"""BUG: FSDP parameters gathered as invariant (correct: ``examples/fsdp_linear.py``).

``all_gather(..., dst=I)`` promises that the gathered weight's gradient will
already be whole on every rank, so its backward just keeps the rank's own
slice, with no communication.  But each ``dp`` rank computed that gradient
from its own part of the batch only; the sum over the ranks, FSDP's
reduce-scatter, never happens, and every shard is updated with one rank's
share of the gradient.

The plugin rejects mixing the invariant weight with the batch-sharded input.
Run it to see the wrong gradients::

    python -m examples.bugs.fsdp_gather_to_invariant
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import fsdp_linear
from spmd_types import I, S, all_gather


class LinearGatheredToInvariant(fsdp_linear.FullyShardedLinear):
    def forward(self, x: Annotated[Tensor, S["dp", 0]]) -> Annotated[Tensor, S["dp", 0]]:
        weight = all_gather(self.weight, "dp", src=S(0), dst=I)
        bias = all_gather(self.bias, "dp", src=S(0), dst=I)
        return F.linear(x, weight, bias)  # E: [spmd-mix] I does not mix with S(0)


EXAMPLE = replace(fsdp_linear.EXAMPLE, module=LinearGatheredToInvariant)
WRONG = ("grad weight", "grad bias")  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
