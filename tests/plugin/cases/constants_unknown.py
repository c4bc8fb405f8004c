"""Constants (scalars, factories, detach) and unknown axes (gradual typing)."""
from typing import Annotated

import torch
from torch import Tensor

from spmd_types import I, P, R, V


def constants(r: Annotated[Tensor, R["tp"]], i: Annotated[Tensor, I["tp"]], v: Annotated[Tensor, V["tp"]],
              p: Annotated[Tensor, P["tp"]]) -> None:
    reveal_type(r + 1)  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(i * 2.0)  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(v + torch.ones(3))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(i + torch.arange(3))  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(i + r.detach())  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(p + torch.zeros(3))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p + 0)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p * torch.full((3,), 2.0))  # N: SpmdTensor[Literal['tp:P']]
    a = i + r.detach() * 2  # OK
    b = p + r.detach()  # E: [spmd-partial] P plus a non-partial term (weak)
    c = torch.ones(3) + torch.ones(3)  # OK


def unknown_axes(x: Annotated[Tensor, P["tp"]], y: Tensor, z: Annotated[Tensor, V["dp"]]) -> None:
    reveal_type(x + y)  # N: SpmdTensor[Any]
    a = torch.exp(x * y)  # OK
    reveal_type(x + z)  # N: SpmdTensor[Any]
    b = torch.exp(x + z)  # OK
    c = torch.randn(3) + x  # OK
    reveal_type(torch.empty(3) * x)  # N: SpmdTensor[Any]


def rank_dependent_numbers(x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    from spmd_types import axis_index

    offset = x + axis_index("tp")
    reveal_type(offset)  # N: SpmdTensor[Literal['tp:V']]
    return x * int(axis_index("tp")) * 2  # E: [spmd-boundary] return value on axis 'tp': expected R, got V
