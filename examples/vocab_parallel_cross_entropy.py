"""Vocabulary-parallel cross entropy (Megatron-LM's ``vocab_parallel_cross_entropy``).

The output layer of a language model is column-parallel over the vocabulary:
rank ``k`` of ``tp`` computes the logits of its slice of the vocabulary only,
``S["tp", -1]``.  The loss ``log(sum_j exp(z_j)) - z_target`` needs three
things from the whole vocabulary, and none of them needs the full logits on
any rank::

    max_j z_j       all_reduce(op="max") of the ranks' maxima, on detached logits:
                    a statistic for a stable exp, with no gradient
    sum_j exp(z_j)  each rank sums over its slice: a partial sum (P), all-reduced
    z_target        only the rank that owns the target has it; the others
                    contribute zero: a partial value (P), all-reduced

Both reductions go to ``I``: every rank then computes the same loss, and the
gradient reaching each rank's logits is exactly that rank's slice of the
softmax gradient, with no communication in the backward pass.

Two mistakes the types catch (see ``examples/bugs/``): taking the log of the
partial sum before reducing it (a non-linear op on a partial value), and
all-gathering the logits first, then feeding the full vocabulary to this
function, which expects a slice.

The two functions are decorated with ``@checked``: under runtime checking
(``docs/runtime-checking.md``) their declared argument and result types are
checked at every call, so the gathered logits are refused at the call, as
the plugin refuses them, and not later inside.

Run it on 4 simulated ranks and compare with one device::

    python -m examples.vocab_parallel_cross_entropy
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import I, P, R, S, V, all_reduce, axis_size, checked, convert, reinterpret


@checked
def vocab_parallel_cross_entropy(
    logits: Annotated[Tensor, S["tp", -1]], target: Annotated[Tensor, R["tp"]]
) -> Annotated[Tensor, I["tp"]]:
    """Per-token cross entropy from logits whose last dim is this rank's slice of the vocabulary."""
    top = all_reduce(logits.detach().amax(-1, keepdim=True), "tp", src=V, dst=R, op="max")
    shifted = logits - top
    sum_exp = reinterpret(shifted.exp().sum(-1), "tp", src=V, dst=P)
    target_logit = owned_target_logit(shifted, target)
    return torch.log(all_reduce(sum_exp, "tp", dst=I)) - all_reduce(target_logit, "tp", dst=I)


@checked
def owned_target_logit(
    logits: Annotated[Tensor, S["tp", -1]], target: Annotated[Tensor, R["tp"]]
) -> Annotated[Tensor, P["tp"]]:
    """The target's logit on the rank whose vocabulary slice has the target, zero on the others."""
    vocab_slice = logits.shape[-1]
    first = convert(torch.arange(axis_size("tp")), "tp", src=R, dst=V) * vocab_slice
    local = target - first
    elsewhere = (local < 0) | (local >= vocab_slice)
    picked = logits.gather(-1, local.masked_fill(elsewhere, 0).unsqueeze(-1)).squeeze(-1)
    return reinterpret(picked.masked_fill(elsewhere, 0.0), "tp", src=V, dst=P)


class VocabParallelLMHead(nn.Module):
    """The output layer and the loss: ``cross_entropy(hidden @ weight.T, target)``, per token."""

    weight: Annotated[nn.Parameter, S["tp", 0]]  # [vocab / tp, dim]

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab // axis_size("tp"), dim))

    def forward(
        self, hidden: Annotated[Tensor, I["tp"]], target: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, I["tp"]]:
        logits = F.linear(convert(hidden, "tp", src=I, dst=R), self.weight)
        return vocab_parallel_cross_entropy(logits, target)


def reference(params: Mapping[str, Tensor], hidden: Tensor, target: Tensor) -> Tensor:
    """The same loss on one device, from the logits of the whole vocabulary."""
    logits = F.linear(hidden, params["weight"])
    return F.cross_entropy(logits.flatten(0, -2), target.flatten(), reduction="none").view(target.shape)


EXAMPLE = ModuleExample(
    module=VocabParallelLMHead,
    options={"vocab": 32, "dim": 8},
    mesh={"tp": 4},
    inputs=lambda generator: (
        torch.randn(2, 5, 8, generator=generator),
        torch.randint(0, 32, (2, 5), generator=generator),
    ),
    reference=reference,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
