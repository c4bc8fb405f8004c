"""The examples on real processes: under torchrun, and on forked gloo processes.

``torchrun --standalone --nproc_per_node 2 -m examples.tp_mlp`` is the
command docs/real-ranks.md gives: it is run as written (gloo, the GPUs
hidden), and each rank must report that the output and every gradient match
the single-device reference.  torchrun starts fresh interpreters (each imports
torch), so that is the one test that pays for it; the others fork gloo
processes from this one and call the same ``ModuleExample.run_on_real_ranks``:
every correct example matches on real ranks, every buggy twin gets wrong what
its ``WRONG`` says, and the real-process layout inverts on a 2-D mesh.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from examples.comparison import ModuleExample  # noqa: E402
from examples.real_ranks import mesh_sizes, real_mesh  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types.typesystem import SpmdType  # noqa: E402
from tests.examples.example_catalog import ROOT, buggy_twins, correct_examples  # noqa: E402
from tests.forked_gloo import run_forked  # noqa: E402

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="this torch has no gloo backend")

MODULE_EXAMPLES = [m for m in correct_examples() if isinstance(m.EXAMPLE, ModuleExample)]
MODULE_TWINS = [m for m in buggy_twins() if isinstance(m.EXAMPLE, ModuleExample)]


def _torchrun() -> list[str]:
    """The torchrun next to this Python, or the module it runs."""
    script = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "torch.distributed.run"]


def _reports(stdout: str) -> dict[int, list[str]]:
    """Each rank's report: rank -> the lines from its title to its verdict."""
    reports: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        title = re.search(r" on rank (\d+) of \d+ processes ", line)
        if title:
            current = reports.setdefault(int(title.group(1)), [line])
        elif current is not None and line.startswith("  "):
            current.append(line)
    return reports


def test_tp_mlp_under_torchrun() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONWARNINGS": "ignore"}
    command = [*_torchrun(), "--standalone", "--nproc_per_node", "2", "-m", "examples.tp_mlp"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, output
    reports = _reports(done.stdout)
    assert sorted(reports) == [0, 1], output
    for lines in reports.values():
        assert "(tp=2, gloo)" in lines[0], output
        compared = [line for line in lines if line.startswith("  grad ") or line.startswith("  output ")]
        assert len(compared) == 6 and all(" matches " in line for line in compared), output
        assert lines[-1] == "  => matches the single-device reference", output


def _verdict(module: ModuleType) -> Callable[[int, int], tuple[list[str], str]]:
    def run(rank: int, world: int) -> tuple[list[str], str]:
        comparison = module.EXAMPLE.run_on_real_ranks()
        return [outcome.name for outcome in comparison.mismatches], str(comparison)

    return run


@pytest.mark.parametrize("module", MODULE_EXAMPLES, ids=lambda m: m.__name__.removeprefix("examples."))
def test_correct_example_matches_on_real_ranks(module: ModuleType) -> None:
    """On 2 real processes: a one-axis mesh takes as many ranks as there are processes; a 2-D mesh its own number."""
    mesh = module.EXAMPLE.mesh
    for wrong, report in run_forked(2 if len(mesh) == 1 else math.prod(mesh.values()), _verdict(module)):
        assert not wrong, report
        assert "processes" in report.splitlines()[0], report


@pytest.mark.parametrize("module", MODULE_TWINS, ids=lambda m: m.__name__.removeprefix("examples.bugs."))
def test_buggy_twin_is_wrong_on_real_ranks(module: ModuleType) -> None:
    """On 4 real processes, as on 4 simulated ranks, a twin gets wrong exactly what it says."""
    for wrong, report in run_forked(4, _verdict(module)):
        assert sorted(wrong) == sorted(module.WRONG), report


LAYOUTS = [
    {"dp": R, "tp": I},
    {"dp": S(0), "tp": S(1)},
    {"dp": V, "tp": S(0)},
    {"dp": P, "tp": R},
    {"dp": S(0), "tp": P},
]


def _round_trips(rank: int, world: int) -> list[bool]:
    oks = []
    with real_mesh({"dp": 2, "tp": 2}) as ranks:
        for layout in LAYOUTS:
            spmd_type = SpmdType(layout)
            generator = torch.Generator().manual_seed(0)
            value = torch.randn(2, 4, 8, generator=generator)
            local = ranks.distribute(value, spmd_type, generator)
            assert ranks.global_shape(local.shape, spmd_type) == value.shape
            oks.append(bool(torch.allclose(ranks.collect(local, spmd_type), value)))
    return oks


def test_collect_inverts_distribute_on_a_2d_mesh() -> None:
    assert run_forked(4, _round_trips) == [[True] * len(LAYOUTS)] * 4


def test_mesh_sizes() -> None:
    assert mesh_sizes({"tp": 4}, 2) == {"tp": 2}
    assert mesh_sizes({"dp": 2, "tp": 2}, 4) == {"dp": 2, "tp": 2}
    with pytest.raises(ValueError, match=r"torchrun --nproc_per_node 4"):
        mesh_sizes({"dp": 2, "tp": 2}, 2)
