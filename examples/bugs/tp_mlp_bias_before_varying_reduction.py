"""BUG: the row-parallel bias added before an all-reduce of per-rank values (correct: ``examples/tp_mlp.py``).

The same mistake as ``tp_mlp_bias_before_reduction``, written the way most
ported code writes it: ``fc2``'s per-rank products are left ``V`` (per-rank
data) and summed by ``all_reduce(..., src=V)``, with the bias (converted to
``R``, as the checker asks before it meets a ``V``) added first, as
``F.linear``'s third argument.  ``V + R`` is a fine ``V`` to the join; the
reduction is what counts the bias once per rank, and the output is off by
``(tp - 1) * bias``.

The plugin reads the reduction's input as the sum it was built as (here the
value last assigned to ``out``) and rejects the replicated summand.  It
offers no mechanical fix: the bias belongs after the reduction.

Run it to see the wrong output::

    python -m examples.bugs.tp_mlp_bias_before_varying_reduction
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import tp_mlp
from spmd_types import I, R, V, all_reduce, convert


class MLPWithBiasInTheLinear(tp_mlp.TensorParallelMLP):
    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        x_tp = convert(x, "tp", src=I, dst=R)
        h = F.gelu(F.linear(x_tp, self.fc1_weight, self.fc1_bias))
        bias = convert(self.fc2_bias, "tp", src=I, dst=R)
        out = F.linear(h, self.fc2_weight, bias)
        return all_reduce(out, "tp", src=V, dst=I)  # E: [spmd-partial] all_reduce on axis 'tp': bias (R) is added to per-rank values


EXAMPLE = replace(tp_mlp.EXAMPLE, module=MLPWithBiasInTheLinear)
WRONG = ("output", "grad fc2_bias")  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
