"""Ring attention (context parallelism): key/value blocks passed around the ranks with ``ppermute``.

Every ``cp`` rank holds one block of the sequence, ``S["cp", 1]`` for
``[batch, seq, dim]``.  Attention for my queries needs every key and value, so
the key/value blocks travel around a ring: at each of ``cp`` steps a rank
attends to the block it holds, then passes it to the next rank and receives
one from the previous rank.  The softmax is accumulated online (a running
maximum and normalizer per query, as in flash attention), so no rank ever
holds more than one block::

    step 0:  my queries x my keys/values
    step t:  ppermute(kv, ring) --> my queries x the keys/values of rank (me - t) mod cp

``ppermute`` along a ring is its own backward along the reversed ring: each
block's gradient travels back to the rank that owns it.  The causal mask
needs the global positions of both blocks, so the key/value positions
travel around the ring with their block.  (Blocks entirely in a query
block's future are computed and masked here; zig-zag layouts balance that.)

The projection weights are the same on every rank, applied to different
tokens: declared invariant and cast with ``convert(w, "cp", src=I, dst=R)``
at their use, so their gradients are summed over ``cp``.  Forgetting that
is a type error (see ``examples/bugs/ring_attention_weight_not_reduced.py``).

Run it on 4 simulated ranks and compare with one device::

    python -m examples.ring_attention
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import I, R, S, axis_size, convert, ppermute


def ring_attention(
    q: Annotated[Tensor, S["cp", 2]], k: Annotated[Tensor, S["cp", 2]], v: Annotated[Tensor, S["cp", 2]]
) -> Annotated[Tensor, S["cp", 2]]:
    """Causal attention of my query block over the whole sequence; ``[batch, heads, seq, head_dim]`` blocks."""
    cp = axis_size("cp")
    ring = [(rank, (rank + 1) % cp) for rank in range(cp)]
    q_pos = convert(torch.arange(q.shape[2] * cp), "cp", src=R, dst=S(0))
    kv, kv_pos = torch.stack([k, v]), q_pos
    top = torch.full(q.shape[:-1], float("-inf"))
    total = torch.zeros(q.shape[:-1])
    out = torch.zeros_like(q)
    for step in range(cp):
        if step > 0:
            kv, kv_pos = ppermute(kv, "cp", ring), ppermute(kv_pos, "cp", ring)
        scores = (q @ kv[0].transpose(-2, -1)) * q.shape[-1] ** -0.5
        scores = scores.masked_fill(kv_pos[None, :] > q_pos[:, None], float("-inf"))
        new_top = torch.maximum(top, scores.detach().amax(-1))
        weights = torch.exp(scores - new_top[..., None])
        rescale = torch.exp(top - new_top)
        total = total * rescale + weights.sum(-1)
        out = out * rescale[..., None] + weights @ kv[1]
        top = new_top
    return out / total[..., None]


class RingSelfAttention(nn.Module):
    """Causal self-attention over a sequence split across ``cp``."""

    qkv_weight: Annotated[nn.Parameter, I["cp"]]  # [3 * dim, dim]
    out_weight: Annotated[nn.Parameter, I["cp"]]  # [dim, dim]

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv_weight = nn.Parameter(torch.empty(3 * dim, dim))
        self.out_weight = nn.Parameter(torch.empty(dim, dim))

    def forward(self, x: Annotated[Tensor, S["cp", 1]]) -> Annotated[Tensor, S["cp", 1]]:
        batch, seq, dim = x.shape
        qkv = F.linear(x, convert(self.qkv_weight, "cp", src=I, dst=R))
        q, k, v = qkv.view(batch, seq, 3, self.heads, dim // self.heads).transpose(1, 3).unbind(2)
        out = ring_attention(q, k, v).transpose(1, 2).flatten(2)
        return F.linear(out, convert(self.out_weight, "cp", src=I, dst=R))


def reference(params: Mapping[str, Tensor], x: Tensor) -> Tensor:
    """The same attention on one device, over the whole sequence."""
    batch, seq, dim = x.shape
    qkv = F.linear(x, params["qkv_weight"]).view(batch, seq, 3, HEADS, dim // HEADS).transpose(1, 3)
    q, k, v = qkv.unbind(2)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2)
    return F.linear(out, params["out_weight"])


HEADS = 2
EXAMPLE = ModuleExample(
    module=RingSelfAttention,
    options={"dim": 8, "heads": HEADS},
    mesh={"cp": 4},
    inputs=lambda generator: (torch.randn(2, 12, 8, generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
