"""Ulysses sequence parallelism (DeepSpeed-Ulysses): all-to-all between sequence and heads.

Outside attention every ``sp`` rank holds a slice of the sequence,
``S["sp", 1]`` for ``[batch, seq, dim]``, and everything is token-wise.
Attention needs whole sequences, so an all-to-all re-shards ``q``, ``k``
and ``v`` from the sequence dim to the heads dim: each rank then holds the
whole sequence for ``heads / sp`` of the heads.  Another all-to-all takes the
attention output back::

    x (S1) --> q, k, v (S1: my tokens, all heads)
               --all_to_all S(1)->S(2)--> (S2: all tokens, my heads) --> attention
               --all_to_all S(2)->S(1)--> (S1) --> output projection --> y (S1)

An all-to-all is its own backward with the dims swapped, so the gradients
travel the same way back.  The projection weights are the same on every
rank, but each rank's gradient for them comes from its own tokens: they are
declared invariant and cast with ``convert(w, "sp", src=I, dst=R)`` at their
use, whose backward sums those gradients over ``sp``; forgetting that is a
type error (see ``examples/bugs/ulysses_weight_not_reduced.py``).

Run it on 4 simulated ranks and compare with one device::

    python -m examples.ulysses_attention
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import I, R, S, all_to_all, convert


class UlyssesAttention(nn.Module):
    """Causal self-attention over a sequence split across ``sp``."""

    qkv_weight: Annotated[nn.Parameter, I["sp"]]  # [3 * dim, dim]
    out_weight: Annotated[nn.Parameter, I["sp"]]  # [dim, dim]

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv_weight = nn.Parameter(torch.empty(3 * dim, dim))
        self.out_weight = nn.Parameter(torch.empty(dim, dim))

    def forward(self, x: Annotated[Tensor, S["sp", 1]]) -> Annotated[Tensor, S["sp", 1]]:
        batch, seq, dim = x.shape
        qkv = F.linear(x, convert(self.qkv_weight, "sp", src=I, dst=R))
        q, k, v = qkv.view(batch, seq, 3, self.heads, dim // self.heads).unbind(2)  # [batch, my tokens, heads, head_dim]
        q = all_to_all(q, "sp", src=S(1), dst=S(2))  # [batch, all tokens, my heads, head_dim]
        k = all_to_all(k, "sp", src=S(1), dst=S(2))
        v = all_to_all(v, "sp", src=S(1), dst=S(2))
        heads = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        out = all_to_all(heads.transpose(1, 2), "sp", src=S(2), dst=S(1))  # [batch, my tokens, heads, head_dim]
        return F.linear(out.flatten(2), convert(self.out_weight, "sp", src=I, dst=R))


def reference(params: Mapping[str, Tensor], x: Tensor) -> Tensor:
    """The same attention on one device, over the whole sequence."""
    batch, seq, dim = x.shape
    q, k, v = F.linear(x, params["qkv_weight"]).view(batch, seq, 3, HEADS, dim // HEADS).unbind(2)
    heads = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    return F.linear(heads.transpose(1, 2).flatten(2), params["out_weight"])


HEADS = 4
EXAMPLE = ModuleExample(
    module=UlyssesAttention,
    options={"dim": 16, "heads": HEADS},
    mesh={"sp": 4},
    inputs=lambda generator: (torch.randn(2, 8, 16, generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
