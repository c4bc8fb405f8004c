"""BUG: the batch gathered with the varying all-gather (correct: ``examples/global_row_parallel.py``).

The layer's output is resolved by hand: an all-reduce of the pending sum over
``tp``, then an all-gather of the batch over ``dp``.  ``all_gather(...,
src=V, dst=R)`` takes each rank's tensor as one item of a list and stacks
the items along a new leading dim, ``[2, 4, 6]``, where the batch cut over
``dp`` must be joined along dim 0 (``src=S(0)``), ``[8, 6]``.  Local SPMD
accepts the call (a shard is per-rank data, which ``src=V`` takes); in a
``@global_spmd`` function only the shard-preserving variant is defined, and
the checker offers it.

Run it to see the wrong output::

    python -m examples.bugs.global_row_parallel_gather_as_varying
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from torch import Tensor

import spmd_types as spmd
from examples import global_row_parallel
from spmd_types import P, PartitionSpec, R, V, all_gather, all_reduce, global_spmd


class GatheredAsVaryingRowParallelLinear(global_row_parallel.GlobalRowParallelLinear):
    @global_spmd
    def forward(
        self, x: Annotated[Tensor, PartitionSpec("dp", "tp")]
    ) -> Annotated[Tensor, PartitionSpec(None, None), R["dp", "tp"]]:
        y = spmd.linear(x, self.weight, out_partial_axes="tp")
        rows = all_reduce(y, "tp", src=P, dst=R)
        return all_gather(rows, "dp", src=V, dst=R)  # E: [spmd-global] only the shard-preserving variants of all_gather


EXAMPLE = replace(global_row_parallel.EXAMPLE, module=GatheredAsVaryingRowParallelLinear)
WRONG = ("output",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
