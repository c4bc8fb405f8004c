"""BUG: the vocabulary-parallel embedding reduced with a summing backward (correct:
``examples/vocab_parallel_embedding.py``).

``all_reduce(..., dst=R)`` sums in the forward *and* in the backward, like
``torch.distributed.nn.functional.all_reduce``.  After the embedding every
``tp`` rank runs the same layers on the same activations, so the gradient
arriving here is already the whole gradient on every rank; summing it again
multiplies the embedding table's gradient by the number of ranks.  The
forward pass is identical, and the loss curve just looks like a larger
learning rate for the embeddings.

The plugin knows the result is ``R`` (its gradient will be summed) where the
signature promises ``I``.  Run it to see the wrong gradient::

    python -m examples.bugs.vocab_embedding_backward_all_reduce
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from torch import Tensor

from examples import vocab_parallel_embedding as vpe
from spmd_types import I, R, all_reduce


class EmbeddingWithSummingBackward(vpe.VocabParallelEmbedding):
    def forward(self, ids: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return all_reduce(self.lookup(ids), "tp", dst=R)  # E: [spmd-boundary] return value on axis 'tp': expected I, got R


EXAMPLE = replace(vpe.EXAMPLE, module=EmbeddingWithSummingBackward)
WRONG = ("grad weight",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
