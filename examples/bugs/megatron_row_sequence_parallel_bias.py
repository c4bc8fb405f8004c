"""BUG: the sequence-parallel row layer's bias gradient is never summed (correct: ``examples/megatron_layers.py``).

With ``sequence_parallel=True`` the row-parallel layer reduce-scatters its
output, so each ``tp`` rank adds the bias to its own slice of the tokens and
gets only those tokens' part of the bias gradient.  The bias is one tensor on
every rank, so the parts must be summed: Megatron marks it
``sequence_parallel`` and all-reduces its gradient after backward, and
leaving that out (a new layer whose bias nobody marked) lets the ranks'
copies of the bias drift apart.  Without sequence parallelism the output is
whole and the same bias is correct as it is, so only that configuration has
the bug; the plugin reports it in the copy of ``forward`` checked for it:
the ``I`` bias does not mix with the ``S(0)`` output until
``reinterpret(self.bias, "tp", src=I, dst=R)`` puts the sum in the backward.
Run it to see the wrong gradient::

    python -m examples.bugs.megatron_row_sequence_parallel_bias
"""

from __future__ import annotations

from dataclasses import replace

import spmd_types as spmd
from examples import megatron_layers as ml
from spmd_types import I, P, S, all_reduce, convert, reduce_scatter


class RowWithUnsummedBias(ml.RowParallelLinear[ml.RowIn, ml.RowOut]):
    def forward(self, input_: ml.RowIn) -> ml.RowOut:
        if self.input_is_parallel:
            input_parallel = input_
        else:
            input_parallel = convert(input_, "tp", src=I, dst=S(-1))
        output_parallel = spmd.linear(input_parallel, self.weight, out_partial_axes="tp")
        if self.sequence_parallel:
            output_ = reduce_scatter(output_parallel, "tp", src=P, dst=S(0), scatter_dim=0)
            return output_ + self.bias  # E: [spmd-mix] I does not mix with S(0)
        return all_reduce(output_parallel, "tp", src=P, dst=I) + self.bias


class StackWithUnsummedBias(ml.MegatronStack):
    def __init__(self, hidden: int, ffn: int, vocab: int) -> None:
        super().__init__(hidden, ffn, vocab)
        self.sp_fc2 = RowWithUnsummedBias(ffn, hidden, input_is_parallel=True, sequence_parallel=True)


EXAMPLE = replace(ml.EXAMPLE, module=StackWithUnsummedBias)
WRONG = ("grad sp_fc2.bias",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
