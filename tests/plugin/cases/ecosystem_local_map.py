"""DTensor's local_map: the wrapped function's annotations checked against in/in_grad/out placements (local_map.py)."""
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.experimental import local_map

from spmd_types import I, P, R, S, V, Axis, all_reduce, reinterpret


def column(x: Annotated[Tensor, R["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 1]]:
    return F.linear(x, w)  # OK


def row(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, P["tp"]]:
    return reinterpret(F.linear(x, w), "tp", src=V, dst=P)  # OK


def reduced(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(row(x, w), "tp", src=P, dst=R)  # OK


def call_form(tp: Annotated[DeviceMesh, Axis["tp"]], mesh: Annotated[DeviceMesh, Axis["dp"], Axis["tp"]]) -> None:
    # Replicate() with its default gradient placement is I: the replicated input used with a shard of w is R.
    local_map(column, [Shard(1)], ([Replicate()], [Shard(0)]), device_mesh=tp)  # E: [spmd-boundary] local_map argument "x" of "column" on axis 'tp': declared R, but in_placements Replicate() with default gradient placement Replicate() gives I; fix: local_map(column, [Shard(1)], ([Replicate()], [Shard(0)]), device_mesh=tp, in_grad_placements=([Partial()], [Shard(0)])) replacing the local_map call
    local_map(column, [Shard(1)], ([Replicate()], [Shard(0)]), ([Partial()], [Shard(0)]), device_mesh=tp)  # OK
    local_map(column, out_placements=[Replicate(), Shard(1)], in_placements=([Replicate(), Replicate()], [Replicate(), Shard(0)]), in_grad_placements=([Replicate(), Replicate()], [Replicate(), Shard(0)]), device_mesh=mesh)  # E: [spmd-boundary] in_grad_placements=([Replicate(), Partial()], [Replicate(), Shard(0)]), device_mesh=mesh) replacing the local_map call
    local_map(row, [Partial()], ([Shard(1)], [Shard(1)]), device_mesh=tp)  # OK
    local_map(row, [Shard(0)], ([Shard(1)], [Shard(1)]), device_mesh=tp)  # E: [spmd-boundary] local_map output of "row" on axis 'tp': the local tensor is P, but placement Shard(0) with default gradient placement Shard(0) stands for S(0); the function could instead return redistribute(out, "tp", src=P, dst=S(0)); fix: local_map(row, [Partial()], ([Shard(1)], [Shard(1)]), device_mesh=tp) replacing the local_map call (no-op forward, no-op in backward)
    local_map(row, [Partial()], ([Replicate()], [Shard(1)]), device_mesh=tp)  # E: [spmd-boundary] declared S(1), but in_placements Replicate() with default gradient placement Replicate() gives I; a parameter of type S(1) needs placement Shard(1)
    # An R output has no placement with default gradients in torch 2.13: it must be made I first.
    local_map(reduced, [Replicate()], ([Shard(1)], [Shard(1)]), device_mesh=tp)  # E: [spmd-boundary] local_map output of "reduced" on axis 'tp': the local tensor is R, but placement Replicate() with default gradient placement Replicate() stands for I; the function could instead return redistribute(out, "tp", src=R, dst=I)


def pairs_without_a_type(tp: Annotated[DeviceMesh, Axis["tp"]]) -> None:
    local_map(row, [Partial()], ([Shard(1)], [Shard(1)]), ([Shard(1)], [Replicate()]), device_mesh=tp)  # E: [spmd-collective] a shard's gradient is a shard of the same dim, Shard(1); fix: local_map(row, [Partial()], ([Shard(1)], [Shard(1)]), ([Shard(1)], [Shard(1)]), device_mesh=tp) replacing the local_map call


def several(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 1]],
            n: int) -> tuple[Annotated[Tensor, P["tp"]], Annotated[Tensor, S["tp", 1]], int]:
    return row(x, w), x, n  # OK


def outputs(tp: Annotated[DeviceMesh, Axis["tp"]]) -> None:
    local_map(several, ([Partial()], [Shard(1)], None), ([Shard(1)], [Shard(1)], None), device_mesh=tp)  # OK
    local_map(several, ([Partial()], [Replicate()], None), ([Shard(1)], [Shard(1)], None), device_mesh=tp)  # E: [spmd-boundary] local_map output 1 of "several" on axis 'tp': the local tensor is S(1), but placement Replicate() with default gradient placement Replicate() stands for I; the function could instead return redistribute(out, "tp", src=S(1), dst=I); fix: local_map(several, ([Partial()], [Shard(1)], None), ([Shard(1)], [Shard(1)], None), device_mesh=tp) replacing the local_map call


def mesh_of() -> Annotated[DeviceMesh, Axis["tp"]]:
    raise NotImplementedError


@local_map(out_placements=[Shard(1)], in_placements=([Replicate()], [Shard(0)]), device_mesh=mesh_of())  # E: [spmd-boundary] local_map argument "x" of "decorated" on axis 'tp': declared R, but in_placements Replicate() with default gradient placement Replicate() gives I; fix: local_map(out_placements=[Shard(1)], in_placements=([Replicate()], [Shard(0)]), device_mesh=mesh_of(), in_grad_placements=([Partial()], [Shard(0)])) replacing the local_map call
def decorated(x: Annotated[Tensor, R["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 1]]:
    return F.linear(x, w)  # OK


@local_map(out_placements=[Shard(1)], in_placements=([Replicate()], [Shard(0)]),  # OK
           in_grad_placements=([Partial()], [Shard(0)]), device_mesh=mesh_of())
def decorated_right(x: Annotated[Tensor, R["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 1]]:
    return F.linear(x, w)  # OK


def with_mesh(mesh: Annotated[DeviceMesh, Axis["tp"]], x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
    return x  # OK


def unknown(tp: Annotated[DeviceMesh, Axis["tp"]], plain: DeviceMesh, placements: list[Shard], pair: tuple[Tensor, Tensor]) -> None:
    # A mesh left out or without dim names, placements in a variable: nothing is known, nothing is reported.
    local_map(column, [Shard(1)], ([Replicate()], [Shard(0)]))  # OK
    local_map(column, [Shard(1)], ([Replicate()], [Shard(0)]), device_mesh=plain)  # OK
    local_map(column, placements, ([Replicate()], [Shard(0)]), device_mesh=tp)  # OK
    local_map(column, [Shard(1)], (placements, [Shard(0)]), device_mesh=tp)  # OK
    # Parameters that are not tensors take None; a mesh parameter does not shift the others.
    local_map(with_mesh, [Replicate()], (None, [Replicate()]), device_mesh=tp)  # OK
    local_map(with_mesh, [Replicate()], (None, [Replicate()]), (None, [Partial()]), device_mesh=tp)  # E: [spmd-boundary] declared I, but in_placements Replicate() with in_grad_placements Partial() gives R; fix: local_map(with_mesh, [Replicate()], (None, [Replicate()]), (None, [Replicate()]), device_mesh=tp) replacing the local_map call
