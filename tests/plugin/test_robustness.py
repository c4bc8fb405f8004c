"""The plugin is light, inert on real unannotated code, and configurable as documented."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mypy import api

from tests.plugin.harness import ROOT, SUBPROCESS_ENV, config_text

TORCH = Path(__import__("torch").__file__).parent


def test_plugin_imports_neither_torch_nor_the_runtime() -> None:
    snippet = textwrap.dedent("""
        import sys
        import spmd_mypy.plugin, spmd_mypy.hooks
        runtime = {"spmd_types._collectives", "spmd_types._local", "spmd_types._mesh", "spmd_types._prims"}
        print(sorted(m for m in sys.modules if m in runtime or m == "torch" or m.startswith("torch.")))
    """)
    loaded = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, check=True,
                            cwd=ROOT).stdout.strip()
    assert loaded == "[]"


@pytest.mark.parametrize("package", ["distributed/tensor/parallel", "nn/modules"])
def test_inert_on_real_unannotated_code(tmp_path: Path, package: str) -> None:
    """On torch's own sources the plugin reports nothing and changes none of mypy's results.

    The sources are copied into a user package (mypy does not report errors in
    installed packages), so mypy's full output is compared with and without the plugin.
    """
    copy = tmp_path / package.replace("/", "_")
    shutil.copytree(TORCH / package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    outputs = {}
    for plugin in (True, False):
        text = config_text()
        if not plugin:
            text = text.replace("plugins = spmd_mypy.plugin\n", "")
        config = tmp_path / f"plugin-{plugin}.ini"
        config.write_text(text)
        stdout, stderr, status = api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / f"cache-{plugin}"),
                                          "--no-error-summary", str(copy)])
        assert status in (0, 1), stdout + stderr  # 2 would be a crash or a usage error
        assert "INTERNAL ERROR" not in stdout + stderr
        outputs[plugin] = stdout
    assert "[spmd-" not in outputs[True]
    assert outputs[True] == outputs[False]


def test_pyproject_options(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f"""
        [tool.mypy]
        plugins = ["spmd_mypy.plugin"]
        mypy_path = "{ROOT / 'stubs'}"
        allow_redefinition = true
        local_partial_types = true

        [tool.spmd-mypy]
        axes = ["dp", "tp"]
        library_axes = {{tp = "dp"}}
    """))
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from typing import Annotated
        from megatron.core.tensor_parallel import reduce_from_tensor_model_parallel_region
        from torch import Tensor
        from spmd_types import P, R
        def f(x: Annotated[Tensor, R["pd"]]) -> None: ...
        def g(p: Annotated[Tensor, P["dp"]]) -> None:
            reveal_type(reduce_from_tensor_model_parallel_region(p))
    """))
    stdout, _, _ = api.run(["--config-file", str(tmp_path / "pyproject.toml"), "--cache-dir", str(tmp_path / "c"),
                            str(tmp_path / "m.py")])
    assert "unknown mesh axis 'pd' (the configured axes are dp, tp)  [spmd-axis]" in stdout
    assert "SpmdTensor[Literal['dp:I']]" in stdout, stdout


@pytest.mark.parametrize(
    ("options", "message"),
    [({"strict_axes": "maybe"}, "strict_axes must be true or false"),
     ({"axes_typo": "dp"}, "unknown option(s) in [mypy.plugins.spmd]: axes_typo"),
     ({"strict_axes": "true"}, "strict_axes needs the list of mesh axes in axes"),
     ({"library_axes": "pp=model"}, "library_axes names unknown group(s) pp; the groups are tp, cp, ep"),
     ({"library_axes": "tp"}, "library_axes takes group=axis pairs (tp=model, cp=context), got 'tp'")],
)
def test_bad_options_stop_with_a_clear_message(tmp_path: Path, options: dict[str, str], message: str) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text(config_text(plugin_options=options))
    (tmp_path / "m.py").write_text("x = 1\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), str(tmp_path / "m.py")],
                            capture_output=True, text=True, cwd=ROOT, env=SUBPROCESS_ENV)
    assert result.returncode == 2
    assert f"spmd-mypy: {config}: {message}" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_changing_options_invalidates_the_cache(tmp_path: Path) -> None:
    """report_config_data puts the options in mypy's cache, so a change re-checks modules."""
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from typing import Annotated
        from torch import Tensor
        from spmd_types import R
        def f(x: Annotated[Tensor, R["tp"]]) -> None: ...
    """))
    outputs = []
    for axes in ("tp", "dp"):
        config = tmp_path / "mypy.ini"
        config.write_text(config_text(plugin_options={"axes": axes}))
        stdout, _, _ = api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
                                str(tmp_path / "m.py")])
        outputs.append(stdout)
    assert "[spmd-axis]" not in outputs[0]
    assert "unknown mesh axis 'tp' (the configured axes are dp)  [spmd-axis]" in outputs[1]


def test_warm_cache_after_a_dependency_changes(tmp_path: Path) -> None:
    """A module re-checked because an import changed is checked exactly as on a cold cache."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("Z = 1\n")
    (package / "model.py").write_text(textwrap.dedent("""
        from typing import Annotated
        import torch
        from torch import Tensor, nn
        from spmd_types import S
        from pkg.helper import Z

        class M(nn.Module):
            weight: Annotated[nn.Parameter, S["tp", 0]]

            def __init__(self) -> None:
                super().__init__()
                self.weight = nn.Parameter(torch.empty(2, Z))
    """))
    config = tmp_path / "mypy.ini"
    config.write_text(config_text())
    outputs = []
    for _ in range(2):
        stdout, _, _ = api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), str(package)])
        outputs.append(stdout)
        (package / "helper.py").write_text("Z = 2\nW = 3\n")
    assert outputs[0].startswith("Success") and outputs[1].startswith("Success"), outputs


