"""``python -m spmd_mypy.cli``: the report, the exit status, the settings and stubs it picks.

The mypy runs share one cache directory (``MYPY_CACHE_DIR``), so torch is
analysed once; every test checks files of its own module names.
"""

from __future__ import annotations

import configparser
import io
from pathlib import Path

import pytest
from mypy import modulefinder
from mypy.options import Options

from spmd_mypy import cli, recommended
from tests.examples.example_catalog import EXAMPLES, ROOT, buggy_twins, correct_examples, source
from tests.plugin.harness import CaseFile

BUGGY = '''\
from typing import Annotated

import torch.nn.functional as F
from torch import Tensor

from spmd_types import I, P, R, S, all_reduce


def layer(x: Annotated[Tensor, I["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    h = F.linear(x, w)  # the input is I: a spmd-mix error
    p: Annotated[Tensor, P["tp"]] = h.sum()
    return all_reduce(p, "tp", dst=I)  # I returned where R is declared: a spmd-boundary error
'''

CLEAN = '''\
from typing import Annotated

from torch import Tensor

from spmd_types import P, R, all_reduce


def reduce(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(p, "tp", dst=R)
'''


@pytest.fixture(autouse=True)
def shared_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path_factory.getbasetemp() / "cli-mypy-cache"
    monkeypatch.setenv("MYPY_CACHE_DIR", str(root))


def run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main(args, out)
    return status, out.getvalue()


def blocks(report: str) -> dict[str, str]:
    """The report's text for each file, by file name."""
    found: dict[str, str] = {}
    name = None
    for line in report.splitlines():
        words = line.split()
        if line.startswith("  ") and not line.startswith("   ") and words and words[-1].endswith(".py"):
            name = words[-1]
            found[name] = ""
        elif not line.startswith("  "):
            name = None
        if name is not None:
            found[name] += line + "\n"
    return found


def user_config(directory: Path, plugins: bool, **mypy_options: str) -> Path:
    """A mypy.ini in ``directory``: the recommended sections, with or without the plugin."""
    config = configparser.ConfigParser(interpolation=None)
    config.read_string(recommended.render("ini", skip_torch_internals=True))
    if not plugins:
        del config["mypy"]["plugins"]
    config["mypy"].update(mypy_options)
    path = directory / "mypy.ini"
    with path.open("w") as handle:
        config.write(handle)
    return path


def test_demo_reports_every_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """``spmd-check examples/`` (the demo): correct examples clean, each twin with exactly its marked errors."""
    monkeypatch.chdir(ROOT)
    status, report = run([str(EXAMPLES.relative_to(ROOT))])
    assert status == 1, report
    assert "using the recommended settings (spmd-check --print-config)" in report.splitlines()[0]
    by_file = blocks(report)
    for module in correct_examples():
        assert by_file[source(module).name].split()[0] == "clean", report
    marked = 0
    for module in buggy_twins():
        text = by_file[source(module).name]
        marks = [(line, mark.code) for line, found in CaseFile.read(source(module)).expected.items() for mark in found]
        marked += len(marks)
        assert text.split()[:2] == [str(len(marks)), "error" if len(marks) == 1 else "errors"], text
        for line, code in marks:
            assert f"line {line}  [{code}]" in text, text
    assert report.rstrip().splitlines()[-1].startswith(f"{marked} errors in {len(buggy_twins())} files ("), report


def test_exit_zero_reports_but_does_not_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    twin = source(buggy_twins()[0]).relative_to(ROOT)
    status, report = run(["--exit-zero", str(twin)])
    assert status == 0
    assert "1 error" in report and "0 files clean." in report


def test_clean_file_exits_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "clean_reduce.py").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    status, report = run(["clean_reduce.py"])
    assert status == 0, report
    assert "clean     clean_reduce.py" in report
    assert report.rstrip().endswith("The file is clean.")


def test_errors_show_line_code_source_and_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "buggy_layer.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    status, report = run(["buggy_layer.py"])
    assert status == 1, report
    text = blocks(report)["buggy_layer.py"]
    assert "line 10  [spmd-mix]" in text and "line 12  [spmd-boundary]" in text
    assert "> h = F.linear(x, w)\n" in text  # the source line, without its comment
    assert 'fix: convert(x, "tp", src=I, dst=R)' in text
    assert report.rstrip().endswith("2 errors in 1 file (1 spmd-boundary, 1 spmd-mix); 0 files clean.")


