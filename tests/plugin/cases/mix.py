"""The join of ordinary ops (docs/type-system.md): I does not mix with R, V or P; P does not mix with V."""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import I, P, R, V


def invariant(i: Annotated[Tensor, I["tp"]], r: Annotated[Tensor, R["tp"]], v: Annotated[Tensor, V["tp"]],
              p: Annotated[Tensor, P["tp"]], j: Annotated[Tensor, I["tp"]]) -> None:
    a = i + r  # E: [spmd-mix] + on axis 'tp': I does not mix with R; fix: convert(i, "tp", src=I, dst=R) (no-op forward, all-reduce in backward)
    b = i @ v  # E: [spmd-mix] I does not mix with V
    c = i * p  # E: [spmd-mix] I does not mix with P
    d = F.linear(v, i)  # E: [spmd-mix] convert(i, "tp", src=I, dst=R)
    reveal_type(i + j)  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(i * 2)  # N: SpmdTensor[Literal['tp:I']]


def partial_and_varying(p: Annotated[Tensor, P["tp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    a = p + v  # E: [spmd-mix] P (a pending sum) does not mix with V
    b = p * v  # E: [spmd-mix] P (a pending sum) does not mix with V
    c = torch.cat([p, v])  # E: [spmd-mix] fix: all_reduce(p, "tp", src=P, dst=R)


def axes_are_independent(x: Annotated[Tensor, P["dp"], V["tp"]], y: Annotated[Tensor, P["dp"], R["tp"]]) -> None:
    reveal_type(x + y)  # N: SpmdTensor[Literal['dp:P'] | Literal['tp:V']]
    z = x * y  # E: [spmd-partial] * on axis 'dp': a product of two P factors


def weight_and_bias_both_need_a_cast(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, I["tp"]],
                                     b: Annotated[Tensor, I["tp"]]) -> None:
    y = F.linear(x, w, b)  # E: [spmd-mix] I does not mix with V; fix: convert(w, "tp", src=I, dst=R) and convert(b, "tp", src=I, dst=R) (no-op forward, all-reduce in backward each)
