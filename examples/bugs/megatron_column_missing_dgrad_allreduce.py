"""BUG: the column-parallel layer forgets to all-reduce its input's gradient (correct: ``examples/megatron_layers.py``).

Without sequence parallelism, every ``tp`` rank multiplies the same whole
input by its own slice of the weight, so each rank's backward produces only
its slice's share of the input's gradient; Megatron's fused linear sums them
when ``allreduce_dgrad`` is on.  A linear run with ``allreduce_dgrad`` off
and no ``copy_to_tensor_model_parallel_region`` in front of it (the fused
kernel path where the flag was not passed through) hands each rank a
different, partial gradient, and every layer before it learns from a wrong
one; the output and the layer's own weight gradient stay right.  With sequence
parallelism the layer's all-gather reduce-scatters the gradient in its
backward, so only the other configuration has the bug, and the plugin
reports it in the copy of ``forward`` checked for that configuration:
``I`` does not mix with the sharded weight until ``reinterpret(input_,
"tp", src=I, dst=R)`` says that the gradient is summed.  Run it to see the
wrong gradients::

    python -m examples.bugs.megatron_column_missing_dgrad_allreduce
"""

from __future__ import annotations

from dataclasses import replace

import torch.nn.functional as F

from examples import megatron_layers as ml
from spmd_types import R, S, all_gather


class ColumnWithoutDgradAllReduce(ml.ColumnParallelLinear[ml.ColIn, ml.ColOut]):
    def _forward_impl(self, input_: ml.ColIn) -> ml.Sharded:
        if self.sequence_parallel:
            total_input = all_gather(input_, "tp", src=S(0), dst=R, gather_dim=0)
            return F.linear(total_input, self.weight, self.bias)
        return F.linear(input_, self.weight, self.bias)  # E: [spmd-mix] I does not mix with S(0)


class StackWithoutDgradAllReduce(ml.MegatronStack):
    def __init__(self, hidden: int, ffn: int, vocab: int) -> None:
        super().__init__(hidden, ffn, vocab)
        self.fc1 = ColumnWithoutDgradAllReduce(hidden, ffn)


EXAMPLE = replace(ml.EXAMPLE, module=StackWithoutDgradAllReduce)
WRONG = (  # what the simulated run gets wrong: every gradient upstream of fc1
    "grad sp_gathered.weight", "grad sp_gathered.bias", "grad gathered.weight", "grad gathered.bias",
    "grad scattered.weight", "grad scattered.bias", "grad sp_embedding.weight", "grad embedding.weight",
)

if __name__ == "__main__":
    print(EXAMPLE.run())
