"""BUG: the vocabulary-parallel embedding returns its lookup without the all-reduce (correct:
``VocabParallelEmbedding`` in ``examples/megatron_layers.py``).

Each ``tp`` rank looks up only the ids in its slice of the vocabulary and
writes zeros for the others, so a rank's lookup is one summand of the
embedding, not the embedding.  Without ``reduce_scatter_embeddings`` the
layer must all-reduce the summands (Megatron's
``reduce_from_tensor_model_parallel_region``); a port that keeps the masked
lookup and drops that call (it looks like the identity at ``tp = 1``, where
the example was first tried) gives every rank a different, mostly zero
embedding, and every layer after it computes on it.  The reduce-scattering
configuration sums the summands in its ``reduce_scatter``, so only the other
configuration has the bug; the plugin reports it in the copy of ``forward``
checked for it, where the partial sum is returned as ``I``.  Run it to see
the wrong output and gradients::

    python -m examples.bugs.megatron_embedding_without_all_reduce
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from torch import Tensor

from examples import megatron_layers as ml
from spmd_types import P, R, S, reduce_scatter


class EmbeddingWithoutAllReduce(ml.VocabParallelEmbedding[ml.EmbOut]):
    def forward(self, input_: Annotated[Tensor, R["tp"]]) -> ml.EmbOut:
        if self.reduce_scatter_embeddings:
            output_parallel = self.masked_lookup(input_).transpose(0, 1).contiguous()
            return reduce_scatter(output_parallel, "tp", src=P, dst=S(0), scatter_dim=0)
        return self.masked_lookup(input_)  # E: [spmd-boundary] return value on axis 'tp': expected I, got P


class StackWithoutAllReduce(ml.MegatronStack):
    def __init__(self, hidden: int, ffn: int, vocab: int) -> None:
        super().__init__(hidden, ffn, vocab)
        self.embedding = EmbeddingWithoutAllReduce(vocab, hidden)


EXAMPLE = replace(ml.EXAMPLE, module=StackWithoutAllReduce)
# what the simulated run gets wrong: everything, as every layer computes on the unsummed embedding
WRONG = ("output", "grad sp_embedding.weight", "grad embedding.weight", *(
    f"grad {layer}.{parameter}"
    for layer in ("sp_gathered", "gathered", "scattered", "fc1", "fc2", "sp_fc1", "sp_fc2", "output_layer")
    for parameter in ("weight", "bias")
))

if __name__ == "__main__":
    print(EXAMPLE.run())
