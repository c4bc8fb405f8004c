"""set_current_mesh, current_mesh, axis_size, axis_index (real and simulated ranks)."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from torch.distributed._local_tensor import LocalTensorMode  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import S  # noqa: E402


def test_nesting_restores_the_outer_mesh(sim8) -> None:
    other = init_device_mesh("cpu", (8,), mesh_dim_names=("ep",))
    assert spmd.current_mesh() is None
    with spmd.set_current_mesh(sim8.mesh) as m:
        assert m is sim8.mesh and spmd.current_mesh() is sim8.mesh
        assert spmd.axis_size("tp") == 4 and spmd.axis_size("dp") == 2
        with spmd.set_current_mesh(other):
            assert spmd.current_mesh() is other and spmd.axis_size("ep") == 8
            with pytest.raises(ValueError, match="'ep'"):
                spmd.axis_size("tp")
        assert spmd.current_mesh() is sim8.mesh
        with pytest.raises(KeyError):
            with spmd.set_current_mesh(other):
                raise KeyError("leaves the block")
        assert spmd.current_mesh() is sim8.mesh
    assert spmd.current_mesh() is None


def test_axis_size_of_groups_and_submeshes(sim8) -> None:
    assert spmd.axis_size(sim8.mesh.get_group("tp")) == 4
    assert spmd.axis_size(sim8.mesh["dp"]) == 2


def test_axis_index_outside_simulation_is_the_process_rank(sim8) -> None:
    with spmd.set_current_mesh(sim8.mesh):
        assert spmd.axis_index("tp") == 0 and isinstance(spmd.axis_index("tp"), int)
        assert spmd.axis_index(sim8.mesh.get_group("dp")) == 0


@pytest.mark.parametrize("axis", ["dp", "tp"])
def test_axis_index_under_local_tensor_mode(sim, axis) -> None:
    groups = sim.groups(axis)
    truth = {r: pos for g in groups for pos, r in enumerate(g)}
    with LocalTensorMode(sim.world) as mode, spmd.set_current_mesh(sim.mesh):
        by_name = spmd.axis_index(axis)
        by_group = spmd.axis_index(sim.mesh.get_group(axis))
        by_submesh = spmd.axis_index(sim.mesh[axis])
        # usable in arithmetic and narrow: pick my entry of arange(n) * 10
        n = spmd.axis_size(axis)
        for index in (by_name, by_group, by_submesh):
            picked = mode.rank_map(lambda r: torch.arange(n) * 10).narrow(0, index, 1)
            got = {r: int(t.item()) for r, t in picked._local_tensors.items()}
            assert got == {r: 10 * truth[r] for r in range(sim.world)}
        # and it agrees with the position the collectives use
        shards = spmd.convert(mode.rank_map(lambda r: torch.arange(n)), axis, src=spmd.R, dst=S(0))
        assert {r: int(t.item()) for r, t in shards._local_tensors.items()} == truth


def test_import_does_not_load_torch() -> None:
    code = (
        "import sys, spmd_types, spmd_types.typesystem\n"
        "assert 'torch' not in sys.modules, 'torch imported eagerly'\n"
        "spmd_types.all_reduce\n"
        "assert 'torch' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
