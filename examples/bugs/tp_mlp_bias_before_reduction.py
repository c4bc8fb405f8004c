"""BUG: the row-parallel bias added to the partial sum (correct: ``examples/tp_mlp.py``).

After ``fc2`` each rank holds a *partial* output: the true output is the sum
over the ``tp`` ranks.  Adding the bias before that sum adds it once per rank,
so the output is off by ``(tp - 1) * bias``.  Megatron adds the row-parallel
bias after the all-reduce for exactly this reason.

The plugin rejects adding a replicated (here invariant) tensor to a partial
sum, and offers both fixes: reduce first, or add the bias on one rank only.
Run it to see the wrong output::

    python -m examples.bugs.tp_mlp_bias_before_reduction
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import tp_mlp
from spmd_types import I, P, R, V, all_reduce, convert, reinterpret


class MLPWithBiasBeforeReduction(tp_mlp.TensorParallelMLP):
    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        x_tp = convert(x, "tp", src=I, dst=R)
        h = F.gelu(F.linear(x_tp, self.fc1_weight, self.fc1_bias))
        partial = reinterpret(F.linear(h, self.fc2_weight), "tp", src=V, dst=P)
        return all_reduce(partial + self.fc2_bias, "tp", dst=I)  # E: [spmd-mix] + on axis 'tp': I does not mix with P


EXAMPLE = replace(tp_mlp.EXAMPLE, module=MLPWithBiasBeforeReduction)
WRONG = ("output",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
