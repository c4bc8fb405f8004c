"""A module that does not use spmd_types keeps mypy's own types: the plugin is inert."""
import torch
import torch.nn.functional as F
from torch import Tensor, nn


def plain(x: Tensor, w: Tensor, layer: nn.Linear) -> Tensor:
    y = F.linear(x, w)
    reveal_type(y)  # N: torch._tensor.Tensor
    z = torch.exp(y) + torch.ones(3)
    reveal_type(z)  # N: torch._tensor.Tensor
    reveal_type(x.T)  # N: torch._tensor.Tensor
    reveal_type(layer(x))  # N: Any
    return z.sum()
