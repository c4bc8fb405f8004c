"""Every collective and cast, for every (src, dst) pair the rule core allows.

The cases come from ``spmd_types.typesystem.CALLS`` (see
``runtime_oracle.table_cases``): adding an allowed pair to the core adds its
test here.  Each case runs on every simulated rank (``LocalTensorMode``, fake
backend) of a 4-rank 2x2 mesh and an 8-rank 2x4 mesh, on both mesh axes, with
non-contiguous inputs and cotangents, and is checked against the per-rank
semantics, the adjoint identity and a single-device reference (the checks and
the inner product are described in ``runtime_oracle``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from spmd_types.typesystem import CALLS, endpoint_kind  # noqa: E402
from tests.runtime.runtime_oracle import Case, check, prepare, run_simulated, table_cases  # noqa: E402

CASES = table_cases()


def test_every_allowed_pair_has_a_case() -> None:
    covered = {(c.call, endpoint_kind(c.src), endpoint_kind(c.dst)) for c in CASES}
    wanted = {(call, s, d) for call, spec in CALLS.items() for s, d in spec.pairs}
    assert wanted <= covered


@pytest.mark.parametrize("axis", ["dp", "tp"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_call(sim, case: Case, axis: str) -> None:
    trial = prepare(case, sim.groups(axis))
    check(run_simulated(trial, sim.world, sim.mesh, axis))


@pytest.mark.parametrize("case", [c for c in CASES if c.call in ("all_gather", "reduce_scatter", "convert", "ppermute")][:12], ids=str)
def test_call_with_process_group_axis(sim8, case: Case) -> None:
    """The axis given as a ProcessGroup and as a 1-D mesh gives the same as the name."""
    for axis in (sim8.mesh.get_group("tp"), sim8.mesh["tp"]):
        trial = prepare(case, sim8.groups("tp"))
        check(run_simulated(trial, sim8.world, sim8.mesh, axis))
