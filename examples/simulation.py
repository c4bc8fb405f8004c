"""Every rank of a device mesh, simulated in one CPU process.

``simulated_mesh(tp=4)`` sets up what the examples need to run without a
cluster: a process group on the ``fake`` backend, a ``DeviceMesh`` with named
axes (made current for ``spmd_types``), and ``LocalTensorMode``, under which
each tensor holds one local tensor per rank and every op, collectives
included, runs once per rank.

:class:`World` moves tensors between their *global* value (what one device
would hold) and their per-rank local tensors, following an SPMD type, as
:mod:`examples.layout` describes.  :meth:`World.collect` inverts
:meth:`World.distribute`.  (:mod:`examples.real_ranks` does the same on real
processes.)
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed._local_tensor import LocalTensor, LocalTensorMode
from torch.distributed.device_mesh import init_device_mesh

import spmd_types as spmd
from examples.layout import MeshLayout, ReplicasDiffer, join, split
from spmd_types.typesystem import SpmdType

__all__ = ["ReplicasDiffer", "World", "simulated_mesh"]

# Coordinates of a rank on the mesh axes, in mesh order.
Coords = tuple[int, ...]


@dataclass(frozen=True)
class World(MeshLayout):
    """A simulated device mesh: its axes in order, and the ``LocalTensorMode`` running its ranks."""

    mode: LocalTensorMode
    coords: Mapping[int, Coords]  # rank -> its index on every axis

    @property
    def size(self) -> int:
        return math.prod(self.sizes.values())

    @property
    def description(self) -> str:
        axes = ", ".join(f"{axis}={n}" for axis, n in self.sizes.items())
        return f"on a simulated mesh ({axes})"

    def distribute(self, value: torch.Tensor, spmd_type: SpmdType, generator: torch.Generator) -> torch.Tensor:
        """The local tensors, one per rank, of the global ``value`` laid out as ``spmd_type``.

        ``generator`` draws the random summands of a ``P`` layout.
        """
        with self.one_device():
            pieces: dict[Coords, torch.Tensor] = {(): value}
            for n, t in zip(self.sizes.values(), self.axis_types(spmd_type)):
                pieces = {
                    key + (k,): part for key, whole in pieces.items() for k, part in enumerate(split(whole, t, n, generator))
                }
        return self.mode.rank_map(lambda rank: pieces[self.coords[rank]].clone())

    def collect(self, local: torch.Tensor, spmd_type: SpmdType) -> torch.Tensor:
        """The global value of the per-rank tensors ``local`` of type ``spmd_type``.

        Raises :class:`ReplicasDiffer` where the type says the ranks agree and they do not.
        """
        pieces = {self.coords[rank]: tensor for rank, tensor in _per_rank(local, self.size).items()}
        with self.one_device():
            for axis, t in zip(reversed(list(self.sizes)), reversed(self.axis_types(spmd_type))):
                groups: dict[Coords, list[torch.Tensor]] = {}
                for key in sorted(pieces):
                    groups.setdefault(key[:-1], []).append(pieces[key])
                pieces = {key: join(parts, t, axis) for key, parts in groups.items()}
        return pieces[()]

    def one_device(self) -> contextlib.AbstractContextManager[None]:
        """Inside this block, torch runs as usual, once, on plain tensors (for references)."""
        return self.mode.disable()


def _per_rank(x: torch.Tensor, world_size: int) -> dict[int, torch.Tensor]:
    """Rank -> local tensor of ``x``; a plain tensor is the same on every rank."""
    if isinstance(x, LocalTensor):
        return {rank: t.detach() for rank, t in x._local_tensors.items()}
    return {rank: x.detach() for rank in range(world_size)}


@contextlib.contextmanager
def simulated_mesh(**sizes: int) -> Iterator[World]:
    """``with simulated_mesh(dp=2, tp=2) as world:`` run every rank of that mesh in this process.

    The axes are taken in the order given.  Inside the block, ``spmd_types``
    resolves the axis names against the mesh and ops run on every simulated
    rank.  A fake-backend default process group of the right size is created
    if there is none (an existing one of another size is replaced).
    """
    world_size = math.prod(sizes.values())
    if dist.is_initialized() and dist.get_world_size() != world_size:
        dist.destroy_process_group()
    if not dist.is_initialized():
        dist.init_process_group("fake", rank=0, world_size=world_size)
    mesh = init_device_mesh("cpu", tuple(sizes.values()), mesh_dim_names=tuple(sizes))
    coords = {int(mesh.mesh[index]): index for index in itertools.product(*map(range, sizes.values()))}
    with LocalTensorMode(world_size) as mode, spmd.set_current_mesh(mesh):
        yield World(mesh=mesh, sizes=dict(sizes), mode=mode, coords=coords)
