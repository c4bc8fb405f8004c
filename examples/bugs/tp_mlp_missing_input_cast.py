"""BUG: the tensor-parallel MLP without its input cast (correct: ``examples/tp_mlp.py``).

``x`` is invariant over ``tp``: every rank holds it, and its gradient must be
whole on every rank.  But each rank computes only the part of that gradient
that flows through its own slice of ``fc1``; the parts must be summed in the
backward pass, which is what ``convert(x, "tp", src=I, dst=R)`` (Megatron's
``copy_to_tensor_model_parallel_region``) does.  Without it the forward pass is
unchanged and every rank silently keeps only its own part of ``x``'s gradient,
so every layer below this one trains on a wrong gradient.

The plugin rejects mixing an invariant tensor with a sharded weight and names
the missing cast.  Run it to see the wrong gradient::

    python -m examples.bugs.tp_mlp_missing_input_cast
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from examples import tp_mlp
from spmd_types import I, P, V, all_reduce, reinterpret


class MLPWithoutInputCast(tp_mlp.TensorParallelMLP):
    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        h = F.gelu(F.linear(x, self.fc1_weight, self.fc1_bias))  # E: [spmd-mix] I does not mix with S(0)
        partial = reinterpret(F.linear(h, self.fc2_weight), "tp", src=V, dst=P)
        return all_reduce(partial, "tp", dst=I) + self.fc2_bias


EXAMPLE = replace(tp_mlp.EXAMPLE, module=MLPWithoutInputCast)
WRONG = ("grad x (input)",)  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
