"""Code generic in its tensors (``def forward(self, x: T) -> T``): mypy binds T at each use."""
from typing import Annotated, TypeVar

import torch
from torch import Tensor

from spmd_types import I, R, V, all_reduce

T = TypeVar("T", bound=Tensor)


def identity_dropout(x: T) -> T:
    return x


class Identity(torch.nn.Module):
    def forward(self, x: T) -> T:
        return x


class Plain(torch.nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


def uses(r: Annotated[Tensor, R["tp"]], v: Annotated[Tensor, V["tp"], I["dp"]]) -> Annotated[Tensor, I["tp"]]:
    reveal_type(identity_dropout(r))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(Identity()(v))  # N: SpmdTensor[Literal['dp:I'] | Literal['tp:V']]
    # A module without SPMD types or tensor type variables is left as mypy types it.
    reveal_type(Plain()(v))  # N: Revealed type is "Any"
    h = Identity()(r)
    return all_reduce(h, "tp", src=V, dst=I)  # E: [spmd-collective] the input is R but all_reduce was told src=V
