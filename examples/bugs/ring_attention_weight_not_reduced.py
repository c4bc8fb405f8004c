"""BUG: context-parallel ranks left out of a weight's gradient reduction (correct:
``examples/ring_attention.py``).

Each ``cp`` rank projects its own block of the sequence, so each rank's
gradient for the (replicated) projection weight covers only its tokens.
Megatron-LM reduces such gradients over the data-parallel *and*
context-parallel ranks; a reduction that forgets the ``cp`` ranks leaves every
rank with a different, partial gradient.  Here the input projection's weight
is used without ``convert(w, "cp", src=I, dst=R)``, whose backward is that
reduction.

The plugin rejects the invariant weight on sequence-sharded tokens.  Run it
to see the wrong gradient::

    python -m examples.bugs.ring_attention_weight_not_reduced
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import ring_attention as ring
from spmd_types import I, R, S, convert


class RingAttentionWeightNotReduced(ring.RingSelfAttention):
    def forward(self, x: Annotated[Tensor, S["cp", 1]]) -> Annotated[Tensor, S["cp", 1]]:
        batch, seq, dim = x.shape
        qkv = F.linear(x, self.qkv_weight)  # E: [spmd-mix] I does not mix with S(1)
        q, k, v = qkv.view(batch, seq, 3, self.heads, dim // self.heads).transpose(1, 3).unbind(2)
        out = ring.ring_attention(q, k, v).transpose(1, 2).flatten(2)
        return F.linear(out, convert(self.out_weight, "cp", src=I, dst=R))


EXAMPLE = replace(ring.EXAMPLE, module=RingAttentionWeightNotReduced)
WRONG = ("grad qkv_weight",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
