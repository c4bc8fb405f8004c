"""Ops that count or average over the rank's own data besides computing their result.

``batch_norm(..., training=True)`` updates its running mean and variance in place with statistics of the
batch it is given: of a batch shard, this rank's own, so running statistics declared the same on every
rank drift apart.  ``embedding(..., scale_grad_by_freq=True)`` divides each row's gradient by how often
its index occurs among this rank's indices, not the whole batch's.  tests/plugin/test_case_numerics.py
runs these on simulated ranks.
"""
from __future__ import annotations

from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import R, S


def running_statistics_of_a_batch_shard(x: Annotated[Tensor, S["dp", 0]], running: Annotated[Tensor, R["dp"]]) -> Annotated[Tensor, R["dp"]]:
    mean, var = running[0].detach().clone(), running[0].detach().abs() + 1
    F.batch_norm(x, mean, var, training=True)  # E: [spmd-inplace] running_mean is updated in place with statistics of type V # E: [spmd-inplace] running_var is updated in place
    return mean * running[0]  # the running mean, with a gradient to compare


def running_statistics_in_evaluation(x: Annotated[Tensor, S["dp", 0]], running: Annotated[Tensor, R["dp"]]) -> Annotated[Tensor, S["dp", 0]]:
    mean, var = running[0].detach().clone(), running[0].detach().abs() + 1
    return F.batch_norm(x, mean, var, training=False)  # OK


def running_statistics_of_the_whole_batch(x: Annotated[Tensor, R["dp"]], running: Annotated[Tensor, R["dp"]]) -> Annotated[Tensor, R["dp"]]:
    mean, var = running[0].detach().clone(), running[0].detach().abs() + 1
    F.batch_norm(x, mean, var, training=True)  # OK
    return mean * running[0]  # the running mean, with a gradient to compare


def frequencies_of_a_batch_shard(ids: Annotated[Tensor, S["dp", 0]], table: Annotated[Tensor, R["dp"]]) -> Annotated[Tensor, S["dp", 0]]:
    index = (ids.detach().abs() * 2).long().clamp(max=3)
    return F.embedding(index, table, scale_grad_by_freq=True)  # E: [spmd-mix] scale_grad_by_freq=True counts this rank's indices (input), S(0) on this axis


def frequencies_of_the_whole_batch(ids: Annotated[Tensor, R["dp"]], table: Annotated[Tensor, R["dp"]]) -> Annotated[Tensor, R["dp"]]:
    index = (ids.detach().abs() * 2).long().clamp(max=3)
    return F.embedding(index, table, scale_grad_by_freq=True)  # OK


def rows_of_a_batch_shard(ids: Annotated[Tensor, S["dp", 0]], table: Annotated[Tensor, R["dp"]]) -> Annotated[Tensor, S["dp", 0]]:
    index = (ids.detach().abs() * 2).long().clamp(max=3)
    return torch.nn.functional.embedding(index, table)  # OK
