"""PartitionSpec as annotation metadata: the per-axis types it stands for, and malformed specs.

Each axis that cuts dim i is S(i) (every axis of a multi-axis entry too), each partial axis P; the
axes the spec does not name are left to other markers (or R on the configured axes).
"""
from typing import Annotated

from torch import Tensor

import spmd_types as spmd
from spmd_types import I, P, PartitionSpec, R, S, all_gather, all_reduce

DP = "dp"


def shards(
    x: Annotated[Tensor, PartitionSpec("dp", None, ("tp", "cp"))],
) -> Annotated[Tensor, S["dp", 0], S["tp", 2], S["cp", 2]]:
    return x * 2  # OK


def multi_axis_entry(x: Annotated[Tensor, PartitionSpec(None, ("tp", "cp"))]) -> Annotated[Tensor, S["cp", 0]]:
    return x * 2  # E: [spmd-boundary] expected S(0), got S(1)


def partial_and_markers(
    x: Annotated[Tensor, PartitionSpec(None, "dp", partial="tp"), I["ep"]],
) -> Annotated[Tensor, S["dp", 1], P["tp"], I["ep"]]:
    return x * 2  # OK


def partial_is_not_replicated(x: Annotated[Tensor, PartitionSpec(partial="tp")]) -> Annotated[Tensor, R["tp"]]:
    return x * 2  # E: [spmd-boundary]


def qualified(x: Annotated[Tensor, spmd.PartitionSpec("tp")]) -> Annotated[Tensor, S["tp", 0]]:
    return x  # OK


def gathered(
    x: Annotated[Tensor, PartitionSpec(None, "tp")],
) -> Annotated[Tensor, PartitionSpec(None, None)]:
    return all_gather(x, "tp", src=S(1), dst=R)  # OK


def wrong_dim(x: Annotated[Tensor, PartitionSpec("tp", None)]) -> Annotated[Tensor, PartitionSpec(None, "tp")]:
    return x * 2  # E: [spmd-boundary] expected S(1), got S(0)


def reduced(x: Annotated[Tensor, PartitionSpec("dp", partial="tp")]) -> Annotated[Tensor, PartitionSpec("dp"), R["tp"]]:
    return all_reduce(x, "tp", src=P, dst=R)  # OK


def repeated(x: Annotated[Tensor, PartitionSpec("tp", "tp")]) -> None: ...  # E: [spmd-annotation] appears twice


def not_literal(x: Annotated[Tensor, PartitionSpec(DP, None)]) -> None: ...  # E: [spmd-annotation] literal entries


def conflicting(x: Annotated[Tensor, PartitionSpec("tp"), R["tp"]]) -> None: ...  # E: [spmd-annotation] annotated twice


def bad_entry(x: Annotated[Tensor, PartitionSpec(("tp", 2))]) -> None: ...  # E: [spmd-annotation] block count
