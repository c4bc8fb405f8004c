"""``set_dist``: every collective, forward and backward, reaches torch.distributed through the swapped backend.

A recording backend wraps the real ``torch.distributed`` and logs each
function called on it.  Every case of the rule core's table (every call, every
accepted ``src``/``dst`` pair, with its dim variants) runs forward and
backward under it, on simulated ranks and on gloo; the log must hold exactly
the collectives the core says the forward and the backward perform, in
order.  While the recorder is in place, the real ``torch.distributed``
collectives are replaced by functions that fail, so a call that went around
the backend would not go unnoticed; and no runtime module may name
``torch.distributed``'s functions or functional collectives itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import P, R, S, V  # noqa: E402
from spmd_types._errors import SpmdValueError  # noqa: E402
from tests.runtime.recording import Recorder, expected_calls  # noqa: E402
from tests.runtime.runtime_oracle import Case, axis_groups, prepare, run_simulated, table_cases  # noqa: E402

CASES = table_cases()
ROOT = Path(__file__).resolve().parents[2]

_COLLECTIVES = ("all_reduce", "all_gather_single", "all_gather_into_tensor", "reduce_scatter_single",
                "reduce_scatter_tensor", "all_to_all_single")


def _expected(case: Case) -> tuple[list[str], list[str]]:
    return expected_calls(case.call, case.src, case.dst, case.kw().get("op", "sum"))


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    """A recording backend in place, with the real collectives failing if called around it."""
    real = {name: getattr(dist, name) for name in _COLLECTIVES if hasattr(dist, name)}
    rec = Recorder(dist, real)
    with spmd.use_dist(rec):

        def bypassed(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a collective went around the backend set with set_dist")

        for name in real:
            monkeypatch.setattr(dist, name, bypassed)
        yield rec


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_case_goes_through_the_backend(sim8, recorder: Recorder, case: Case) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    trial = prepare(case, sim8.groups("tp"))
    forward, back = _expected(case)
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: trial.xs[r].clone()).requires_grad_()
        y = case.apply(x, "tp", trial.n)
        assert recorder.take() == forward, f"{case.id} forward"
        if case.kw().get("op") not in ("max", "min"):
            y.backward(mode.rank_map(lambda r: trial.gs[r]))
            assert recorder.take() == back, f"{case.id} backward"
    assert forward or back or case.call in ("reinterpret", "convert", "redistribute"), case.id


def test_results_are_those_of_torch_distributed(sim8, recorder: Recorder) -> None:
    """The recorder changes nothing: one case per call checked against the oracle."""
    from tests.runtime.runtime_oracle import check

    done = set()
    for case in CASES:
        if case.call in done:
            continue
        done.add(case.call)
        check(run_simulated(prepare(case, sim8.groups("tp")), sim8.world, sim8.mesh, "tp"))
    assert len(done) == len({c.call for c in CASES})
    assert recorder.calls, "nothing was recorded"


def test_set_dist_returns_the_previous_backend_and_use_dist_restores_it() -> None:
    assert spmd.get_dist() is dist
    rec = Recorder(dist)
    previous = spmd.set_dist(rec)
    try:
        assert previous is dist and spmd.get_dist() is rec
    finally:
        assert spmd.set_dist(previous) is rec
    assert spmd.get_dist() is dist
    with pytest.raises(RuntimeError, match="inside"):
        with spmd.use_dist(rec) as inside:
            assert inside is rec and spmd.get_dist() is rec
            with spmd.use_dist(Recorder(dist)):
                assert spmd.get_dist() is not rec
            assert spmd.get_dist() is rec
            raise RuntimeError("inside")
    assert spmd.get_dist() is dist


def test_an_incomplete_backend_is_refused() -> None:
    class Partial:
        ReduceOp = dist.ReduceOp
        ProcessGroup = dist.ProcessGroup
        all_reduce = staticmethod(dist.all_reduce)

    with pytest.raises(SpmdValueError, match="lacks all_to_all_single, get_process_group_ranks"):
        spmd.set_dist(Partial())
    assert spmd.get_dist() is dist


def test_an_older_backend_is_asked_for_the_older_names(sim8) -> None:
    """A backend without all_gather_single / reduce_scatter_single gets *_into_tensor / *_tensor."""
    from torch.distributed._local_tensor import LocalTensorMode

    class Older(Recorder):
        def __getattr__(self, name: str) -> Any:
            if name in ("all_gather_single", "reduce_scatter_single"):
                raise AttributeError(name)
            return super().__getattr__(name)

    rec = Older(dist)
    with spmd.use_dist(rec), LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.full((4, 2), float(r))).requires_grad_()
        y = spmd.all_gather(x, "tp", src=S(0), dst=R)
        y.backward(torch.ones_like(y))
    assert rec.take() == ["all_gather_into_tensor", "reduce_scatter_tensor"]
    assert torch.equal(x.grad._local_tensors[5], torch.full((4, 2), 4.0))


def test_no_runtime_module_reaches_torch_distributed_itself() -> None:
    """Only spmd_types/_dist.py names torch.distributed's functions; nothing uses functional collectives."""
    offenders = []
    pattern = re.compile(r"_c10d_functional|import torch\.distributed as|\bdist\.\w+\(|torch\.distributed\.\w+\(")
    for path in sorted((ROOT / "spmd_types").glob("*.py")):
        if path.name == "_dist.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and not line.lstrip().startswith(("#", "(``", "``")):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# -- real processes ---------------------------------------------------------------------


def _record_on_gloo(rank: int, world: int, mesh: Any) -> int:
    spmd.set_runtime_checks(False)
    rec = Recorder(dist)
    done = 0
    with spmd.use_dist(rec), spmd.set_current_mesh(mesh):
        groups = axis_groups(mesh, "tp")
        for case in CASES:
            trial = prepare(case, groups)
            forward, back = _expected(case)
            x = trial.xs[rank].clone().requires_grad_()
            y = case.apply(x, "tp", trial.n)
            assert rec.take() == forward, f"{case.id} forward on rank {rank}"
            if case.kw().get("op") not in ("max", "min"):
                y.backward(trial.gs[rank])
                assert rec.take() == back, f"{case.id} backward on rank {rank}"
            done += 1
        # With run-time checks on, the cross-rank check goes through the backend too.
        spmd.set_runtime_checks(True)
        try:
            spmd.all_reduce(torch.ones(3), "tp", src=V, dst=R)
            spmd.reduce_scatter(torch.ones(2, 3), "tp", src=P, dst=V)
        finally:
            spmd.set_runtime_checks(False)
        assert rec.take() == ["all_gather_single", "get_process_group_ranks", "all_reduce",
                              "all_gather_single", "get_process_group_ranks", "reduce_scatter_single"]
    return done


def test_every_case_goes_through_the_backend_on_gloo(gloo) -> None:
    counts = gloo(2, _record_on_gloo)
    assert counts == [len(CASES)] * 2
