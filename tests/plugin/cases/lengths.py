"""A shard's length is the length of the rank's piece: V on its axis, not the global length.

``x.shape[0]`` of an ``S(0)`` tensor is the same number on every rank, but on one device the same
expression reads the global length (spmd_types/typesystem/numbers.py).  Used with the rank's own
data it is right; where the global length is meant (a normaliser of a replicated value, positions
under context parallelism) the result is V and is reported where it meets R, I or P.  The length
times the axis's size is the global length; sizes given to view/reshape/zeros describe the
rank's own piece and are not read.  tests/plugin/test_case_numerics.py runs these on simulated ranks.
"""
from __future__ import annotations

import math
from typing import Annotated

import torch
from torch import Tensor

from spmd_types import P, R, S, V, all_reduce, axis_size


def mean_by_the_local_length(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    total = all_reduce(x.sum(), "tp", src=P, dst=R)
    return total / x.shape[0]  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def mean_by_an_unpacked_length(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    rows, cols = x.shape
    total = all_reduce(x.sum(), "tp", src=P, dst=R)
    return total / (rows * cols)  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def mean_by_the_element_count(x: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(x.sum(), "tp", src=P, dst=R) / x.numel()  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def scaled_by_size(x: Annotated[Tensor, S["tp", 0]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return w * x.size(0)  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def positions_of_the_local_length(x: Annotated[Tensor, S["cp", 0]], pos: Annotated[Tensor, R["cp"]]) -> Annotated[Tensor, R["cp"]]:
    return pos[: len(x)]  # E: [spmd-boundary] return value on axis 'cp': expected R, got V


def arange_of_the_local_length(x: Annotated[Tensor, S["cp", 1]], w: Annotated[Tensor, R["cp"]]) -> Annotated[Tensor, R["cp"]]:
    return w * torch.arange(x.shape[-1]).sum()  # E: [spmd-boundary] return value on axis 'cp': expected R, got V


def local_length_into_a_pending_sum(x: Annotated[Tensor, S["tp", 1]], p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return p / math.sqrt(x.shape[1])  # E: [spmd-mix] / on axis 'tp': P (a pending sum) does not mix with V (per-rank data): math.sqrt(x.shape[1]) reads the length of this rank's piece of a shard; for the global length, multiply it by axis_size("tp")


def mean_by_the_global_length(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    total = all_reduce(x.sum(), "tp", src=P, dst=R)
    return total / (x.shape[0] * axis_size("tp"))  # OK


def mean_by_a_named_global_length(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    rows, cols = x.shape
    world = axis_size("tp")
    total = all_reduce(x.sum(), "tp", src=P, dst=R)
    return total / (world * rows * cols)  # OK


def length_of_an_unsharded_dim(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 0]]:
    return x / x.shape[1] / math.sqrt(x.size(-1))  # OK


def length_of_a_replicated_tensor(w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return w / len(w) * w.numel()  # OK


def sizes_of_the_rank_s_piece(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 0]]:
    rows, cols = x.shape
    return x.view(rows, 2, cols // 2).sum(1) + torch.zeros(x.shape[0], 2)  # OK


def a_local_mean(v: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, V["tp"]]:
    return v.sum(0) / v.shape[0]  # OK


def a_shard_s_local_mean(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, V["tp"]]:
    return x.sum(0) / x.shape[0]  # OK: V, the mean of the rank's rows
