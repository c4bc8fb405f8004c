"""BUG: a caller reduces the tensor-parallel MLP's output again (correct: ``examples/tp_mlp.py``).

``TensorParallelMLP`` already all-reduces its partial output: what it returns
is the whole result, the same on every rank.  A caller that believes the
output is still partial and sums it over ``tp`` again multiplies it by the
number of ranks.  The plugin knows the output is invariant, not partial, and
rejects the second reduction.  Run it to see the wrong output::

    python -m examples.bugs.tp_mlp_double_reduction
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from torch import Tensor

from examples import tp_mlp
from spmd_types import I, all_reduce


class MLPReducedTwice(tp_mlp.TensorParallelMLP):
    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return all_reduce(super().forward(x), "tp", dst=I)  # E: [spmd-collective] the input is I but all_reduce was told src=P


EXAMPLE = replace(tp_mlp.EXAMPLE, module=MLPReducedTwice)
WRONG = ("output",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