def test_a_user_config_that_loads_the_plugin_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "buggy_layer_own_config.py").write_text(BUGGY)
    user_config(tmp_path, plugins=True, disable_error_code="spmd-mix")
    monkeypatch.chdir(tmp_path)
    status, report = run(["buggy_layer_own_config.py"])
    assert status == 1, report
    assert "using your mypy.ini" in report.splitlines()[0]
    assert "[spmd-boundary]" in report and "[spmd-mix]" not in report


def test_a_user_config_without_the_plugin_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "buggy_layer_no_plugin.py").write_text(BUGGY)
    user_config(tmp_path, plugins=False)
    monkeypatch.chdir(tmp_path)
    status, report = run(["buggy_layer_no_plugin.py"])
    assert status == 1, report
    assert "(mypy.ini does not load spmd_mypy.plugin)" in report.splitlines()[0]
    assert "[spmd-mix]" in report


def test_a_named_config_without_the_plugin_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = user_config(tmp_path, plugins=False)
    (tmp_path / "empty_module.py").write_text("")
    status, _ = run(["--config-file", str(config), str(tmp_path / "empty_module.py")])
    assert status == 2
    assert "does not load the plugin" in capsys.readouterr().err


def test_mypy_failure_exits_two(tmp_path: Path) -> None:
    status, report = run([str(tmp_path / "missing.py")])
    assert status == 2
    assert "could not check" in report


# -- stubs ------------------------------------------------------------------------------


def options(mypy_path: list[str]) -> Options:
    found = Options()
    found.mypy_path = mypy_path
    return found


def test_checkout_stubs_when_none_are_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(modulefinder, "get_search_dirs", lambda executable: ([str(tmp_path)], [str(tmp_path)]))
    assert cli.find_stubs(options([])) == ROOT / "stubs"


def test_no_stubs_path_when_the_stubs_package_is_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "spmd_types-stubs").mkdir()
    (tmp_path / "spmd_types-stubs" / "__init__.pyi").write_text("")
    monkeypatch.setattr(modulefinder, "get_search_dirs", lambda executable: ([], [str(tmp_path)]))
    assert cli.find_stubs(options([])) is None


def test_no_stubs_path_when_mypy_path_has_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(modulefinder, "get_search_dirs", lambda executable: ([], []))
    assert cli.find_stubs(options([str(ROOT / "stubs")])) is None


def test_missing_stubs_are_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(modulefinder, "get_search_dirs", lambda executable: ([], []))
    monkeypatch.setattr(cli, "CHECKOUT_STUBS", tmp_path)
    with pytest.raises(cli.SetupError, match="pip install"):
        cli.find_stubs(options([]))


# -- parsing mypy's output -------------------------------------------------------------


def test_parse_output_attaches_notes_and_keeps_stray_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    stdout = (
        f"{path}:3:5: error: Argument 1 has incompatible type  [arg-type]\n"
        f'{path}:3:5: note: "dict" is invariant\n'
        f"{path}:7: note: Revealed type is \"int\"\n"
        f"{path}:9: error: on axis 'tp': I does not mix with V; fix: convert(w, \"tp\", src=I, dst=R)  [spmd-mix]\n"
        "mypy: some message about the run\n"
    )
    findings, other = cli.parse_output(stdout)
    first, note, mix = findings[path.resolve()]
    assert (first.kind, first.line, first.code, first.notes) == ("error", 3, "arg-type", ['"dict" is invariant'])
    assert (note.kind, note.line, note.code) == ("note", 7, None)
    assert mix.code == "spmd-mix" and mix.message.endswith('dst=R)')
    assert other == ["mypy: some message about the run"]


# -- the baseline -----------------------------------------------------------------------


def test_a_baseline_hides_known_errors_and_fails_on_new_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "layers.py").write_text(BUGGY)
    assert run(["--baseline", "known.json", "--update-baseline", "layers.py"]) == (
        0, "spmd-check: recorded 2 errors in known.json\n")
    status, report = run(["--baseline", "known.json", "layers.py"])
    assert status == 0, report
    assert "clean     layers.py" in report
    assert report.rstrip().endswith("Baseline known.json: 2 known errors not shown.")

    # Lines added above move the errors: still known.  A second copy of a known error is new.
    moved = "import math  # a new first line\n" + BUGGY
    moved += moved[moved.index("def layer"):].replace("def layer", "def layer_copy")
    (tmp_path / "layers.py").write_text(moved)
    status, report = run(["--baseline", "known.json", "layers.py"])
    assert status == 1, report
    assert [line.split()[1] for line in report.splitlines() if line.startswith("      line ")] == ["15", "17"]
    assert "2 errors in 1 file (1 spmd-boundary, 1 spmd-mix)" in report

    # Fixing a known error leaves an entry that no longer occurs; the report says so.
    (tmp_path / "layers.py").write_text(BUGGY.replace('dst=I)', 'dst=R)'))
    status, report = run(["--baseline", "known.json", "layers.py"])
    assert status == 0, report
    assert report.rstrip().endswith(
        "Baseline known.json: 1 known error not shown; 1 recorded error no longer occurs (--update-baseline drops it).")


