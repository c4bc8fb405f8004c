"""BUG: backward from an all-reduced (replicated) loss (correct: ``examples/data_parallel_loss.py``).

Summing the loss over ``dp`` before ``backward()`` looks tidy: every rank
then holds the global loss, the one that is logged.  But ``backward()``
seeds a gradient of 1 on *every* rank, and the backward of that all-reduce
sums the seeds: each rank's share of the loss gets gradient ``dp`` instead of
1, and every parameter gradient comes out ``dp`` times too large.  With Adam
the error hides in the normalization; with SGD it is a silently larger
learning rate.

The plugin rejects ``backward()`` from a replicated loss.  Run it to see the
wrong gradients::

    python -m examples.bugs.dp_backward_from_replicated_loss
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from examples import data_parallel_loss as dpl
from spmd_types import R, V, all_reduce


def train_step_replicated_loss(
    model: dpl.TokenClassifier, micro_batches: Sequence[tuple[dpl.Batch, dpl.Batch]]
) -> Annotated[Tensor, R["dp"]]:
    count = all_reduce(torch.stack([(y != dpl.IGNORE).sum() for _, y in micro_batches]).sum(), "dp", src=V, dst=R)
    logged: Annotated[Tensor, R["dp"]] = torch.zeros(())
    for tokens, targets in micro_batches:
        summed = F.cross_entropy(model(tokens), targets, ignore_index=dpl.IGNORE, reduction="sum")
        loss = all_reduce(summed, "dp", src=V, dst=R) / count
        loss.backward()  # E: [spmd-backward]
        logged = logged + loss.detach()
    dpl.synchronize_gradients(model)
    return logged


EXAMPLE = replace(dpl.EXAMPLE, step=train_step_replicated_loss)
WRONG = ("grad embedding", "grad output")  # what the simulated run gets wrong

if __name__ == "__main__":
    print(EXAMPLE.run())
