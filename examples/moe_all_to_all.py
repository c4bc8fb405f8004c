"""Mixture of experts with expert parallelism: all-to-all dispatch and combine.

The experts are split over ``ep``: rank ``k`` holds ``experts / ep`` of them,
``S["ep", 0]``.  Here the layer sits in a block whose activations are
replicated over ``ep`` (the ranks of a tensor-parallel group, as in
DeepSpeed-MoE), so every rank holds every token.  Routing all of them on every
rank would send each token to its expert ``ep`` times, so each rank first
keeps its own share of the tokens (DeepSpeed's ``drop_tokens``)::

    x (R) --convert R->S(0)--> route my tokens --> buffers [experts, capacity, dim]
          my share of the tokens                   |
                                                   all_to_all: S(1) -> S(0)   my experts, everyone's tokens
                                                   |
                                                   experts (S0 weights)
                                                   |
                                                   all_to_all: S(0) -> S(1)   the outputs back to their ranks
                                                   |
    y (R) <--all_gather S(0)->R-- combine (weighted by the router) <--+

``all_to_all`` is its own backward (with the dims swapped), and the backward
of the first ``convert`` hands each rank the gradient of its own tokens only
(zeros elsewhere), to be summed by the backward of the ``all_gather``.
Routing is top-1 with a capacity equal to the number of local tokens, so no
token is dropped; a real layer adds a capacity factor and a load-balancing loss.

Feeding the replicated tokens to the all-to-all directly is a type error (see
``examples/bugs/moe_duplicated_tokens.py``).

Run it on 4 simulated ranks and compare with one device::

    python -m examples.moe_all_to_all
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import I, R, S, all_gather, all_to_all, axis_size, convert


class ExpertParallelMoE(nn.Module):
    """Top-1 mixture of GELU experts, ``y = gate * expert(x)``, with the experts split over ``ep``."""

    router: Annotated[nn.Parameter, I["ep"]]  # [experts, dim]
    w_in: Annotated[nn.Parameter, S["ep", 0]]  # [experts / ep, hidden, dim]
    w_out: Annotated[nn.Parameter, S["ep", 0]]  # [experts / ep, dim, hidden]

    def __init__(self, dim: int, hidden: int, experts: int) -> None:
        super().__init__()
        local = experts // axis_size("ep")
        self.router = nn.Parameter(torch.empty(experts, dim))
        self.w_in = nn.Parameter(torch.empty(local, hidden, dim))
        self.w_out = nn.Parameter(torch.empty(local, dim, hidden))

    def forward(self, x: Annotated[Tensor, R["ep"]]) -> Annotated[Tensor, R["ep"]]:
        tokens = convert(x, "ep", src=R, dst=S(0))
        probs = F.softmax(F.linear(tokens, convert(self.router, "ep", src=I, dst=R)), dim=-1)
        gate, expert = probs.max(dim=-1)
        chosen = F.one_hot(expert, probs.shape[-1])  # [tokens, experts]
        slot = (chosen.cumsum(0) - 1) * chosen  # the token's place in its expert's buffer
        dispatch = (F.one_hot(slot, tokens.shape[0]) * chosen.unsqueeze(-1)).to(tokens.dtype)  # [tokens, experts, capacity]
        buffers = torch.einsum("tec,td->ecd", dispatch, tokens)
        received = all_to_all(buffers, "ep", src=S(1), dst=S(0))  # [my experts, ep * capacity, dim]
        hidden = F.gelu(torch.einsum("ecd,ehd->ech", received, self.w_in))
        returned = all_to_all(torch.einsum("ech,edh->ecd", hidden, self.w_out), "ep", src=S(0), dst=S(1))
        combined = torch.einsum("tec,ecd->td", dispatch * gate[:, None, None], returned)
        return all_gather(combined, "ep", src=S(0), dst=R)


def reference(params: Mapping[str, Tensor], x: Tensor) -> Tensor:
    """The same layer on one device: every token through its top-1 expert, weighted by its gate."""
    gate, expert = F.softmax(F.linear(x, params["router"]), dim=-1).max(dim=-1)
    hidden = F.gelu(torch.einsum("td,thd->th", x, params["w_in"][expert]))
    return gate[:, None] * torch.einsum("th,tdh->td", hidden, params["w_out"][expert])


EXAMPLE = ModuleExample(
    module=ExpertParallelMoE,
    options={"dim": 6, "hidden": 10, "experts": 8},
    mesh={"ep": 4},
    inputs=lambda generator: (torch.randn(16, 6, generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
