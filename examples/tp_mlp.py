"""Tensor-parallel MLP (Megatron-LM): a column-parallel layer, then a row-parallel one.

The hidden dimension is split across the ``tp`` ranks.  ``fc1`` is
*column-parallel*: each rank holds a slice of its output features (rows of the
weight, ``S["tp", 0]``), so each rank computes its own slice of the hidden
activation.  ``fc2`` is *row-parallel*: each rank holds the matching slice of
its input features (``S["tp", 1]``) and produces a partial sum of the output.
There is no communication between the two layers; GELU acts elementwise on
each rank's slice.

Where the communication is::

    x (I) --convert I->R--> fc1 --> gelu --> fc2 --> all_reduce P->I --> + bias --> y (I)
             forward: none                             forward: all-reduce
             backward: all-reduce                      backward: none

* ``convert(x, "tp", src=I, dst=R)`` is Megatron's
  ``copy_to_tensor_model_parallel_region``: every rank uses the same ``x``,
  but each contributes only part of its gradient, so the backward sums them.
* ``reinterpret(..., "tp", src=V, dst=P)`` states what ``fc2``'s local
  matmul computes: it contracts over this rank's slice of the hidden
  features, so its result is this rank's summand of the output.  (A local
  type cannot see which dim a matmul contracts; this no-op says it.)
* ``all_reduce(partial, "tp", dst=I)`` is
  ``reduce_from_tensor_model_parallel_region``: the forward sums the partial
  outputs; the gradient of an invariant value is already whole on every rank.
* The output bias is replicated (``I``) and added once, *after* the reduction.

The types say all of this: forgetting the input cast, adding the bias to the
partial sum, or reducing twice are type errors (see ``examples/bugs/tp_mlp_*``).

Run it on 4 simulated ranks and compare every gradient with one device::

    python -m examples.tp_mlp

or on real processes, one per rank (gloo on CPU, nccl on GPUs; see
``docs/real-ranks.md``), each of which checks the whole output and every
whole gradient against its own single-device run::

    torchrun --standalone --nproc_per_node 2 -m examples.tp_mlp
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import ModuleExample
from spmd_types import I, P, R, S, V, all_reduce, axis_size, convert, reinterpret


class TensorParallelMLP(nn.Module):
    """``y = fc2(gelu(fc1(x)))`` with the hidden features split over ``tp``."""

    fc1_weight: Annotated[nn.Parameter, S["tp", 0]]  # [hidden / tp, dim]
    fc1_bias: Annotated[nn.Parameter, S["tp", 0]]  # [hidden / tp]
    fc2_weight: Annotated[nn.Parameter, S["tp", 1]]  # [dim, hidden / tp]
    fc2_bias: Annotated[nn.Parameter, I["tp"]]  # [dim]

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        local = hidden // axis_size("tp")
        self.fc1_weight = nn.Parameter(torch.empty(local, dim))
        self.fc1_bias = nn.Parameter(torch.empty(local))
        self.fc2_weight = nn.Parameter(torch.empty(dim, local))
        self.fc2_bias = nn.Parameter(torch.empty(dim))

    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        x_tp = convert(x, "tp", src=I, dst=R)
        h = F.gelu(F.linear(x_tp, self.fc1_weight, self.fc1_bias))
        partial = reinterpret(F.linear(h, self.fc2_weight), "tp", src=V, dst=P)
        return all_reduce(partial, "tp", dst=I) + self.fc2_bias


def reference(params: Mapping[str, Tensor], x: Tensor) -> Tensor:
    """The same MLP on one device, with the full weights."""
    h = F.gelu(F.linear(x, params["fc1_weight"], params["fc1_bias"]))
    return F.linear(h, params["fc2_weight"], params["fc2_bias"])


EXAMPLE = ModuleExample(
    module=TensorParallelMLP,
    options={"dim": 8, "hidden": 16},
    mesh={"tp": 4},
    inputs=lambda generator: (torch.randn(2, 3, 8, generator=generator),),
    reference=reference,
)

if __name__ == "__main__":
    sys.exit(EXAMPLE.main())
