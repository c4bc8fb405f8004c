"""spmd-annotate round-trips the examples: strip their annotations, re-infer them, compare, type-check.

Each correct example (``tests/examples/example_catalog.py``) is stripped of the
annotations spmd-annotate writes (``forward``'s parameters and result, the
parameters declared in the class body; helpers keep theirs), run on the
simulated mesh it names with only its top module's inputs typed, and
re-annotated from what the run showed.  Every position must get back its
original type, and the re-annotated file must type-check clean with mypy and
the plugin.  A layer whose contract depends on its flags (generic in its
boundary types, as ``examples/megatron_layers.py``'s) is seen with different
types by its instances: where they disagree, spmd-annotate must write nothing
and say why.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")
pytest.importorskip("libcst")

from spmd_types.codemods.observe import observe
from spmd_types.codemods.writer import write_annotations
from tests.codemods.roundtrip import declared, input_types, load, module_example_run, training_example_run
from tests.codemods.stripping import strip
from tests.examples.example_catalog import ROOT, correct_examples, source
from tests.plugin.harness import config_text, run_mypy

EXAMPLES = {module.__name__.rpartition(".")[2]: module for module in correct_examples()}


def _round_trip(original: ModuleType, tmp: Path) -> tuple[ModuleType, ModuleType, list[str], tuple[str, ...]]:
    """The stripped and the re-annotated example modules, the observation's notes, and the mesh's axes."""
    name = original.__name__.rpartition(".")[2]
    path = tmp / f"{name}.py"
    path.write_text(strip(source(original).read_text()))
    stripped = load(path, f"stripped_{name}")
    example = original.EXAMPLE
    if hasattr(example, "module"):
        mesh = dict(example.mesh)
        run = module_example_run(example, getattr(stripped, example.module.__name__),
                                 input_types(example.module, mesh))
    else:  # the data-parallel training step: the model's input is the micro-batches' layout
        run = training_example_run(stripped, original.SHARDED)
        mesh = {"dp": example.dp}
    observation = observe(run, mesh, keep=lambda cls: cls.__module__ == stripped.__name__)
    write_annotations(observation, root=tmp)
    return stripped, load(path, f"reannotated_{name}"), [str(note) for note in observation.notes], tuple(mesh)


def _modules(example: ModuleType) -> list[str]:
    """The names of the example's own module classes."""
    return [value.__name__ for value in vars(example).values()
            if isinstance(value, type) and value.__module__ == example.__name__ and hasattr(value, "forward")]


def _inherited(cls: type) -> dict[str, object]:
    """The parameters ``cls`` declares through base classes of other modules: stripping its file leaves them."""
    outside = [base for base in cls.__mro__[1:] if base.__module__ != cls.__module__ and hasattr(base, "forward")]
    return {position: spmd for base in outside for position, spmd in declared(base).items()
            if not position.startswith("forward")}


def _flag_generic(cls: type) -> bool:
    """Whether ``cls`` is generic in its boundary types, which its flags choose per instance (docs/adopting.md)."""
    return bool(getattr(cls, "__parameters__", ()))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_an_example_round_trips(name: str, tmp_path: Path) -> None:
    original = EXAMPLES[name]
    stripped, again, notes, axes = _round_trip(original, tmp_path)
    classes = _modules(original)
    assert classes
    flag_generic = [cls for cls in classes if _flag_generic(getattr(original, cls))]
    for cls in classes:
        left = declared(getattr(stripped, cls))
        assert left == _inherited(getattr(stripped, cls)), "the stripped example still declares types"
        if cls in flag_generic:
            # Its instances have different contracts: where they disagree spmd-annotate says so and writes
            # nothing, rather than one configuration's types; what it does write is the original's.
            written, meant = declared(getattr(again, cls), axes), declared(getattr(original, cls), axes)
            assert all(meant.get(position) == spmd for position, spmd in written.items()), (written, notes)
            assert any(note.startswith(f"{cls}.") for note in notes), notes
        else:
            assert declared(getattr(again, cls), axes) == declared(getattr(original, cls), axes), notes
    assert [note for note in notes if not note.startswith(tuple(f"{cls}." for cls in flag_generic))] == []
    config = tmp_path / "mypy.ini"
    config.write_text(config_text({"mypy_path": f"{ROOT / 'stubs'}:{ROOT}"}))
    reports, raw = run_mypy([tmp_path / f"{name}.py"], config, tmp_path / "cache")
    assert not reports, raw
