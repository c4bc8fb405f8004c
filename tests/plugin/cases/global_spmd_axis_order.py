"""@global_spmd keeps the order of the axes of a multi-axis entry, which the per-axis types forget.

PartitionSpec(("dp", "tp")) and PartitionSpec(("tp", "dp")) are dp:S(0), tp:S(0) both, but each rank
holds a different piece of dim 0.  The order a spec declares rides with the value through ops; an op
whose operands order the axes of one dim differently, and a value going into a declaration (a return
value, an argument, redistribute_spec's src) of another order, are errors in a global function.
"""
from typing import Annotated

import torch
from torch import Tensor

import spmd_types as spmd
from spmd_types import PartitionSpec, R, global_spmd


@global_spmd
def added_in_different_orders(
    x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)], y: Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]
) -> Tensor:
    return x + y  # E: [spmd-global] the operands cut a dim over the same axes in different orders


@global_spmd
def contracted_in_different_orders(
    x: Annotated[Tensor, PartitionSpec(None, ("dp", "tp"))], w: Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]
) -> Tensor:
    h = torch.relu(w)  # OK: keeps the order
    return spmd.matmul(x, h, out_partial_axes=("dp", "tp"))  # E: [spmd-global] different orders


@global_spmd
def returned_in_another_order(
    x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)]
) -> Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]:
    return x  # E: [spmd-global] return value on axis 'dp': the value's dim is cut over ('dp', 'tp') in this order, and the declaration says ('tp', 'dp')


@global_spmd
def op_result_returned_in_another_order(
    x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)]
) -> Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]:
    return x * 2.0  # E: [spmd-global] the same per-axis types, but each rank holds a different piece of the dim


def takes_tp_major(x: Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]) -> Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]:
    return x  # OK


@global_spmd
def passed_in_another_order(x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)]) -> Tensor:
    return takes_tp_major(x)  # E: [spmd-global] argument "x" of "takes_tp_major" on axis 'dp'


@global_spmd
def redistributed_from_the_wrong_order(
    x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)]
) -> Annotated[Tensor, PartitionSpec(None, None), R["dp"], R["tp"]]:
    return spmd.redistribute_spec(x, PartitionSpec(("tp", "dp"), None), PartitionSpec(None, None))  # E: [spmd-global] src says ('tp', 'dp')


@global_spmd
def reordered(
    x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)], y: Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]
) -> Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]:
    z = spmd.redistribute_spec(x, PartitionSpec(("dp", "tp"), None), PartitionSpec(("tp", "dp"), None))  # OK
    w = torch.relu(z + y)  # OK: one order now
    return takes_tp_major(w)  # OK


def local_functions_keep_per_axis_types(
    x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)]
) -> Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]:
    return x  # OK: local SPMD compares per-axis types


@global_spmd
def transposed_into_another_order(
    x: Annotated[Tensor, PartitionSpec(None, ("dp", "tp"))]
) -> Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]:
    return x.T  # E: [spmd-global] the value's dim is cut over ('dp', 'tp') in this order


@global_spmd
def assigned_in_another_order(x: Annotated[Tensor, PartitionSpec(("dp", "tp"), None)]) -> None:
    y: Annotated[Tensor, PartitionSpec(("tp", "dp"), None)] = x * 2.0  # E: [spmd-global] value of a declared type on axis 'dp'
