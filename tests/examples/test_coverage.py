"""``spmd-check --coverage`` and ``--coverage-report``: typed shares per function, and each kind of loss.

One file has a function for each kind of place where an SPMD type is lost
(:data:`spmd_mypy.coverage.KINDS`); the examples are measured as a whole.  The
runs share mypy's cache with tests/examples/test_cli.py's (``MYPY_CACHE_DIR``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spmd_mypy.coverage import KINDS
from tests.examples.example_catalog import ROOT
from tests.examples.test_cli import run, shared_cache  # noqa: F401  (the fixture that shares mypy's cache)

LOSSES = '''\
from typing import Annotated, Any, cast

import torch
from torch import Tensor, nn

from spmd_types import R, V, all_reduce


def helper(x):
    return x * 2


def plain_helper(x: Tensor) -> Tensor:
    return x


class Block(nn.Module):
    scale: Tensor

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleDict({"a": nn.Linear(4, 4)})
        self.other: nn.Module = nn.Linear(4, 4)
        self.cache: dict = {}
        self.scale = torch.ones(4)

    def forward(self, x: Annotated[Tensor, V["tp"]], z: Any) -> Annotated[Tensor, R["tp"]]:
        h = helper(x)
        c = cast(Tensor, x)
        for layer in self.layers.values():
            x = layer(x)
        o = self.other(x)
        k = self.cache["k"] * x
        s = self.scale * 2
        d = x.new_empty(4).normal_(generator=z)
        return all_reduce(x, "tp", src=V, dst=R)

    def plain(self, x: Annotated[Tensor, V["tp"]]) -> Tensor:
        return plain_helper(x) * 2
'''

# The kind of loss on each line of LOSSES (plain_result: plain_helper's result from a V argument).
EXPECTED = {
    (9, "unchecked function"), (13, "plain parameter"), (27, "any parameter"), (28, "unannotated helper"),
    (29, "cast"), (31, "module loop"), (32, "untyped module"), (33, "untyped container"), (34, "plain attribute"),
    (39, "plain result"),
}


@pytest.fixture(scope="module")
def losses(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    folder = tmp_path_factory.mktemp("coverage")
    (folder / "losses.py").write_text(LOSSES)
    report = folder / "coverage.json"
    status, text = run(["--coverage", "--coverage-report", str(report), str(folder / "losses.py")])
    assert status in (0, 1), text
    return text, json.loads(report.read_text())


def test_each_kind_of_loss_is_reported_at_its_line(losses: tuple[str, dict]) -> None:
    _, report = losses
    found = {(loss["line"], loss["kind"]) for f in report["files"][0]["functions"] for loss in f["losses"]}
    assert EXPECTED <= found, sorted(found)
    assert {kind for _, kind in found} <= set(KINDS)


def test_the_table_shows_shares_and_losses(losses: tuple[str, dict]) -> None:
    text, report = losses
    forward = next(f for f in report["files"][0]["functions"] if f["name"] == "Block.forward")
    assert 0 < forward["known"] < forward["tensor_expressions"]
    assert f"{forward['known']}/{forward['tensor_expressions']}" in text
    assert "module loop: layer(...)" in text and "unchecked function: helper has no annotations" in text
    assert f"{report['known']} of {report['tensor_expressions']} tensor expressions" in text


def test_the_examples(tmp_path: Path) -> None:
    report_file = tmp_path / "coverage.json"
    status, text = run(["--coverage-report", str(report_file), str(ROOT / "examples" / "tp_mlp.py"),
                        str(ROOT / "examples" / "data_parallel_loss.py")])
    assert status == 0, text
    assert "SPMD coverage" not in text  # the table only with --coverage
    report = json.loads(report_file.read_text())
    functions = {(Path(file["path"]).name, f["name"]): f for file in report["files"] for f in file["functions"]}
    forward = functions["tp_mlp.py", "TensorParallelMLP.forward"]
    assert forward["known"] == forward["tensor_expressions"] > 0 and not forward["losses"]
    reference = functions["tp_mlp.py", "reference"]  # the single-device reference: plain tensors on purpose
    assert reference["known"] == 0 and {loss["kind"] for loss in reference["losses"]} >= {"plain parameter"}
    assert report["tensor_expressions"] == sum(f["tensor_expressions"] for f in functions.values())
