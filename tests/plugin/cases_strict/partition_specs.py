"""A PartitionSpec under configured axes ("dp", "tp"): the axes it does not name are R, and it names known axes only."""
from typing import Annotated

from torch import Tensor

from spmd_types import P, PartitionSpec, R, all_reduce


def replicated_elsewhere(x: Annotated[Tensor, PartitionSpec("dp", None)]) -> Annotated[Tensor, PartitionSpec("dp", None)]:
    return x * 2  # OK: strict_axes is satisfied, tp is R


def tp_is_replicated(x: Annotated[Tensor, PartitionSpec("dp", None)]) -> Annotated[Tensor, PartitionSpec("dp", None)]:
    return all_reduce(x, "tp", src=P, dst=R)  # E: [spmd-collective] the input is R


def unknown_axis(x: Annotated[Tensor, PartitionSpec("ep")]) -> None: ...  # E: [spmd-axis] unknown mesh axis 'ep'
