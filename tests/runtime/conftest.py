"""Shared fixtures for the runtime tests.

* ``sim``: a fake-backend world (4 ranks on a 2x2 mesh, or 8 ranks on a 2x4
  mesh, both with axes ``("dp", "tp")``) in which tests run every rank at once
  under ``LocalTensorMode``.  The fake process group is per process, so the
  fixture re-initializes it when the world size changes.
* ``gloo``: runs a function on ``world`` real processes (gloo, started with
  ``fork``), each with a ``("dp", "tp")`` mesh, and re-raises the first
  failure with the worker's traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh  # noqa: E402

from tests.forked_gloo import run_forked  # noqa: E402

MESH_SHAPES = {2: (1, 2), 4: (2, 2), 8: (2, 4)}


@dataclass
class Sim:
    world: int
    mesh: DeviceMesh

    def groups(self, axis: str) -> list[list[int]]:
        from tests.runtime.runtime_oracle import axis_groups

        return axis_groups(self.mesh, axis)


_MESHES: dict[int, DeviceMesh] = {}


def _fake_world(world: int) -> DeviceMesh:
    """The ("dp", "tp") mesh of a fake-backend world of ``world`` ranks (re-initialized on change)."""
    if world in _MESHES and dist.is_initialized() and dist.get_world_size() == world:
        return _MESHES[world]
    if dist.is_initialized():
        dist.destroy_process_group()
    _MESHES.clear()
    dist.init_process_group("fake", rank=0, world_size=world)
    _MESHES[world] = init_device_mesh("cpu", MESH_SHAPES[world], mesh_dim_names=("dp", "tp"))
    return _MESHES[world]


@pytest.fixture(scope="session", params=[4, 8], ids=["world4", "world8"])
def world(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def sim(world: int) -> Sim:
    """A fake-backend world of 4 (2x2) or 8 (2x4) ranks; run ranks with LocalTensorMode(world)."""
    return Sim(world, _fake_world(world))


@pytest.fixture
def sim8() -> Sim:
    """The 8-rank (2x4) fake world, for tests that need only one world."""
    return Sim(8, _fake_world(8))


@dataclass
class Ranks:
    """Every rank of the 8-rank (2x4) fake world at once: the ``LocalTensorMode`` running them, and the mesh."""

    mode: Any
    mesh: DeviceMesh

    def typed(self, *markers: Any, shape: tuple[int, ...] = (8, 4)) -> Any:
        """A tensor holding ``rank + 1`` on every rank, passed through ``assert_type(x, *markers)``.

        Under runtime checking that gives it the asserted type.
        """
        import spmd_types as spmd

        return spmd.assert_type(self.mode.rank_map(lambda rank: torch.full(shape, float(rank + 1))), *markers)


@pytest.fixture
def ranks8(sim8: Sim) -> Any:
    """:class:`Ranks` of the 8-rank world, run under ``LocalTensorMode`` with the mesh current."""
    from torch.distributed._local_tensor import LocalTensorMode

    import spmd_types as spmd

    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        yield Ranks(mode, sim8.mesh)


# -- real processes -------------------------------------------------------------------


def run_gloo(world: int, fn: Callable[..., Any], *args: Any, timeout: float = 120.0) -> list[Any]:
    """Run ``fn(rank, world, mesh, *args)`` on ``world`` forked gloo processes; results by rank."""

    def on_rank(rank: int, world: int) -> Any:
        mesh = init_device_mesh("cpu", MESH_SHAPES[world], mesh_dim_names=("dp", "tp"))
        return fn(rank, world, mesh, *args)

    return run_forked(world, on_rank, timeout)


@pytest.fixture
def gloo() -> Callable[..., list[Any]]:
    if not dist.is_gloo_available():
        pytest.skip("gloo backend not available")
    return run_gloo
