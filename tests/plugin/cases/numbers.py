"""Python numbers read out of tensors, or computed from the rank's index, keep an SPMD type.

A number that every rank shares is a constant; one read out of per-rank data (``.item()``,
``float(t)``, ``t.tolist()``) or computed from ``axis_index`` is not, also through arithmetic,
Python functions, local variables and attributes of self (spmd_types/typesystem/numbers.py).
"""
from __future__ import annotations

import math
from typing import Annotated

import torch
from torch import Tensor, nn
from torch.distributed import ProcessGroup

from spmd_types import Axis, I, P, R, V, all_reduce, axis_index


def scaled_by_a_local_mean(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    s = x.mean().item()
    return w * s  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def scaled_by_a_reduced_mean(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    s = all_reduce(x.mean(), "tp", src=V, dst=R).item()
    return w * s  # OK


def a_summand_stays_a_summand(p: Annotated[Tensor, P["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return w * (2.0 * float(p.sum()))  # OK


def a_summand_through_a_function(p: Annotated[Tensor, P["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return w * math.sqrt(p.sum().item())  # E: [spmd-partial] math.sqrt on axis 'tp': P (a pending sum) through a non-linear op, in a Python number: reduce the tensor before reading the number out of it


def a_summand_plus_one(p: Annotated[Tensor, P["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    n = p.sum().item() + 1  # E: [spmd-partial] + on axis 'tp': P plus a non-partial term (weak), which would be added once per rank, in a Python number: reduce the tensor before reading the number out of it
    return w * n


def an_element_of_tolist(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    first = x.tolist()[0]
    return w * float(first)  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def assigned_on_one_path(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, R["tp"]], flag: bool) -> Annotated[Tensor, R["tp"]]:
    scale = 1.0
    if flag:
        scale = x.max().item()
    return w * scale  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def the_rank_selects_a_slice(pos: Annotated[Tensor, R["cp"]]) -> Annotated[Tensor, R["cp"]]:
    start = axis_index("cp") * 4
    return pos[start : start + 4]  # E: [spmd-boundary] return value on axis 'cp': expected R, got V


def the_rank_selects_a_slice_declared_v(pos: Annotated[Tensor, R["cp"]]) -> Annotated[Tensor, V["cp"]]:
    start = axis_index("cp") * 4
    return pos.narrow(0, start, 4)  # OK


def positions_from_the_rank(n: int) -> Annotated[Tensor, V["cp"]]:
    first = axis_index("cp") * n
    return torch.arange(first, first + n)  # OK


def positions_declared_replicated(n: int) -> Annotated[Tensor, R["cp"]]:
    first = axis_index("cp") * n
    return torch.arange(first, first + n)  # E: [spmd-boundary] return value on axis 'cp': expected R, got V


def invariant_offset_by_the_rank(x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, V["tp"]]:
    offset = axis_index("tp") * 8
    return x - offset  # E: [spmd-mix] - on axis 'tp': I does not mix with V


def a_replicated_number_is_a_constant(x: Annotated[Tensor, R["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    norm = x.norm().item()
    return w / max(norm, 1e-6)  # OK


def a_loop_counter_is_a_constant(w: Annotated[Tensor, R["tp"]], steps: int) -> Annotated[Tensor, R["tp"]]:
    total = 0
    for step in range(steps):
        total = total + step
    return w * total  # OK


def the_rank_on_a_group(pos: Annotated[Tensor, R["cp"]], cp: Annotated[ProcessGroup, Axis["cp"]]) -> Annotated[Tensor, R["cp"]]:
    return pos[axis_index(cp)]  # E: [spmd-boundary] return value on axis 'cp': expected R, got V


class Window(nn.Module):
    """Numbers kept in attributes: ``self.start`` is the rank's, ``self.n`` a constant."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.start = axis_index("cp") * n

    def forward(self, pos: Annotated[Tensor, R["cp"]]) -> Annotated[Tensor, R["cp"]]:
        return pos[self.start : self.start + self.n]  # E: [spmd-boundary] return value on axis 'cp': expected R, got V

    def positions(self) -> Annotated[Tensor, R["cp"]]:
        return torch.arange(self.start, self.start + self.n)  # E: [spmd-boundary] return value on axis 'cp': expected R, got V

    def rows(self, pos: Annotated[Tensor, R["cp"]]) -> Annotated[Tensor, V["cp"]]:
        return pos.narrow(0, self.start, self.n)  # OK

    def first_rows(self, pos: Annotated[Tensor, R["cp"]]) -> Annotated[Tensor, R["cp"]]:
        return pos[: self.n]  # OK: a constant every rank shares