def test_a_baseline_survives_updates_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is stable: recording the same errors again writes the same bytes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stable_layers.py").write_text(BUGGY)
    run(["--baseline", "known.json", "--update-baseline", "stable_layers.py"])
    first = (tmp_path / "known.json").read_text()
    (tmp_path / "stable_layers.py").write_text("\n\n" + BUGGY)
    run(["--baseline", "known.json", "--update-baseline", "stable_layers.py"])
    assert (tmp_path / "known.json").read_text() == first
    assert '"path": "stable_layers.py", "code": "spmd-mix"' in first


@pytest.mark.parametrize(("content", "message"), [
    (None, "known.json does not exist; create it with --update-baseline known.json"),
    ("not json", "known.json is not a baseline written by spmd-check"),
    ('{"format": 0, "errors": []}', "known.json is not a baseline written by this version of spmd-check"),
    ('{"format": 1, "errors": [{"path": "a.py"}]}', "known.json has an entry spmd-check cannot read"),
])
def test_an_unreadable_baseline_stops_before_mypy_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], content: str | None,
                                                        message: str) -> None:
    monkeypatch.chdir(tmp_path)
    if content is not None:
        (tmp_path / "known.json").write_text(content)
    assert cli.main(["--baseline", "known.json", "no_such_file.py"]) == 2
    assert capsys.readouterr().err.startswith(f"spmd-check: {message}")


# -- variants -----------------------------------------------------------------------------

SWITCHED = '''\
from typing import Annotated

from torch import Tensor

from spmd_types import I, R, V, all_gather, all_reduce


def _configured() -> bool:
    return True


SEQUENCE_PARALLEL = _configured()


def layer(r: Annotated[Tensor, R["tp"]], i: Annotated[Tensor, I["tp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    if SEQUENCE_PARALLEL:
        gathered = all_gather(r, "tp", src=V, dst=R)
    else:
        reduced = all_reduce(r, "tp", dst=R)
    mixed = i * v
'''


def _variant_project(tmp_path: Path, variants: str) -> None:
    (tmp_path / "switched.py").write_text(SWITCHED)
    config = user_config(tmp_path, plugins=True, mypy_path=str(ROOT / "stubs"))
    config.write_text(config.read_text().replace("[mypy.plugins.spmd]\n", f"[mypy.plugins.spmd]\nvariants = {variants}\n"))


def test_variants_check_every_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each branch of a module-level switch is checked in the variant that takes it; the report says which."""
    monkeypatch.chdir(tmp_path)
    _variant_project(tmp_path, "sp: SEQUENCE_PARALLEL=true; nosp: SEQUENCE_PARALLEL=false")
    status, report = run(["switched.py"])
    assert status == 1, report
    block = blocks(report)["switched.py"]
    assert [line.split()[1:3] for line in block.splitlines() if line.startswith("      line ")] == [
        ["17", "[spmd-collective]"], ["19", "[spmd-collective]"], ["20", "[spmd-mix]"]]
    assert block.count("only in variant sp") == 1 and block.count("only in variant nosp") == 1
    assert "the input is R but all_gather was told src=V" in block.split("only in variant sp")[0]
    assert "only in variant" not in block.split("[spmd-mix]")[1]  # found in both: reported once, untagged
    assert "Checked 2 variants: sp (SEQUENCE_PARALLEL=true); nosp (SEQUENCE_PARALLEL=false)." in report

    status, report = run(["--variant", "nosp", "switched.py"])
    assert status == 1 and "all_gather" not in report and "all_reduce on axis 'tp'" in report, report
    assert "only in variant" not in report


def test_an_unknown_variant_or_a_malformed_one_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _variant_project(tmp_path, "sp: SEQUENCE_PARALLEL=true")
    assert cli.main(["--variant", "tp1", "switched.py"]) == 2
    assert "no variant named 'tp1' (the variants: sp)" in capsys.readouterr().err
    _variant_project(tmp_path, "SEQUENCE_PARALLEL=true")
    assert cli.main(["switched.py"]) == 2
    assert "variants takes `name: SWITCH=true, OTHER=false; name2: ...`" in capsys.readouterr().err
