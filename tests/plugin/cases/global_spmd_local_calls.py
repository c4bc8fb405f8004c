"""A global function calling a local one: the callee's declared return type is where its value enters.

A local function may return per-rank data (V), which has no meaning in global SPMD: the call is an
error in a global function, where the value enters, and not in a local one.  A callee declaring R, P
or S(i) hands over a global value.
"""
from typing import Annotated

import torch
from torch import Tensor, nn

from spmd_types import P, PartitionSpec, R, S, V, all_reduce, global_spmd, reinterpret


def local_product(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, V["tp"]]:
    return x @ w  # OK: each rank's product, in local SPMD


def local_summands(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, P["tp"]]:
    return reinterpret(x @ w, "tp", src=V, dst=P)  # OK: declared summands


def local_rows(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 0]]:
    return torch.relu(x)  # OK


class Scale(nn.Module):
    def forward(self, x: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, V["tp"]]:
        return x * 2  # OK


@global_spmd
def product_enters_as_varying(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec("tp", None)]
) -> Tensor:
    return local_product(x, w)  # E: [spmd-global] call of "local_product" on axis 'tp': it returns V on 'tp'


@global_spmd
def module_output_enters_as_varying(x: Annotated[Tensor, PartitionSpec("dp", "tp")]) -> Tensor:
    return Scale()(x)  # E: [spmd-global] declare Scale.forward's return value R, I, P or S(i) on 'tp'


@global_spmd
def summands_enter_as_partial(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec("tp", None)]
) -> Annotated[Tensor, PartitionSpec("dp", None), R["tp"]]:
    y = local_summands(x, w)  # OK: P on tp, a global value
    return all_reduce(y, "tp", src=P, dst=R)  # OK


@global_spmd
def rows_enter_as_shards(x: Annotated[Tensor, PartitionSpec("tp", None)]) -> Annotated[Tensor, PartitionSpec("tp", None)]:
    return local_rows(x)  # OK


def local_caller(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, V["tp"]]:
    return local_product(x, w)  # OK: local SPMD takes V as it is
