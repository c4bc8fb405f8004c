"""Multilinear ops (docs/type-system.md): exactly one P factor, the others R or constants."""
from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import P, R, Spmd, V

Pt = Spmd[Tensor, Literal["tp:P"]]
Rt = Spmd[Tensor, Literal["tp:R"]]
Vt = Spmd[Tensor, Literal["tp:V"]]


def one_partial_factor(p: Pt, r: Rt, w: Rt) -> None:
    reveal_type(p * r)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(r * p)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p * 2)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(0.5 * p)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p @ w)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.matmul(w, p))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.mm(p, w))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.bmm(p, w))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.einsum("ij,jk->ik", p, w))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(F.linear(p, w))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p / r)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p / 4)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.div(p, r))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.addmm(p, p, w))  # N: SpmdTensor[Literal['tp:P']]


def two_partial_factors(p: Pt, q: Pt, r: Rt, w: Rt, b: Rt) -> None:
    a = p * q  # E: [spmd-partial] a product of two P factors
    c = p @ q  # E: [spmd-partial] a product of two P factors
    d = torch.einsum("ij,jk->ik", p, q)  # E: [spmd-partial] a product of two P factors
    e = r / p  # E: [spmd-partial] P (a pending sum) as an argument the op is not linear in
    f = torch.div(p, r, rounding_mode="floor")  # E: [spmd-partial] through a non-linear op
    g = F.linear(p, w, b)  # E: [spmd-partial] P plus a non-partial term (R)
    h = torch.addmm(r, p, w)  # E: [spmd-partial] P plus a non-partial term (R)
    i = F.linear(p, w)  # OK
    j = p // 2  # E: [spmd-partial] through a non-linear op


def row_parallel(x: Vt, w: Vt, b: Rt) -> None:
    y = F.linear(x, w)
    reveal_type(y)  # N: SpmdTensor[Literal['tp:V']]
    z = F.linear(x, w, b)  # OK
