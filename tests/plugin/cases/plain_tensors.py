"""In a module that uses spmd_types, tensors without SPMD types stay plain tensors."""
from typing import Annotated

import torch
from torch import Tensor, nn

from spmd_types import R, V


def consume(parts: dict[str, Tensor], items: list[Tensor]) -> None:
    raise NotImplementedError


def containers(full: dict[str, Tensor], xs: list[Tensor]) -> None:
    clones = {k: v.clone() for k, v in full.items()}
    reveal_type(clones)  # N: dict[str, torch._tensor.Tensor]
    consume(clones, [x * 2 for x in xs])  # OK


def fresh_into_declarations(n: int) -> Annotated[Tensor, V["tp"]]:
    w: Annotated[Tensor, R["tp"]] = torch.randn(n)  # OK
    p: Annotated[nn.Parameter, V["tp"]] = nn.Parameter(torch.empty(n))  # OK
    return torch.empty(n)  # OK


def constant_buffers_for_torch_distributed(x: Tensor) -> None:
    import torch.distributed as dist

    # Constants are SPMD-typed (weak) here; torch's list parameters take them all the same.
    bufs = [torch.zeros(4)]
    dist.gather(x, bufs)  # OK
    dist.all_gather(bufs, x)  # OK
    torch.cat([torch.zeros(4), torch.ones(4)])  # OK
