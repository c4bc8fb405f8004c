"""Checkers without the plugin see no errors in the documented annotation spellings.

A team member whose editor runs pyright (Pylance, basedpyright), or a CI job
that runs mypy without the ``plugins`` line, reads the same code as mypy with
the plugin: ``Annotated[Tensor, R["dp"]]`` and ``Spmd[Tensor, Literal["dp:R"]]``
must be the tensor type to them, with nothing reported.  Checked here on the
examples (their buggy twins included), on every checked sample of the
documentation and on a probe file that uses each spelling the docs show (and
reveals the type, which proves that the checker read the ``spmd_types`` stubs,
as it does from an installed ``spmd_types-stubs``, and not the runtime source).
Samples that show a malformed annotation on purpose (their output lists an
``spmd-annotation`` error) are left out: other checkers may reject them too.

* plain mypy: the recommended configuration without the plugin and its options
  (torch's internals still skipped, for speed), the checkout's stubs on
  ``mypy_path``; mypy's own defaults otherwise (``warn_unused_ignores`` would
  report each ``# type: ignore[spmd-...]``, see docs/editors-and-ci.md);
* basedpyright in pyright's ``standard`` mode, with the checkout's stubs as its
  ``stubPath``, errors only (its warnings are about the examples' style, not
  about the annotations).  One error unrelated to SPMD types is expected, see
  :data:`UNRELATED`.
"""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.snippets import all_samples
from tests.plugin.harness import ROOT, config_text, run_mypy

EXAMPLES = sorted((ROOT / "examples").rglob("*.py"))

UNRELATED = {
    "reportIncompatibleMethodOverride": re.compile(r'Method "backward" overrides class "_SingleLevelFunction"'),
    "reportReturnType": re.compile(r'is not assignable to return type "\w+@\w+"'),
}
"""pyright's errors that are not about the annotation spellings, by rule: a pattern each must match.

* torch declares ``autograd.Function.backward(ctx, *grad_outputs)``; the usual
  ``def backward(ctx, grad)`` of a custom Function (docs/adopting.md shows one)
  is an incompatible override to pyright, whatever its annotations.
* pyright does not check a function once per value of a value-restricted type
  variable, as mypy does: a torch op's result (``Tensor``) returned where such
  a variable (``Out@ColumnParallelLinear``) is declared is an error to it.
  docs/adopting.md says so where it recommends those type variables.
"""

PROBE = '''\
from typing import Annotated, Literal, Optional

import torch
from torch import Tensor, nn
from torch.distributed import ProcessGroup

from spmd_types import I, P, R, S, Spmd, V, Axis, PartitionSpec, all_reduce, global_spmd

Activation = Spmd[Tensor, Literal["dp:R, tp:V"]]
Weight = Spmd[nn.Parameter, Literal["tp:S(0)"]]


class Layer(nn.Module):
    weight: Weight
    bias: Optional[Annotated[nn.Parameter, R["tp"]]]

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(4, 4))
        self.bias = None

    def forward(self, x: Activation, group: Annotated[ProcessGroup, Axis["tp"]]) -> Activation:
        return all_reduce(x @ self.weight, group, src=P, dst=R)


def spellings(
    a: Annotated[Tensor, R["dp"], V["tp"]],
    b: Annotated[Tensor, S["tp", 0], I["dp", "cp"]],
    c: Spmd[Tensor, Literal["dp:R", "tp:V"]],
    d: list[Activation],
    e: Annotated[Tensor, PartitionSpec("dp", None, ("tp", "cp"), partial="ep")],
) -> Activation:
    reveal_type(c)
    return a + b + c + d[0] + e


@global_spmd
def global_function(x: Annotated[Tensor, PartitionSpec("dp", None)]) -> Annotated[Tensor, PartitionSpec("dp", None)]:
    return x * 2


spellings(torch.ones(2), torch.ones(2), torch.ones(2), [torch.ones(2)], torch.ones(2))
global_function(torch.ones(2, 2))
'''


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The examples, each documentation sample as a file of its own, and the probe."""
    folder = tmp_path_factory.mktemp("plain-tools")
    samples = []
    for n, sample in enumerate(s for s in all_samples() if "spmd-annotation" not in s.codes):
        path = folder / f"sample_{n}.py"
        path.write_text(sample.code)
        samples.append(path)
    (folder / "probe.py").write_text(PROBE)
    return [*EXAMPLES, *samples, folder / "probe.py"]


def _without_plugin() -> str:
    """The recommended configuration (checkout stubs on the path) less the plugin and the options it needs."""
    config = configparser.ConfigParser(interpolation=None)
    config.read_string(config_text())
    for option in ("plugins", "allow_redefinition", "local_partial_types", "warn_unused_ignores"):
        config.remove_option("mypy", option)
    config.remove_section("mypy.plugins.spmd")
    return "\n".join(f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in config[name].items())
                     for name in config.sections())


def test_plain_mypy_reports_nothing(files: list[Path], tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text(_without_plugin())
    by_file, raw = run_mypy(files, config, ROOT / ".mypy_cache" / "plain-tools")
    errors = [f"{path.name}:{line}: {r.message}  [{r.code}]" for path, lines in by_file.items()
              for line, reported in lines.items() for r in reported if r.kind == "error"]
    assert not errors, raw
    assert 'Revealed type is "torch._tensor.Tensor"' in raw, raw  # the stubs' Spmd, not the runtime class


def _basedpyright() -> str:
    found = shutil.which("basedpyright", path=str(Path(sys.executable).parent)) or shutil.which("basedpyright")
    if found is None:
        pytest.skip("basedpyright is not installed (pip install -e '.[dev]')")
    return found


def test_basedpyright_reports_nothing(files: list[Path], tmp_path: Path) -> None:
    config = tmp_path / "pyrightconfig.json"
    config.write_text(json.dumps({
        "typeCheckingMode": "standard",
        "pythonVersion": f"{sys.version_info.major}.{sys.version_info.minor}",
        "stubPath": str(ROOT / "stubs"),
        "extraPaths": [str(ROOT)],
    }))
    result = subprocess.run(
        [_basedpyright(), "--pythonpath", sys.executable, "--project", str(config), "--outputjson", *map(str, files)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )
    report = json.loads(result.stdout)
    errors = [f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']} ({d.get('rule')})"
              for d in report["generalDiagnostics"] if d["severity"] == "error"
              and not (d.get("rule") in UNRELATED and UNRELATED[d["rule"]].search(d["message"]))]
    assert not errors, "\n".join(errors)
    revealed = [d["message"] for d in report["generalDiagnostics"]
                if Path(d["file"]).name == "probe.py" and d["severity"] == "information"]
    assert revealed == ['Type of "c" is "Tensor"'], revealed
