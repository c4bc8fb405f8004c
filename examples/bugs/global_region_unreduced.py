"""BUG: a local region that returns per-rank products where its out spec says replicated (correct:
``examples/global_region_row_parallel.py``).

The region drops to local SPMD on ``tp`` to multiply each rank's features,
and leaves out the all-reduce that sums the products: it returns ``V`` on
``tp`` (each rank's own summand), while ``out_specs=PartitionSpec("dp",
None)`` says the result is replicated on ``tp``.  The caller would take one
rank's summand for the whole product.  The checker reports it where the
region is made, and runtime checking where the region returns; without
either, the output is wrong.

Run it to see the wrong output::

    python -m examples.bugs.global_region_unreduced
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import global_region_row_parallel
from spmd_types import PartitionSpec, R, V, global_spmd, local_region, redistribute_spec

# The correct example's specs, written out: the checker reads the specs a module binds itself.
X = PartitionSpec("dp", "tp")
W = PartitionSpec(None, "tp")
ROWS = PartitionSpec("dp", None)
WHOLE = PartitionSpec(None, None)


def product(x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp"), R["dp"]]
            ) -> Annotated[Tensor, V["tp"]]:
    return F.linear(x, w)  # each rank's product: a summand, not the layer's output


class UnreducedRegionRowParallelLinear(global_region_row_parallel.RegionRowParallelLinear):
    @global_spmd
    def forward(
        self, x: Annotated[Tensor, PartitionSpec("dp", "tp")]
    ) -> Annotated[Tensor, PartitionSpec(None, None), R["dp", "tp"]]:
        rows = local_region("tp", in_specs=(X, W), out_specs=ROWS)(product)(x, self.weight)  # E: [spmd-boundary] out_specs says R on 'tp', a local axis of the region, but the function returns V
        return redistribute_spec(rows, ROWS, WHOLE)


EXAMPLE = replace(global_region_row_parallel.EXAMPLE, module=UnreducedRegionRowParallelLinear)
WRONG = ("output", "grad weight", "grad x (input)")  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
