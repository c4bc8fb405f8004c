"""Run an example on real processes: torchrun, a process group, a named device mesh.

::

    torchrun --standalone --nproc_per_node 2 -m examples.tp_mlp

starts two processes; each finds ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``
and ``MASTER_PORT`` in its environment.  :func:`real_mesh` is the recipe of
``docs/real-ranks.md`` in code:

1. ``dist.init_process_group(backend)`` reads that environment (``env://``):
   ``gloo`` on CPU, ``nccl`` when there is a GPU (each process then uses GPU
   ``LOCAL_RANK``);
2. ``init_device_mesh(device, sizes, mesh_dim_names=names)`` builds the mesh
   whose axis names the code's annotations and collectives use;
3. ``with spmd_types.set_current_mesh(mesh):`` makes those names resolve.

:class:`RealRanks` gives this process its piece of a global value and puts
the global value back together with real collectives, so the example checks
of :mod:`examples.comparison` run unchanged on real ranks: every process
rebuilds the output and every gradient, and compares them with the
single-device reference, which it computes itself.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

import spmd_types as spmd
from examples.layout import MeshLayout, ReplicasDiffer, join, split
from spmd_types.typesystem import SpmdType

__all__ = ["RealRanks", "launched_by_torchrun", "mesh_sizes", "real_mesh"]

# What torchrun (and other launchers following its conventions) puts in each worker's environment.
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def launched_by_torchrun() -> bool:
    """Whether this process is one of the workers that torchrun started."""
    return all(name in os.environ for name in LAUNCHER_VARIABLES)


def mesh_sizes(wanted: Mapping[str, int], world_size: int) -> dict[str, int]:
    """The mesh to build for ``world_size`` processes: ``wanted``, or its one axis stretched to fit."""
    if math.prod(wanted.values()) == world_size:
        return dict(wanted)
    if len(wanted) == 1:
        return {axis: world_size for axis in wanted}
    axes = ", ".join(f"{axis}={n}" for axis, n in wanted.items())
    raise ValueError(
        f"this example runs on a mesh {axes}, {math.prod(wanted.values())} processes; "
        f"{world_size} were started (torchrun --nproc_per_node {math.prod(wanted.values())})"
    )


@dataclass(frozen=True)
class RealRanks(MeshLayout):
    """This process's place on a mesh of real processes."""

    coords: tuple[int, ...]  # this process's index on every axis, in mesh order
    device: torch.device

    @property
    def description(self) -> str:
        axes = ", ".join(f"{axis}={n}" for axis, n in self.sizes.items())
        backend = dist.get_backend()
        return f"on rank {dist.get_rank()} of {dist.get_world_size()} processes ({axes}, {backend})"

    def distribute(self, value: torch.Tensor, spmd_type: SpmdType, generator: torch.Generator) -> torch.Tensor:
        """This process's piece of the global ``value`` laid out as ``spmd_type``.

        Every process cuts out every rank's piece, so that all of them draw the
        same random ``P`` summands from ``generator`` (the same ones as a
        simulated run with the same seed), and keeps its own.
        """
        with self.one_device():
            pieces: dict[tuple[int, ...], torch.Tensor] = {(): value}
            for n, t in zip(self.sizes.values(), self.axis_types(spmd_type)):
                pieces = {
                    key + (k,): part for key, whole in pieces.items() for k, part in enumerate(split(whole, t, n, generator))
                }
        return pieces[self.coords].clone().to(self.device)

    def collect(self, local: torch.Tensor, spmd_type: SpmdType) -> torch.Tensor:
        """The global value of the processes' pieces ``local``, on every process (on the CPU).

        A collective: every process of the mesh must call it, in the same order.
        Raises :class:`ReplicasDiffer` where the type says the ranks agree and
        they do not, after all the gathers (so that no process is left waiting).
        """
        piece = local.detach().contiguous()
        differ: str | None = None  # a message, not the exception: its traceback would keep the mesh alive
        for axis, t in zip(reversed(list(self.sizes)), reversed(self.axis_types(spmd_type))):
            parts = [torch.empty_like(piece) for _ in range(self.sizes[axis])]
            dist.all_gather(parts, piece, group=self.mesh.get_group(axis))
            try:
                piece = join(parts, t, axis).contiguous()
            except ReplicasDiffer as error:
                differ = differ or str(error)
                piece = parts[0]
        if differ is not None:
            raise ReplicasDiffer(differ)
        return piece.cpu()

    def one_device(self) -> contextlib.AbstractContextManager[None]:
        """Inside this block, new tensors are made on the CPU, where the reference runs."""
        return _on_cpu()


@contextlib.contextmanager
def _on_cpu() -> Iterator[None]:
    with torch.device("cpu"):
        yield


@contextlib.contextmanager
def real_mesh(wanted: Mapping[str, int]) -> Iterator[RealRanks]:
    """``with real_mesh({"tp": 2}) as ranks:`` this process's place on a named mesh of real processes.

    Joins the process group that the launcher describes in the environment
    (unless one exists already: a test may have made one), builds the mesh
    (:func:`mesh_sizes`) and makes it current for ``spmd_types``.  Inside the
    block new tensors are made on this process's device.  A process group it
    created is destroyed on the way out.
    """
    created = not dist.is_initialized()
    if created:
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            dist.init_process_group("nccl")
        else:
            dist.init_process_group("gloo")
    try:
        on_gpu = dist.get_backend() == "nccl"
        device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
        sizes = mesh_sizes(wanted, dist.get_world_size())
        mesh = init_device_mesh(device.type, tuple(sizes.values()), mesh_dim_names=tuple(sizes))
        coords = mesh.get_coordinate()
        if coords is None:
            raise RuntimeError(f"rank {dist.get_rank()} is not on the mesh {sizes}")
        with torch.device(device), spmd.set_current_mesh(mesh):
            yield RealRanks(mesh=mesh, sizes=sizes, coords=tuple(coords), device=device)
    finally:
        if created:
            dist.destroy_process_group()
