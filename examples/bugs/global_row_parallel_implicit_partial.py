"""BUG: a row-parallel product taken for the global one (correct: ``examples/global_row_parallel.py``).

Each ``tp`` rank multiplies its slice of the input features by its slice of
the weight: a summand of the layer's output, not the output.  Returned as
the declared ``f32[8@dp,6]`` (replicated over ``tp``), every rank keeps its
own partial product and the sum over ``tp`` never happens.  In a
``@global_spmd`` function the checker flags the ``F.linear`` call: it sums
over features cut on ``tp``, and a pending sum is never implicit
(``spmd.linear(..., out_partial_axes="tp")``, then the reduction).

Run it to see the wrong output and gradients::

    python -m examples.bugs.global_row_parallel_implicit_partial
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import global_row_parallel
from spmd_types import PartitionSpec, R, global_spmd


class ImplicitPartialRowParallelLinear(global_row_parallel.GlobalRowParallelLinear):
    @global_spmd
    def forward(
        self, x: Annotated[Tensor, PartitionSpec("dp", "tp")]
    ) -> Annotated[Tensor, PartitionSpec("dp", None), R["tp"]]:
        return F.linear(x, self.weight)  # E: [spmd-global] dim 'k' is summed over and cut on 'tp'


EXAMPLE = replace(global_row_parallel.EXAMPLE, module=ImplicitPartialRowParallelLinear)
WRONG = ("output", "grad weight", "grad x (input)")  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
