"""assert_type: identity by default; with run-time checks on, it verifies what the data shows."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch.distributed._local_tensor import LocalTensorMode  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types._errors import NoCurrentMeshError, SpmdTypeCheckError, SpmdValueError  # noqa: E402


@pytest.fixture
def checks():
    spmd.set_runtime_checks(True)
    try:
        yield
    finally:
        spmd.set_runtime_checks(False)


def test_off_by_default_and_returns_x(sim8) -> None:
    assert not spmd.runtime_checks_enabled()
    x = torch.randn(3)
    assert spmd.assert_type(x, R["tp"], V["dp"]) is x  # no mesh needed, nothing checked


def test_replicated_values_pass_and_differing_fail(sim8, checks) -> None:
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        # equal within each tp row (ranks 0-3 and 4-7), different across rows
        x = mode.rank_map(lambda r: torch.full((2,), float(r // 4)))
        assert spmd.assert_type(x, R["tp"], V["dp"], P["dp"]) is x
        assert spmd.assert_type(x, I["tp"]) is x
        with pytest.raises(SpmdTypeCheckError, match=r"declared R on axis 'dp', but ranks \[4\] hold values different from rank 0"):
            spmd.assert_type(x, R["dp"])
        y = mode.rank_map(lambda r: torch.full((2,), float(r == 2)))
        with pytest.raises(SpmdTypeCheckError, match=r"declared I on axis 'tp', but ranks \[2\]"):
            spmd.assert_type(y, I["tp"])
        # an all-reduced value is replicated
        z = spmd.all_reduce(y, "tp", src=V, dst=R)
        assert spmd.assert_type(z, R["tp"]) is z
        nan = mode.rank_map(lambda r: torch.tensor([float("nan"), 1.0]))
        spmd.assert_type(nan, R["tp"])


def test_shard_dim_and_bad_markers(sim8, checks) -> None:
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.randn(2, 3))
        spmd.assert_type(x, S["tp", 1], S["dp", -2])
        with pytest.raises(SpmdTypeCheckError, match="names dim 2"):
            spmd.assert_type(x, S["tp", 2])
        with pytest.raises(SpmdValueError, match="markers"):
            spmd.assert_type(x, "tp")  # type: ignore[arg-type]


def test_names_need_a_mesh_when_checking(sim8, checks) -> None:
    with pytest.raises(NoCurrentMeshError):
        spmd.assert_type(torch.ones(2), R["tp"])


def test_environment_variable_turns_checks_on() -> None:
    code = "import spmd_types as s; assert s.runtime_checks_enabled()"
    env = dict(os.environ, SPMD_TYPES_RUNTIME_CHECKS="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)


def _real_ranks(rank: int, world: int, mesh: Any) -> None:
    spmd.set_runtime_checks(True)
    with spmd.set_current_mesh(mesh):
        same = torch.arange(4.0)
        spmd.assert_type(same, R["tp"])
        try:
            spmd.assert_type(same + rank, I["tp"])
        except SpmdTypeCheckError as e:
            assert "declared I on axis 'tp'" in str(e)
        else:
            raise AssertionError("differing data passed as I")


def test_checks_on_real_ranks(gloo) -> None:
    gloo(2, _real_ranks)
