"""The ``spmd-annotate`` command: a target function, a dry run that prints the diff, then the write."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("libcst")

from spmd_types.codemods.annotate import main

LAYER = textwrap.dedent('''\
    import torch
    from torch import nn

    from spmd_types import I, R, assert_type, axis_size, convert


    class Column(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(8 // axis_size("tp"), 4))

        def forward(self, x):
            return convert(x, "tp", src=I, dst=R) @ self.weight.T


    def run() -> None:
        Column()(assert_type(torch.ones(2, 4), I["tp"]))
''')


def test_a_dry_run_prints_the_diff_and_the_run_writes_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "layer.py").write_text(LAYER)
    assert main(["--mesh", "tp=2", "--dry-run", "layer.py:run"]) == 0
    diff = capsys.readouterr().out
    assert (tmp_path / "layer.py").read_text() == LAYER
    assert '+    weight: Annotated[nn.Parameter, S["tp", 0]]\n' in diff
    assert '+    def forward(self, x: Annotated[torch.Tensor, I["tp"]]) -> Annotated[torch.Tensor, S["tp", 1]]:\n' in diff
    assert main(["--mesh", "tp=2", "layer.py:run"]) == 0
    assert capsys.readouterr().out == "annotated layer.py\n"
    written = (tmp_path / "layer.py").read_text()
    assert "from typing import Annotated\n" in written and "from spmd_types import S, I, R, assert_type" in written
    assert main(["--mesh", "tp=2", "layer.py:run"]) == 0
    assert (tmp_path / "layer.py").read_text() == written
    assert capsys.readouterr().out == ""
