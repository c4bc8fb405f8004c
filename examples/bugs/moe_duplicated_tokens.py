"""BUG: replicated tokens fed to the expert all-to-all (correct: ``examples/moe_all_to_all.py``).

The activations entering the layer are the same on every ``ep`` rank.
Without first keeping each rank's share of them, every rank routes every
token, and each expert receives each token ``ep`` times.  The compute and
the all-to-all traffic grow ``ep``-fold, and the ranks' results, gathered at
the end, repeat the batch ``ep`` times instead of covering it once.

The plugin sees replicated data reaching an all-to-all, whose input must
differ from rank to rank, and names the slice that fixes it.  Run it to see
the wrong output::

    python -m examples.bugs.moe_duplicated_tokens
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from examples import moe_all_to_all as moe
from spmd_types import I, R, S, all_gather, all_to_all, convert


class MoEWithDuplicatedTokens(moe.ExpertParallelMoE):
    def forward(self, x: Annotated[Tensor, R["ep"]]) -> Annotated[Tensor, R["ep"]]:
        tokens = x
        probs = F.softmax(F.linear(tokens, convert(self.router, "ep", src=I, dst=R)), dim=-1)
        gate, expert = probs.max(dim=-1)
        chosen = F.one_hot(expert, probs.shape[-1])  # [tokens, experts]
        slot = (chosen.cumsum(0) - 1) * chosen  # the token's place in its expert's buffer
        dispatch = (F.one_hot(slot, tokens.shape[0]) * chosen.unsqueeze(-1)).to(tokens.dtype)  # [tokens, experts, capacity]
        buffers = torch.einsum("tec,td->ecd", dispatch, tokens)
        received = all_to_all(buffers, "ep", src=S(1), dst=S(0))  # E: [spmd-collective] the input is R but all_to_all was told src=S(1)
        hidden = F.gelu(torch.einsum("ecd,ehd->ech", received, self.w_in))
        returned = all_to_all(torch.einsum("ech,edh->ecd", hidden, self.w_out), "ep", src=S(0), dst=S(1))
        combined = torch.einsum("tec,ecd->td", dispatch * gate[:, None, None], returned)
        return all_gather(combined, "ep", src=S(0), dst=R)


EXAMPLE = replace(moe.EXAMPLE, module=MoEWithDuplicatedTokens)
WRONG = ("output",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
