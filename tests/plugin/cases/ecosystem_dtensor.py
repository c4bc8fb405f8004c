"""DTensor's from_local / redistribute / to_local: placements on named mesh dims become local types (placements.py)."""
from typing import Annotated

from torch import Tensor
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

from spmd_types import I, P, R, S, V, Axis, all_reduce

Mesh = Annotated[DeviceMesh, Axis["dp"], Axis["tp"]]


def meshes(mesh: Annotated[DeviceMesh, Axis["dp"], Axis["tp"]]) -> None:
    reveal_type(mesh)  # N: NamedMesh[Literal['dp, tp']]
    reveal_type(mesh["tp"])  # N: NamedMesh[Literal['tp']]
    made = init_device_mesh("cpu", (2, 4), mesh_dim_names=("dp", "tp"))
    reveal_type(made)  # N: NamedMesh[Literal['dp, tp']]


def sharded_weight(w: Annotated[Tensor, S["tp", 0], I["dp"]], mesh: Annotated[DeviceMesh, Axis["dp"], Axis["tp"]],
                   a: Annotated[Tensor, V["tp"], I["dp"]]) -> Annotated[Tensor, V["tp"], I["dp"]]:
    d = DTensor.from_local(w, mesh, [Replicate(), Shard(0)])  # OK
    reveal_type(d)  # N: PlacedDTensor[Literal['dp:Replicate(), tp:Shard(0)']]
    full = d.redistribute(mesh, [Replicate(), Replicate()])
    reveal_type(full)  # N: PlacedDTensor[Literal['dp:Replicate(), tp:Replicate()']]
    # The default gradient placement of Replicate() is Replicate(): the local tensor is I.
    reveal_type(full.to_local())  # N: SpmdTensor[Literal['dp:I'] | Literal['tp:I']]
    bad = full.to_local()
    _ = bad @ a  # E: [spmd-mix] I does not mix with V
    wrong: Annotated[Tensor, R["tp"], I["dp"]] = full.to_local()  # E: [spmd-boundary] expected R, got I; fix: full.to_local(grad_placements=[Replicate(), Partial()])
    good = full.to_local(grad_placements=[Replicate(), Partial()])  # OK
    reveal_type(good)  # N: SpmdTensor[Literal['dp:I'] | Literal['tp:R']]
    return good @ a  # OK  (each rank's share of the gradient of good is summed by DTensor)


def entering(x: Annotated[Tensor, R["tp"]], p: Annotated[Tensor, P["tp"]], s: Annotated[Tensor, S["tp", 1]],
             mesh: Annotated[DeviceMesh, Axis["tp"]]) -> None:
    DTensor.from_local(x, mesh, [Replicate()])  # E: [spmd-boundary] the local tensor is R, but placement Replicate() with default gradient placement Replicate() stands for I; fix: DTensor.from_local(x, mesh, [Replicate()], grad_placements=[Partial()])
    DTensor.from_local(x, mesh, [Replicate()], grad_placements=[Partial()])  # OK
    DTensor.from_local(p, mesh, (Partial(),))  # OK
    DTensor.from_local(s, mesh, [Shard(1)])  # OK
    DTensor.from_local(s, mesh, [Shard(0)])  # E: [spmd-boundary] the local tensor is S(1), but placement Shard(0)
    DTensor.from_local(p, mesh, [Replicate()])  # E: [spmd-boundary] fix: redistribute(p, "tp", src=P, dst=I)


def leaving(p: Annotated[Tensor, P["tp"]], mesh: Annotated[DeviceMesh, Axis["dp"], Axis["tp"]]) -> None:
    d = DTensor.from_local(p, mesh["tp"], [Partial()])  # OK
    twice = d.to_local(grad_placements=[Partial()])  # E: [spmd-collective] summed again; fix: d.to_local(grad_placements=[Replicate()])
    once = d.to_local()  # OK
    reveal_type(once)  # N: SpmdTensor[Literal['tp:P']]
    _ = all_reduce(once, "tp", src=P, dst=I)  # OK
    shard = DTensor.from_local(p, mesh["tp"], [Partial()]).redistribute(placements=[Shard(0)])
    reveal_type(shard.to_local())  # N: SpmdTensor[Literal['tp:V']]
    shard.to_local(grad_placements=[Replicate()])  # E: [spmd-collective] a shard's gradient is a shard of the same dim


def unknown(x: Annotated[Tensor, R["tp"]], mesh: DeviceMesh, named: Mesh, d: DTensor, placements: list[Shard]) -> None:
    # A mesh without known dim names, placements in a variable, a DTensor parameter: nothing is known.
    DTensor.from_local(x, mesh, [Replicate()])  # OK
    DTensor.from_local(x, named, placements)  # OK
    reveal_type(d.to_local())  # N: torch._tensor.Tensor
