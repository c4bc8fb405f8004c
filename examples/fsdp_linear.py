"""A fully sharded data-parallel (FSDP / ZeRO-3) linear layer.

Each ``dp`` rank trains on its own part of the batch, ``S["dp", 0]``, and
stores only a shard of the parameters, ``S["dp", 0]`` (real FSDP flattens
and shards every parameter; sharding dim 0 shows the same communication).
Before use, the shards are all-gathered into the whole weight::

    weight shard (S0) --all_gather S(0)->R--> weight (R) --> linear(x, weight) --> y (S0)
                        fwd: all-gather
                        bwd: reduce-scatter

The gathered weight is ``R``: every rank holds it, but each rank's gradient
for it comes from its own part of the batch, a *partial* gradient.  The
backward of ``all_gather(dst=R)`` is therefore a reduce-scatter: it sums the
ranks' gradients and hands each rank the slice of the sum that belongs to its
shard, which is FSDP's gradient reduction.  Gathering to ``I`` instead would
skip the sum (see ``examples/bugs/fsdp_gather_to_invariant.py``).

Run it on 4 simulated ranks and compare the gradients with one device::

    python -m examples.fsdp_linear
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import R, S, all_gather, axis_size


class FullyShardedLinear(nn.Module):
    """``linear(x, weight, bias)`` with the parameters sharded over ``dp`` between uses."""

    weight: Annotated[nn.Parameter, S["dp", 0]]  # [out_features / dp, in_features]
    bias: Annotated[nn.Parameter, S["dp", 0]]  # [out_features / dp]

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        shard = out_features // axis_size("dp")
        self.weight = nn.Parameter(torch.empty(shard, in_features))
        self.bias = nn.Parameter(torch.empty(shard))

    def forward(self, x: Annotated[Tensor, S["dp", 0]]) -> Annotated[Tensor, S["dp", 0]]:
        weight = all_gather(self.weight, "dp", src=S(0), dst=R)
        bias = all_gather(self.bias, "dp", src=S(0), dst=R)
        return F.linear(x, weight, bias)


def reference(params: Mapping[str, Tensor], x: Tensor) -> Tensor:
    """The same layer on one device: the whole batch, the whole weight."""
    return F.linear(x, params["weight"], params["bias"])


EXAMPLE = ModuleExample(
    module=FullyShardedLinear,
    options={"in_features": 6, "out_features": 8},
    mesh={"dp": 4},
    inputs=lambda generator: (torch.randn(8, 6, generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
