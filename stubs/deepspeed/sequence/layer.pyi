# The signature of DeepSpeed 0.19.8's sequence-parallel all-to-all. The
# spmd_mypy plugin types each call as the all_to_all it is equivalent to
# (spmd_types.typesystem.ecosystem); the module's other names are untyped here.
from typing import Any

import torch
from torch import Tensor
from torch.distributed import ProcessGroup

class _SeqAllToAll(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        group: ProcessGroup,
        input: Tensor,
        scatter_idx: int,
        gather_idx: int,
        batch_dim_idx: int,
        stream: Any = None,
        handle: Any = None,
        type: Any = None,
        is_fwd: bool = True,
        num_kv_heads: int | None = None,
    ) -> Tensor: ...
    @staticmethod
    def backward(ctx: Any, *grad_output: Tensor) -> tuple[Tensor | None, ...]: ...
    @classmethod
    def apply(
        cls,
        group: ProcessGroup,
        input: Tensor,
        scatter_idx: int,
        gather_idx: int,
        batch_dim_idx: int,
        stream: Any = None,
        handle: Any = None,
        type: Any = None,
        is_fwd: bool = True,
        num_kv_heads: int | None = None,
    ) -> Tensor: ...

def __getattr__(name: str) -> Any: ...
