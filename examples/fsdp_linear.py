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

Mixed precision, as FSDP does it: ``gather_dtype=torch.bfloat16`` gathers the
shards in ``bfloat16`` (half the bytes of ``float32``), and
``reduce_dtype=torch.float32`` runs the gradients' reduce-scatter in
``float32``, however low the gathered weight's precision (``comm_dtype=`` and
``grad_comm_dtype=`` of ``all_gather``).  The types do not change.
``MIXED_PRECISION`` is that variant of the example: its output and input
gradient carry the weights' rounding to ``bfloat16`` (relative error at most
``2**-8`` per entry, up to ``2**-8 * sum_j |x_j * w_ij|`` on an output, about
0.01 here), so it matches the single-device reference within ``rtol=1e-2,
atol=2e-2``; the weight and bias gradients (sums of the cotangent weighted by
``x``, which the weights' rounding does not reach) are reduced in ``float32``
and match to about ``1e-6``.

Run it on 4 simulated ranks and compare the gradients with one device::

    python -m examples.fsdp_linear
"""

from __future__ import annotations

import dataclasses
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

    def __init__(
        self,
        in_features: int,
        out_features: int,
        gather_dtype: torch.dtype | None = None,
        reduce_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        shard = out_features // axis_size("dp")
        self.weight = nn.Parameter(torch.empty(shard, in_features))
        self.bias = nn.Parameter(torch.empty(shard))
        self.gather_dtype = gather_dtype  # the parameters' all-gather runs in it (None: their own dtype)
        self.reduce_dtype = reduce_dtype  # the gradients' reduce-scatter runs in it (None: the gradient's)

    def forward(self, x: Annotated[Tensor, S["dp", 0]]) -> Annotated[Tensor, S["dp", 0]]:
        weight = all_gather(self.weight, "dp", src=S(0), dst=R,
                            comm_dtype=self.gather_dtype, grad_comm_dtype=self.reduce_dtype)
        bias = all_gather(self.bias, "dp", src=S(0), dst=R,
                          comm_dtype=self.gather_dtype, grad_comm_dtype=self.reduce_dtype)
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

# Gather in bfloat16, reduce the gradients in float32 (the example runs in float64).
MIXED_PRECISION = dataclasses.replace(
    EXAMPLE,
    options={**EXAMPLE.options, "gather_dtype": torch.bfloat16, "reduce_dtype": torch.float32},
    rtol=1e-2,
    atol=2e-2,
)

if __name__ == "__main__":
    print(EXAMPLE.run())
    print(MIXED_PRECISION.run())
