"""BUG: an output layer built with ``gather_output=True`` feeds the vocabulary-parallel loss
(correct: ``MegatronStack.output_layer`` in ``examples/megatron_layers.py``).

A GPT model's output layer is column parallel over the vocabulary, and its
logits must stay sharded for ``vocab_parallel_cross_entropy``, which sums
``exp`` over each rank's slice and finds each target on the rank that owns it.
Gathering them (``gather_output=True`` at construction, or Megatron's
``runtime_gather_output=True`` at the call: the twin
``megatron_runtime_gathered_vocab_logits``) gives every rank the whole
vocabulary: the loss then counts every entry ``tp`` times in its normalizer
and is off by ``log(tp)``.  The gradient is wrong too: each rank's gradient
of the whole logits differs (every target is found on rank 0 only), and the
gather's backward keeps each rank's own slice of it, as if they were the
same.  The flag is set where the layer is built, and
the mistake shows where the logits meet the loss: the instance built with
``gather_output=True`` returns ``I``, and the plugin reports it at that call.
Run it to see the wrong loss::

    python -m examples.bugs.megatron_gathered_vocab_logits
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated

import torch
from torch import Tensor, nn

from examples import megatron_layers as ml
from examples.vocab_parallel_cross_entropy import vocab_parallel_cross_entropy
from spmd_types import I, R, S


class OutputLayerWithGatheredLogits(nn.Module):
    """The stack's output layer and loss alone, the layer built to gather its output."""

    def __init__(self, hidden: int, vocab: int) -> None:
        super().__init__()
        self.output_layer = ml.ColumnParallelLinear(hidden, vocab, gather_output=True, sequence_parallel=True)

    def forward(
        self, hidden: Annotated[Tensor, S["tp", 0]], target: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, I["tp"]]:
        logits = self.output_layer(hidden)
        return vocab_parallel_cross_entropy(logits, target)  # E: [spmd-boundary] argument "logits" of "vocab_parallel_cross_entropy" on axis 'tp': expected S(-1), got I


def reference(params: Mapping[str, Tensor], hidden: Tensor, target: Tensor) -> Tensor:
    """The output layer and cross entropy on one device."""
    return ml.token_losses(ml.linear(params, "output_layer", hidden), target)


EXAMPLE = replace(
    ml.EXAMPLE,
    module=OutputLayerWithGatheredLogits,
    options={"hidden": 8, "vocab": 32},
    inputs=lambda generator: (
        torch.randn(8, 2, 8, generator=generator),  # [sequence, batch, hidden]
        torch.randint(0, 32, (8, 2), generator=generator),
    ),
    reference=reference,
)
# what the simulated run gets wrong
WRONG = ("output", "grad output_layer.weight", "grad output_layer.bias", "grad hidden (input)")

if __name__ == "__main__":
    print(EXAMPLE.run())
