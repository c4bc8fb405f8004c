"""BUG: a projection weight used on sequence-sharded tokens without its cast (correct:
``examples/ulysses_attention.py``).

With Ulysses, each ``sp`` rank applies the output projection to its own
slice of the sequence, so each rank's gradient for the (replicated) weight
covers only its tokens.  Without ``convert(w, "sp", src=I, dst=R)``, whose
backward sums those gradients over ``sp``, every rank updates its copy with
a different partial gradient.  This is the bug of a data-parallel gradient
reduction that leaves out the sequence-parallel ranks.

The plugin rejects the invariant weight on varying tokens.  Run it to see
the wrong gradient::

    python -m examples.bugs.ulysses_weight_not_reduced
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import ulysses_attention as ulysses
from spmd_types import I, R, S, all_to_all, convert


class UlyssesWeightNotReduced(ulysses.UlyssesAttention):
    def forward(self, x: Annotated[Tensor, S["sp", 1]]) -> Annotated[Tensor, S["sp", 1]]:
        batch, seq, dim = x.shape
        qkv = F.linear(x, convert(self.qkv_weight, "sp", src=I, dst=R))
        q, k, v = qkv.view(batch, seq, 3, self.heads, dim // self.heads).unbind(2)  # [batch, my tokens, heads, head_dim]
        q = all_to_all(q, "sp", src=S(1), dst=S(2))  # [batch, all tokens, my heads, head_dim]
        k = all_to_all(k, "sp", src=S(1), dst=S(2))
        v = all_to_all(v, "sp", src=S(1), dst=S(2))
        heads = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        out = all_to_all(heads.transpose(1, 2), "sp", src=S(2), dst=S(1))  # [batch, my tokens, heads, head_dim]
        return F.linear(out.flatten(2), self.out_weight)  # E: [spmd-mix] I does not mix with S(1)


EXAMPLE = replace(ulysses.EXAMPLE, module=UlyssesWeightNotReduced)
WRONG = ("grad out_weight",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
