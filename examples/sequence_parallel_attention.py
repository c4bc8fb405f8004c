"""Self-attention with tensor and sequence parallelism (Megatron-LM's ``--sequence-parallel``).

Around the attention, the residual stream is *sequence-parallel*: each ``tp``
rank holds a slice of the tokens, ``S["tp", 1]`` for ``[batch, seq, dim]``.
Inside, the attention is *tensor-parallel*: each rank computes its own heads
over the whole sequence.  Two collectives connect the regions, and each one's
backward is the other::

    x (S1) --> rms_norm --> all_gather S(1)->R --> q, k, v --> attention --> out proj --> reduce_scatter P->S(1) --> + x
               my tokens    fwd: all-gather        my heads                 partial     fwd: reduce-scatter
                            bwd: reduce-scatter                             sum         bwd: all-gather

The norm runs on the local tokens only, but its weight is shared by all of
them: each rank computes the part of the weight's gradient that comes from
its own tokens, and those parts must be summed over ``tp``.  Declaring the
weight invariant (``I``) and casting it with ``convert(w, "tp", src=I, dst=R)``
at its use puts that all-reduce into the backward pass.  (Megatron instead
marks such weights ``sequence_parallel`` and all-reduces their gradients after
backward; forgetting either is the classic sequence-parallel bug, see
``examples/bugs/sequence_parallel_norm_weight.py``.)

Run it on 4 simulated ranks and compare every gradient with one device::

    python -m examples.sequence_parallel_attention
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import I, P, R, S, V, all_gather, axis_size, convert, reduce_scatter, reinterpret


class SequenceParallelAttention(nn.Module):
    """A pre-norm causal self-attention block: ``x + attention(rms_norm(x))``."""

    norm_weight: Annotated[nn.Parameter, I["tp"]]  # [dim]
    q_weight: Annotated[nn.Parameter, S["tp", 0]]  # [dim / tp, dim]: my heads
    k_weight: Annotated[nn.Parameter, S["tp", 0]]
    v_weight: Annotated[nn.Parameter, S["tp", 0]]
    out_weight: Annotated[nn.Parameter, S["tp", 1]]  # [dim, dim / tp]

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.head_dim = dim // heads
        local = dim // axis_size("tp")
        self.norm_weight = nn.Parameter(torch.empty(dim))
        self.q_weight = nn.Parameter(torch.empty(local, dim))
        self.k_weight = nn.Parameter(torch.empty(local, dim))
        self.v_weight = nn.Parameter(torch.empty(local, dim))
        self.out_weight = nn.Parameter(torch.empty(dim, local))

    def norm(self, x: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, S["tp", 1]]:
        """RMSNorm of my tokens; the weight's gradient is summed over the sequence shards."""
        weight = convert(self.norm_weight, "tp", src=I, dst=R)
        return F.rms_norm(x, weight.shape, weight, eps=1e-6)

    def forward(self, x: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, S["tp", 1]]:
        tokens = all_gather(self.norm(x), "tp", src=S(1), dst=R)
        batch, seq, _ = tokens.shape
        q = F.linear(tokens, self.q_weight).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        k = F.linear(tokens, self.k_weight).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        v = F.linear(tokens, self.v_weight).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [batch, my heads, seq, head_dim]
        partial = reinterpret(F.linear(heads.transpose(1, 2).flatten(2), self.out_weight), "tp", src=V, dst=P)
        return x + reduce_scatter(partial, "tp", dst=S(1))


def reference(params: Mapping[str, Tensor], x: Tensor) -> Tensor:
    """The same block on one device: every token, every head."""
    batch, seq, dim = x.shape
    h = F.rms_norm(x, (dim,), params["norm_weight"], eps=1e-6)
    q, k, v = (
        F.linear(h, params[name]).view(batch, seq, HEADS, -1).transpose(1, 2)
        for name in ("q_weight", "k_weight", "v_weight")
    )
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return x + F.linear(heads.transpose(1, 2).flatten(2), params["out_weight"])


HEADS = 4
EXAMPLE = ModuleExample(
    module=SequenceParallelAttention,
    options={"dim": 16, "heads": HEADS},
    mesh={"tp": 4},
    inputs=lambda generator: (torch.randn(2, 8, 16, generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
