"""Megatron's row-parallel linear layer in global SPMD: the design's worked example.

In local SPMD (``examples/megatron_layers.py``) a program is what each rank
runs on its own tensors.  The row-parallel layer multiplies activations cut
along their features over ``tp`` by a weight cut the same way, so each rank's
``F.linear`` is a *local* product, ``V``, and a ``reinterpret(V -> P)`` says
that these products are summands of the layer's output.

In global SPMD a program means the single-device program on the whole
tensors, partitioned as its annotations say; here the annotations are
partition specs, in the design's notation (``dp`` cuts the batch, ``tp`` the
features), and the output is wanted whole on every rank (for a loss that
every rank computes)::

    x       f32[8@dp,12@tp]
    weight  f32[6,12@tp]                                  (replicated over dp)
    y = spmd.linear(x, weight, out_partial_axes="tp")     f32[8@dp,6]+tp
    out = redistribute_spec(y, PENDING_SUM, WHOLE)        f32[8,6]
                fwd: all-reduce over tp, all-gather over dp
                bwd: reduce-scatter over dp

``F.linear(x, weight)`` alone is an error in a ``@global_spmd`` function:
the features it sums over are cut over ``tp``, so no rank's product is a
piece of the global product, and a pending sum is never implicit.
``out_partial_axes="tp"`` says, in the same call, that the products are
summands (``P`` on ``tp``); ``redistribute_spec`` then resolves the sum and
gathers the batch with the collectives the planner picks.  Doing the last
step by hand with the ``V`` variant of ``all_gather``, which stacks the
ranks' pieces along a new dim instead of joining them along the batch, is
``examples/bugs/global_row_parallel_gather_as_varying.py``: local SPMD
accepts it, global SPMD does not.

Run it on 2x2 simulated ranks and compare with one device::

    python -m examples.global_row_parallel
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import spmd_types as spmd
from examples.comparison import ModuleExample
from spmd_types import PartitionSpec, R, axis_size, global_spmd, redistribute_spec

PENDING_SUM = PartitionSpec("dp", None, partial="tp")  # f32[8@dp,6]+tp
WHOLE = PartitionSpec(None, None)  # f32[8,6] on every rank


class GlobalRowParallelLinear(nn.Module):
    """``linear(x, weight)`` with the input features cut over ``tp``, written in global SPMD."""

    weight: Annotated[nn.Parameter, PartitionSpec(None, "tp"), R["dp"]]  # [out_features, in_features / tp]

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features // axis_size("tp")))

    @global_spmd
    def forward(
        self, x: Annotated[Tensor, PartitionSpec("dp", "tp")]
    ) -> Annotated[Tensor, PartitionSpec(None, None), R["dp", "tp"]]:
        y = spmd.linear(x, self.weight, out_partial_axes="tp")  # the global product, a pending sum over tp
        return redistribute_spec(y, PENDING_SUM, WHOLE)


def reference(params: Mapping[str, Tensor], x: Tensor) -> Tensor:
    """The same layer on one device."""
    return F.linear(x, params["weight"])


EXAMPLE = ModuleExample(
    module=GlobalRowParallelLinear,
    options={"in_features": 12, "out_features": 6},
    mesh={"dp": 2, "tp": 2},
    inputs=lambda generator: (torch.randn(8, 12, generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    raise SystemExit(EXAMPLE.main())
