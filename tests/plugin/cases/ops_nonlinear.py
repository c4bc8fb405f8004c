"""Non-linear ops, and ops missing from the op table (docs/type-system.md), reject P."""
from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import P, R, Spmd, V

Pt = Spmd[Tensor, Literal["tp:P"]]


def nonlinear(p: Pt, r: Annotated[Tensor, R["tp"]]) -> None:
    a = torch.exp(p)  # E: [spmd-partial] torch.exp on axis 'tp': P (a pending sum) through a non-linear op
    b = F.relu(p)  # E: [spmd-partial] torch.nn.functional.relu
    c = p.pow(2)  # E: [spmd-partial] .pow
    d = p ** 2  # E: [spmd-partial] **
    e = p.abs()  # E: [spmd-partial] .abs
    f = p.max()  # E: [spmd-partial] .max
    g = torch.softmax(p, -1)  # E: [spmd-partial] torch.softmax
    h = p.norm()  # E: [spmd-partial] .norm
    i = F.layer_norm(p, (4,))  # E: [spmd-partial] layer_norm
    j = p > 0  # E: [spmd-partial] >
    k = torch.sigmoid(p)  # E: [spmd-partial] fix: all_reduce(p, "tp", src=P, dst=R)
    l = F.silu(r)  # OK
    m = torch.rsqrt(r)  # OK


def spelled_operands(p: Pt) -> None:
    a = p > 0  # E: [spmd-partial] > on axis 'tp': P (a pending sum) as an index, mask, condition or comparison operand; fix: all_reduce(p, "tp"
    # No fix: a call around the in-place target p would not write back into it.
    p += 1  # E: [spmd-partial] += on axis 'tp': P plus a non-partial term (weak), which would be added once per rank
