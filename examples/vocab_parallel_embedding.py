"""Vocabulary-parallel embedding (Megatron-LM's ``VocabParallelEmbedding``).

The embedding table is split by rows over ``tp``: rank ``k`` holds the
embeddings of token ids ``[k * rows, (k + 1) * rows)``.  Every rank sees all
token ids (they are replicated), looks up the ones it owns and writes zeros
for the others.  Exactly one rank contributes each token's embedding, so the
ranks' lookups are the summands of the embedding: a *partial* value, which
one all-reduce completes::

    ids (R) --> masked lookup in my rows --> all_reduce P->I --> embeddings (I)
                (zero where not mine)        fwd: all-reduce
                                             bwd: none

The reduction goes to ``I``, as Megatron's
``reduce_from_tensor_model_parallel_region`` does: the layers after it
compute the same thing on every rank, so the gradient arriving here is
already whole and must not be summed again.  A reduction whose backward sums
(``dst=R``, or ``torch.distributed.nn.functional.all_reduce``) would scale the
table's gradient by the number of ranks; see
``examples/bugs/vocab_embedding_backward_all_reduce.py``.

Which rows are mine: ``convert(torch.arange(tp) * rows, "tp", src=R, dst=V)``
gives each rank its own entry of a replicated table, and its type says that it
differs per rank.

Run it on 4 simulated ranks and compare the gradient with one device::

    python -m examples.vocab_parallel_embedding
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import I, P, R, S, V, all_reduce, axis_size, convert, reinterpret


class VocabParallelEmbedding(nn.Module):
    """``embedding(ids)`` with the table's rows (the vocabulary) split over ``tp``."""

    weight: Annotated[nn.Parameter, S["tp", 0]]  # [vocab / tp, dim]

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab // axis_size("tp"), dim))

    def lookup(self, ids: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
        """My rows' embeddings of ``ids``, zero for ids another rank owns: summands of the embedding."""
        rows = self.weight.shape[0]
        first = convert(torch.arange(axis_size("tp")), "tp", src=R, dst=V) * rows
        local = ids - first
        elsewhere = (local < 0) | (local >= rows)
        found = F.embedding(local.masked_fill(elsewhere, 0), self.weight)
        return reinterpret(found.masked_fill(elsewhere.unsqueeze(-1), 0.0), "tp", src=V, dst=P)

    def forward(self, ids: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return all_reduce(self.lookup(ids), "tp", dst=I)


def reference(params: Mapping[str, Tensor], ids: Tensor) -> Tensor:
    """The same lookup on one device, in the whole table."""
    return F.embedding(ids, params["weight"])


EXAMPLE = ModuleExample(
    module=VocabParallelEmbedding,
    options={"vocab": 16, "dim": 8},
    mesh={"tp": 4},
    inputs=lambda generator: (torch.randint(0, 16, (2, 6), generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
