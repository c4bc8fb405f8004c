"""reinterpret's result is its input: writing into one writes into the other.

So an in-place write into the result must fit the input's type too (spmd_types/typesystem/join.py,
writes_through); ``convert`` copies.
tests/plugin/test_case_numerics.py runs these on simulated ranks.
"""
from __future__ import annotations

from typing import Annotated

from torch import Tensor

from spmd_types import R, S, V, convert, reinterpret


def per_rank_data_written_through(x: Annotated[Tensor, R["tp"]], s: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    z = x * 1
    y = reinterpret(z, "tp", src=R, dst=V)
    y += s.sum(0)  # E: [spmd-inplace] += on axis 'tp': writes a value of type V into a tensor of type R; compute it out of place (it is the input of the reinterpret it came from)
    return z


def a_copy_written_into(x: Annotated[Tensor, R["tp"]], s: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    z = x * 1
    y = convert(z, "tp", src=R, dst=S(0))
    y.add_(s)  # OK: convert copies
    return z


def scaled_through(x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    z = x * 1
    y = reinterpret(z, "tp", src=R, dst=V)
    y.mul_(2.0)  # OK: 2 z on every rank
    return z
