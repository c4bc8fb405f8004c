"""Errors can be silenced one line at a time, by error code."""
from typing import Annotated

import torch
from torch import Tensor

from spmd_types import I, P, R, V


def silenced(p: Annotated[Tensor, P["tp"]], i: Annotated[Tensor, I["tp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    a = torch.exp(p)  # type: ignore[spmd-partial]
    b = i @ v  # type: ignore[spmd-mix]
    c = i @ v  # type: ignore[spmd-partial]  # E: [spmd-mix] # E: [unused-ignore]

