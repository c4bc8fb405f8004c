"""Without allow_redefinition: variables can still be re-bound; ops and calls are still checked."""
from typing import Annotated

import torch
from torch import Tensor

from spmd_types import P, R, V, all_reduce


def consume(x: Annotated[Tensor, R["tp"]]) -> None:
    raise NotImplementedError


def rebind(p: Annotated[Tensor, P["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    h = p @ w
    reveal_type(h)  # N: SpmdTensor[Any]
    e = torch.exp(h)  # E: [spmd-partial] P (a pending sum) through a non-linear op
    consume(h)  # E: [spmd-boundary] expected R, got P
    h = all_reduce(h, "tp", dst=R)  # OK
    consume(h)  # OK
    return h  # OK


def return_of_a_call(v: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return v * 2  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def declared_parameter(x: Annotated[Tensor, V["tp"]]) -> None:
    x = all_reduce(x, "tp", dst=R)  # E: [spmd-boundary] value of a declared type on axis 'tp': expected V, got R


def make_partial() -> Annotated[Tensor, P["tp"]]:
    raise NotImplementedError


def rebind_a_call_result() -> Annotated[Tensor, R["tp"]]:
    a = make_partial()
    a = all_reduce(a, "tp", dst=R)  # OK
    return a
