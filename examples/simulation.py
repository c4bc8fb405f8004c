"""Every rank of a device mesh, simulated in one CPU process.

``simulated_mesh(tp=4)`` sets up what the examples need to run without a
cluster: a process group on the ``fake`` backend, a ``DeviceMesh`` with named
axes (made current for ``spmd_types``), and ``LocalTensorMode``, under which
each tensor holds one local tensor per rank and every op, collectives
included, runs once per rank.

:class:`World` moves tensors between their *global* value (what one device
would hold) and their per-rank local tensors, following an SPMD type.  On each
mesh axis of ``n`` ranks, rank ``k`` of the axis holds

=========  ===========================================================
type       rank ``k``'s local tensor, for a global value ``X``
=========  ===========================================================
``R, I``   ``X`` itself
``S(d)``   chunk ``k`` of ``X`` along dim ``d``
``V``      ``X[k]`` (a varying value is the list of the ranks' tensors)
``P``      the ``k``-th of ``n`` random tensors whose sum is ``X``
=========  ===========================================================

and a mesh of several axes applies the axes in mesh order.
:meth:`World.collect` inverts this: it concatenates shards, stacks ``V``, sums
``P``, and for ``R``/``I`` checks that the ranks really agree.
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
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

import spmd_types as spmd
from spmd_types import I, P, R, Shard, V
from spmd_types.typesystem import AxisType, SpmdType

__all__ = ["ReplicasDiffer", "World", "simulated_mesh"]

# Coordinates of a rank on the mesh axes, in mesh order.
Coords = tuple[int, ...]


class ReplicasDiffer(AssertionError):
    """Ranks that should hold the same tensor (type ``R`` or ``I`` on an axis) do not."""


@dataclass(frozen=True)
class World:
    """A simulated device mesh: its axes in order, and the ``LocalTensorMode`` running its ranks."""

    mesh: DeviceMesh
    mode: LocalTensorMode
    sizes: Mapping[str, int]
    coords: Mapping[int, Coords]  # rank -> its index on every axis

    @property
    def size(self) -> int:
        return math.prod(self.sizes.values())

    def axis_types(self, spmd_type: SpmdType) -> list[AxisType]:
        """The type on every mesh axis, in mesh order; every axis must be declared."""
        types = []
        for axis in self.sizes:
            t = spmd_type.get(axis)
            if t is None:
                raise ValueError(f"the type {spmd_type.describe()!r} does not say what the tensor is on axis {axis!r}")
            types.append(t)
        return types

    def global_shape(self, local_shape: torch.Size, spmd_type: SpmdType) -> torch.Size:
        """The shape of the global value whose local tensors have ``local_shape``."""
        shape = list(local_shape)
        for n, t in zip(reversed(list(self.sizes.values())), reversed(self.axis_types(spmd_type))):
            if isinstance(t, Shard):
                shape[t.dim] *= n
            elif t is V:
                shape.insert(0, n)
        return torch.Size(shape)

    def distribute(self, value: torch.Tensor, spmd_type: SpmdType, generator: torch.Generator) -> torch.Tensor:
        """The local tensors, one per rank, of the global ``value`` laid out as ``spmd_type``.

        ``generator`` draws the random summands of a ``P`` layout.
        """
        with self.one_device():
            pieces: dict[Coords, torch.Tensor] = {(): value}
            for n, t in zip(self.sizes.values(), self.axis_types(spmd_type)):
                pieces = {
                    key + (k,): part for key, whole in pieces.items() for k, part in enumerate(_split(whole, t, n, generator))
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
                pieces = {key: _join(parts, t, axis) for key, parts in groups.items()}
        return pieces[()]

    def one_device(self) -> contextlib.AbstractContextManager[None]:
        """Inside this block, torch runs as usual, once, on plain tensors (for references)."""
        return self.mode.disable()


def _per_rank(x: torch.Tensor, world_size: int) -> dict[int, torch.Tensor]:
    """Rank -> local tensor of ``x``; a plain tensor is the same on every rank."""
    if isinstance(x, LocalTensor):
        return {rank: t.detach() for rank, t in x._local_tensors.items()}
    return {rank: x.detach() for rank in range(world_size)}


def _split(value: torch.Tensor, t: AxisType, n: int, generator: torch.Generator) -> list[torch.Tensor]:
    """The ``n`` ranks' pieces of ``value`` on one axis of type ``t``."""
    if t is R or t is I:
        return [value] * n
    if isinstance(t, Shard):
        if value.shape[t.dim] % n:
            raise ValueError(f"dim {t.dim} of shape {tuple(value.shape)} does not split into {n} equal shards")
        return list(value.chunk(n, t.dim))
    if t is V:
        if value.shape[0] != n:
            raise ValueError(f"a V value is one entry per rank along dim 0: need {n} entries, got shape {tuple(value.shape)}")
        return list(value.unbind(0))
    if t is P:
        if not value.is_floating_point():
            raise ValueError(f"a {value.dtype} tensor cannot be a pending sum")
        parts = [torch.randn(value.shape, generator=generator, dtype=value.dtype) for _ in range(n - 1)]
        return [*parts, value - sum(parts, torch.zeros_like(value))]
    raise ValueError(f"cannot lay out a tensor of type {t!r}")


def _join(parts: list[torch.Tensor], t: AxisType, axis: str) -> torch.Tensor:
    """The value that the ranks' ``parts`` on one axis of type ``t`` denote."""
    if t is R or t is I:
        for k, part in enumerate(parts[1:], start=1):
            if part.shape != parts[0].shape or not torch.allclose(part, parts[0], rtol=1e-6, atol=1e-9):
                raise ReplicasDiffer(
                    f"type {t!r} on axis {axis!r} says every rank holds the same tensor, "
                    f"but rank {k} of the axis differs from rank 0"
                )
        return parts[0]
    if isinstance(t, Shard):
        return torch.cat(parts, t.dim)
    if t is V:
        return torch.stack(parts)
    if t is P:
        return torch.stack(parts).sum(0)
    raise ValueError(f"cannot collect a tensor of type {t!r}")


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
        yield World(mesh, mode, dict(sizes), coords)
