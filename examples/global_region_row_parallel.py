"""A row-parallel linear layer in global SPMD whose reduction is written by hand, in a local region on ``tp``.

``examples/global_row_parallel.py`` states the layer's pending sum with
``spmd.linear(..., out_partial_axes="tp")`` and lets ``redistribute_spec``
resolve it.  Here the layer keeps a hand-written reduction, as Megatron's
code does: each rank's ``F.linear`` product, then ``reinterpret(V -> P)`` and
an all-reduce over ``tp``.  Those are local SPMD steps (a per-rank product is
``V``, which has no global meaning), so they run in a function that
``@local_region("tp", ...)`` makes local on ``tp`` and keeps global on
``dp``::

    x       f32[8@dp,12@tp]      in_specs:  dp:S(0), tp:S(1) inside
    weight  f32[6,12@tp]                    dp:R,    tp:S(1) inside
      y = F.linear(x, weight)                 tp:V   (each rank's product)
      all_reduce(reinterpret(y, V -> P))      tp:R
    rows    f32[8@dp,6]          out_specs: re-stated on exit
    out = redistribute_spec(rows, ROWS, WHOLE)      f32[8,6]: all-gather over dp

Leaving the reduction out returns ``V`` where ``out_specs`` says replicated:
``examples/bugs/global_region_unreduced.py``, which both the checker and
runtime checking report at the region.

Run it on 2x2 simulated ranks and compare with one device::

    python -m examples.global_region_row_parallel
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import global_row_parallel
from spmd_types import (
    P,
    PartitionSpec,
    R,
    S,
    V,
    all_reduce,
    global_spmd,
    local_region,
    redistribute_spec,
    reinterpret,
)

X = PartitionSpec("dp", "tp")  # the activations: batch cut over dp, features over tp
W = PartitionSpec(None, "tp")  # the weight: input features cut over tp
ROWS = PartitionSpec("dp", None)  # the layer's output, whole on tp
WHOLE = PartitionSpec(None, None)


@local_region("tp", in_specs=(X, W), out_specs=ROWS)
def reduced_product(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, R["tp"]]:
    """``F.linear(x, w)`` over features cut on ``tp``: each rank's product, summed by hand."""
    y = F.linear(x, w)  # V on tp: this rank's summand
    return all_reduce(reinterpret(y, "tp", src=V, dst=P), "tp", src=P, dst=R)


class RegionRowParallelLinear(global_row_parallel.GlobalRowParallelLinear):
    """The same layer and weight as ``GlobalRowParallelLinear``; its forward reduces by hand, in a local region."""

    @global_spmd
    def forward(
        self, x: Annotated[Tensor, PartitionSpec("dp", "tp")]
    ) -> Annotated[Tensor, PartitionSpec(None, None), R["dp", "tp"]]:
        rows = reduced_product(x, self.weight)  # dp:S(0), tp:R, as out_specs says
        return redistribute_spec(rows, ROWS, WHOLE)


EXAMPLE = replace(global_row_parallel.EXAMPLE, module=RegionRowParallelLinear)  # its inputs and reference

if __name__ == "__main__":
    raise SystemExit(EXAMPLE.main())
