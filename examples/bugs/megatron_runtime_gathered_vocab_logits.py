"""BUG: the output layer's call gathers the vocabulary-sharded logits (``runtime_gather_output=True``) and
feeds them to the vocabulary-parallel loss (correct: ``MegatronStack.output_layer`` in
``examples/megatron_layers.py``).

Megatron's ``ColumnParallelLinear.forward`` takes ``runtime_gather_output``,
which overrides the ``gather_output`` the layer was built with for that one
call: code that needs whole logits for one purpose (sampling at inference,
say) passes ``True``, and when that call ends up in the training path the
loss gets logits over the whole vocabulary on every rank.
``vocab_parallel_cross_entropy`` expects each rank's slice: it counts every
entry ``tp`` times in its normalizer, and the gradient that flows back
through the gather is each rank's slice of a different wrong gradient (see
``examples/bugs/megatron_gathered_vocab_logits.py``, the same mistake made
when the layer is built).  The layer itself is correct, and built as the
correct example builds it; the flag is at the call.  The layer's ``forward``
has one overload per value of the flag (``None``: the layer's own
``gather_output``), so the call with ``True`` returns ``I`` and the plugin
reports it where that call's logits reach the loss.  Run it to see the wrong
loss::

    python -m examples.bugs.megatron_runtime_gathered_vocab_logits
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from torch import Tensor, nn

from examples import megatron_layers as ml
from examples.bugs import megatron_gathered_vocab_logits as gathered_at_construction
from examples.vocab_parallel_cross_entropy import vocab_parallel_cross_entropy
from spmd_types import I, R, S


class OutputLayerGatheredAtTheCall(nn.Module):
    """The stack's output layer, built as the stack builds it, and the loss; the call gathers the logits."""

    def __init__(self, hidden: int, vocab: int) -> None:
        super().__init__()
        self.output_layer = ml.ColumnParallelLinear(hidden, vocab, sequence_parallel=True)

    def forward(
        self, hidden: Annotated[Tensor, S["tp", 0]], target: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, I["tp"]]:
        return vocab_parallel_cross_entropy(self.output_layer(hidden, runtime_gather_output=True), target)  # E: [spmd-boundary] argument "logits" of "vocab_parallel_cross_entropy" on axis 'tp': expected S(-1), got I


EXAMPLE = replace(gathered_at_construction.EXAMPLE, module=OutputLayerGatheredAtTheCall)
WRONG = gathered_at_construction.WRONG  # what the simulated run gets wrong: the same as when built to gather

if __name__ == "__main__":
    print(EXAMPLE.run())