def test_missing_stubs_are_reported_once_per_module(tmp_path: Path) -> None:
    """Without the stubs, annotations could not be checked; the plugin says so instead of passing."""
    config = tmp_path / "mypy.ini"
    config.write_text(config_text().replace(f"mypy_path = {ROOT / 'stubs'}\n", ""))
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from typing import Annotated
        from torch import Tensor
        from spmd_types import P, R
        def f(x: Annotated[Tensor, P["tp"]], b: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
            return x + b
    """))
    stdout, _, _ = api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "m.py")])
    assert stdout.count("[spmd-annotation]") == 1, stdout
    assert "SPMD annotations are not checked: mypy reads spmd_types from its source" in stdout
    assert "m.py:5: error:" in stdout


def test_a_warm_run_does_not_load_the_hooks(tmp_path: Path) -> None:
    """With every module cached mypy asks for no hook, so only the core's error codes are imported (a faster warm run)."""
    config = tmp_path / "mypy.ini"
    config.write_text(config_text())
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from typing import Annotated
        from torch import Tensor
        from spmd_types import R
        def f(x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
            return x * 2
    """))
    snippet = textwrap.dedent(f"""
        import sys
        from mypy import api
        out, err, status = api.run(["--config-file", {str(config)!r}, "--cache-dir", {str(tmp_path / "cache")!r},
                                    {str(tmp_path / "m.py")!r}])
        print(status, "spmd_mypy.hooks" in sys.modules, "spmd_types.typesystem.join" in sys.modules)
    """)
    runs = [subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, check=True, cwd=ROOT,
                           env=SUBPROCESS_ENV).stdout.split() for _ in range(2)]
    assert runs == [["0", "True", "True"], ["0", "False", "False"]]


def test_after_the_first_question_mypy_asks_the_router_itself() -> None:
    """The plugin's interpreted ``get_*_hook`` methods answer the first question only: it loads the router,
    whose methods mypy then calls directly (compiled in the mypyc build), and which answer as before."""
    from mypy.options import Options

    from spmd_mypy.plugin import SpmdPlugin

    plugin = SpmdPlugin(Options())
    questions = ("type_analyze", "function", "function_signature", "method", "method_signature", "attribute")
    first = plugin.get_function_hook("torch._C._VariableFunctions.matmul")
    router = plugin._router
    assert first is not None and router is not None
    for question in questions:
        asked = getattr(plugin, f"get_{question}_hook")
        assert asked.__self__ is router and asked.__name__ == f"{question}_hook"  # compiled: a builtin method
    assert plugin.get_function_hook("builtins.len") is None
    assert plugin.get_type_analyze_hook("typing.Annotated") is not None


@pytest.mark.parametrize(("version", "noted"), [("1.15.0", True), ("1.19.1+dev.abc", True), ("2.0.0", False),
                                                ("2.4.1", False), ("3.0.0", True)])
def test_an_unsupported_mypy_gets_a_note(version: str, noted: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """mypy < 2 (what some editors bundle) still loads the plugin; the user is told, on standard error."""
    from spmd_mypy.plugin import SpmdPlugin, plugin

    assert plugin(version) is SpmdPlugin
    captured = capsys.readouterr()
    assert captured.out == ""
    if noted:
        assert captured.err.startswith(f"spmd-mypy: note: mypy {version} is not a version the SPMD plugin supports")
    else:
        assert captured.err == ""


def test_library_axes_names_the_axis_of_a_library_default_group(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from typing import Annotated
        from megatron.core.tensor_parallel import reduce_from_tensor_model_parallel_region
        from torch import Tensor
        from spmd_types import P
        def f(p: Annotated[Tensor, P["model"]]) -> None:
            reveal_type(reduce_from_tensor_model_parallel_region(p))
    """))
    config = tmp_path / "mypy.ini"
    config.write_text(config_text(plugin_options={"library_axes": "tp=model"}))
    stdout, _, _ = api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "m.py")])
    assert "SpmdTensor[Literal['model:I']]" in stdout, stdout


def test_variants_in_both_configuration_forms(tmp_path: Path) -> None:
    from spmd_mypy import config

    ini, toml = tmp_path / "mypy.ini", tmp_path / "pyproject.toml"
    ini.write_text("[mypy.plugins.spmd]\nvariants = sp: SEQUENCE_PARALLEL=true, TP1=false; nosp: SEQUENCE_PARALLEL=no\n")
    toml.write_text('[tool.spmd-mypy]\nvariants = {sp = {SEQUENCE_PARALLEL = true, TP1 = false}, '
                    'nosp = {SEQUENCE_PARALLEL = false}}\n')
    expected = (config.Variant("sp", ("SEQUENCE_PARALLEL",), ("TP1",)), config.Variant("nosp", (), ("SEQUENCE_PARALLEL",)))
    assert config.load(str(ini)).variants == config.load(str(toml)).variants == expected
    assert expected[0].mypy_flags() == ["--always-true", "SEQUENCE_PARALLEL", "--always-false", "TP1"]
    toml.write_text('[tool.spmd-mypy]\nvariants = {sp = {SEQUENCE_PARALLEL = "yes"}}\n')
    with pytest.raises(config.ConfigError, match="variants must map each variant's name to switches"):
        config.load(str(toml))
