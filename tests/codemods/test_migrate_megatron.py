"""spmd-migrate on megatron-core's own ``tensor_parallel/layers.py`` and ``cross_entropy.py``.

The files are those of the installed megatron-core (``make setup`` installs
the release the ecosystem table was read from, without its dependencies).
The migrated ``layers.py`` must

* import, as a module of the ``megatron.core.tensor_parallel`` package loaded
  from a temporary directory;
* type-check with mypy and the plugin as the original does, apart from what
  the new calls ask for: the mesh axis of each process group passed as an axis
  (``spmd-axis``), and a group that may be ``None``, which ``spmd_types`` does
  not accept where Megatron substituted its default group (``arg-type``);
* compute the same outputs and gradients as the original, on 2 and 4 real
  gloo ranks, through every call site the codemod rewrote: the
  vocabulary-parallel embedding (reduced or reduce-scattered), the
  column-parallel linear layer (copy into the region and gather of the
  output; a frozen weight under sequence parallelism) and the row-parallel
  one (scatter of its input and reduction; reduce-scatter under sequence
  parallelism).

``cross_entropy.py`` calls no mapping function: its three reductions are
in-place ``torch.distributed.all_reduce`` calls inside an autograd Function,
which the codemod reports and leaves, so the file comes back unchanged.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.distributed as dist
from mypy import api

from tests.forked_gloo import run_forked
from tests.plugin.harness import OUTPUT, config_text

pytest.importorskip("libcst", reason="libcst is the codemods extra; make setup installs it")

from spmd_types.codemods.rewrite import Migration, migrate_source


def _tensor_parallel_dir() -> Path | None:
    spec = importlib.util.find_spec("megatron.core")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "tensor_parallel"


TENSOR_PARALLEL = _tensor_parallel_dir()
pytestmark = pytest.mark.skipif(TENSOR_PARALLEL is None,
                                reason="megatron-core is not installed (make setup installs it without its dependencies)")

IN_PLACE = "torch.distributed.all_reduce"


@pytest.fixture(scope="module")
def layers() -> Migration:
    assert TENSOR_PARALLEL is not None
    path = TENSOR_PARALLEL / "layers.py"
    return migrate_source(path.read_text(), path)


def test_layers_every_mapping_call_is_rewritten(layers: Migration) -> None:
    assert [(f.function, f.became) for f in layers.rewritten] == [
        ("reduce_scatter_to_sequence_parallel_region", "reduce_scatter(src=P, dst=S(0))"),
        ("reduce_from_tensor_model_parallel_region", "all_reduce(src=P, dst=I)"),
        ("gather_from_sequence_parallel_region", "all_gather(src=S(0), dst=R)"),
        ("copy_to_tensor_model_parallel_region", "reinterpret(src=I, dst=R)"),
        ("gather_from_tensor_model_parallel_region", "all_gather(src=S(-1), dst=I)"),
        ("scatter_to_tensor_model_parallel_region", "convert(src=I, dst=S(-1))"),
        ("reduce_scatter_to_sequence_parallel_region", "reduce_scatter(src=P, dst=S(0))"),
        ("reduce_from_tensor_model_parallel_region", "all_reduce(src=P, dst=I)"),
    ]
    assert {f.function for f in layers.left} == {IN_PLACE}  # the backward's gradient reductions
    assert "from .mappings import" not in layers.code
    assert "from spmd_types import I, P, R, S, all_gather, all_reduce, convert, reduce_scatter, reinterpret\n" in (
        layers.code)
    assert migrate_source(layers.code, TENSOR_PARALLEL / "layers.py").code == layers.code


def test_cross_entropy_is_left_as_it_is_with_its_in_place_reductions_reported() -> None:
    assert TENSOR_PARALLEL is not None
    path = TENSOR_PARALLEL / "cross_entropy.py"
    source = path.read_text()
    migration = migrate_source(source, path)
    assert migration.code == source and not migration.rewritten
    reduced = [line for line, text in enumerate(source.splitlines(), 1) if "torch.distributed.all_reduce(" in text]
    assert [(f.line, f.function) for f in migration.left] == [(line, IN_PLACE) for line in reduced]
    assert len(reduced) == 3


def _load(code: str, directory: Path) -> ModuleType:
    """``code`` as a module of the ``megatron.core.tensor_parallel`` package, from a file in ``directory``."""
    path = directory / "migrated_layers.py"
    path.write_text(code)
    name = "megatron.core.tensor_parallel._spmd_migrated_layers"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def migrated_layers(layers: Migration, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return _load(layers.code, tmp_path_factory.mktemp("migrated"))


def test_the_migrated_layers_import(migrated_layers: ModuleType) -> None:
    from megatron.core.tensor_parallel import layers

    import spmd_types

    assert migrated_layers.reinterpret is spmd_types.reinterpret
    for name in ("ColumnParallelLinear", "RowParallelLinear", "VocabParallelEmbedding"):
        assert getattr(migrated_layers, name) is not getattr(layers, name)


# -- type checking ----------------------------------------------------------------------

_REWRITTEN_CALL = re.compile(r"(?<![.\w])(reinterpret|all_reduce|all_gather|convert|reduce_scatter)\(")


def _errors(path: Path, config: Path, cache: Path, shadow: Path | None) -> list[tuple[int, str | None, str]]:
    shadowing = ["--shadow-file", str(path), str(shadow)] if shadow is not None else []
    stdout, stderr, _ = api.run(["--config-file", str(config), "--cache-dir", str(cache), "--hide-error-context",
                                 "--no-error-summary", "--show-error-codes", *shadowing, str(path)])
    found = [OUTPUT.match(line) for line in stdout.splitlines()]
    errors = [(int(m["line"]), m["code"], m["message"]) for m in found if m is not None and m["kind"] == "error"]
    assert errors or stderr == "", stderr
    return errors


def test_the_migrated_layers_type_check_as_the_original_does(layers: Migration, tmp_path: Path) -> None:
    """No line gains an error, but for what the checker now asks of a rewritten call (see the module doc).

    Lines are matched by their text, since the rewrite moves them: a line
    kept from the original may have as many errors as it had there (a type
    can read differently, as ``Tensor`` where the untyped call gave
    ``Tensor | Any``), no more.
    """
    assert TENSOR_PARALLEL is not None
    config, cache, shadow = tmp_path / "mypy.ini", tmp_path / "cache", tmp_path / "migrated_layers.py"
    config.write_text(config_text())
    shadow.write_text(layers.code)
    path = TENSOR_PARALLEL / "layers.py"
    original_lines, migrated_lines = path.read_text().splitlines(), layers.code.splitlines()
    before = Counter(original_lines[line - 1].strip() for line, _, _ in _errors(path, config, cache, None))
    after = _errors(path, config, cache, shadow)
    assert before, "the original has errors of its own (untyped imports at least)"
    call_lines = {n for n, text in enumerate(migrated_lines, 1) if _REWRITTEN_CALL.search(text)}
    asked = [(line, code, message) for line, code, message in after if line in call_lines and (
        (code == "spmd-axis" and "cannot tell which mesh axis" in message)
        or (code == "arg-type" and message.startswith("Argument 2 to") and '"ProcessGroup | None"' in message))]
    kept = Counter(migrated_lines[line - 1].strip() for line, code, message in after
                   if (line, code, message) not in asked)
    assert kept - before == Counter()
    assert asked  # the checker does read the new calls


# -- values and gradients on real ranks -------------------------------------------------

_SEQ, _BATCH, _HIDDEN, _FFN, _VOCAB = 4, 3, 8, 12, 16

# Each layer configuration, and the spmd_types calls its forward and backward pass through.
CASES: dict[str, frozenset[str]] = {
    "embedding": frozenset({"all_reduce"}),
    "embedding-sequence-parallel": frozenset({"reduce_scatter"}),
    "column-copy-and-gather": frozenset({"reinterpret", "all_gather"}),
    "column-frozen-sequence-parallel": frozenset({"all_gather"}),
    "row-scatter-and-reduce": frozenset({"convert", "all_reduce"}),
    "row-sequence-parallel": frozenset({"reduce_scatter"}),
}


def _layer(module: ModuleType, case: str, world: int, group: Any) -> Any:
    from megatron.core.model_parallel_config import ModelParallelConfig

    config = ModelParallelConfig(tensor_model_parallel_size=world, use_cpu_initialization=True,
                                 params_dtype=torch.float64, sequence_parallel="sequence-parallel" in case)
    init = torch.nn.init.normal_
    if case.startswith("embedding"):
        return module.VocabParallelEmbedding(_VOCAB, _HIDDEN, init_method=init, config=config, tp_group=group,
                                             reduce_scatter_embeddings="sequence-parallel" in case)
    if case.startswith("column"):
        layer = module.ColumnParallelLinear(_HIDDEN, _FFN, config=config, init_method=init, bias=True,
                                            gather_output=case == "column-copy-and-gather", tp_group=group)
        # With more than one rank the layer all-reduces the input's gradient in its matmul instead of
        # copying the input into the region; turning that off takes the copy's path (the same math).
        layer.allreduce_dgrad = False
        if case == "column-frozen-sequence-parallel":
            layer.weight.requires_grad_(False)
        return layer
    return module.RowParallelLinear(_FFN, _HIDDEN, config=config, init_method=init, bias=True, skip_bias_add=False,
                                    input_is_parallel=case == "row-sequence-parallel", tp_group=group)


def _input(case: str, rank: int, world: int) -> Any:
    """This rank's input: the same on every rank where the layer expects a replicated one."""
    mine = torch.Generator().manual_seed(100 + rank)
    same = torch.Generator().manual_seed(7)
    if case.startswith("embedding"):
        tokens = _SEQ * world if "sequence-parallel" in case else _SEQ
        return torch.randint(0, _VOCAB, (_BATCH, tokens), generator=mine)
    if case == "column-frozen-sequence-parallel":
        return torch.randn(_SEQ, _BATCH, _HIDDEN, dtype=torch.float64, generator=mine).requires_grad_()
    if case == "row-sequence-parallel":
        return torch.randn(_SEQ * world, _BATCH, _FFN // world, dtype=torch.float64, generator=mine).requires_grad_()
    width = _HIDDEN if case.startswith("column") else _FFN
    return torch.randn(_SEQ, _BATCH, width, dtype=torch.float64, generator=same).requires_grad_()


def _run(layer: Any, x: Any, rank: int) -> tuple[Any, ...]:
    """The output, the input's gradient and the parameters' gradients for this rank's cotangent."""
    out = layer(x)
    out = out[0] if isinstance(out, tuple) else out
    cotangent = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(200 + rank))
    out.backward(cotangent)
    return (out.detach(), x.grad, *(p.grad for p in layer.parameters()))


def _recording(module: ModuleType, hits: list[tuple[str, int]]) -> None:
    """Record the name and calling line of every spmd_types call the module makes."""
    for name in sorted({name for calls in CASES.values() for name in calls}):
        function = getattr(module, name)

        def call(*args: Any, _function: Callable[..., Any] = function, _name: str = name, **kwargs: Any) -> Any:
            hits.append((_name, sys._getframe(1).f_lineno))
            return _function(*args, **kwargs)

        setattr(module, name, call)


def _compare(migrated: ModuleType, rank: int, world: int) -> list[tuple[str, int]]:
    from megatron.core.tensor_parallel import layers as original

    # Megatron allocates gather buffers on torch.cuda.current_device(); here (a forked worker) that is the CPU.
    torch.cuda.current_device = lambda: "cpu"
    hits: list[tuple[str, int]] = []
    _recording(migrated, hits)
    for case, calls in CASES.items():
        theirs_layer = _layer(original, case, world, dist.group.WORLD)
        ours_layer = _layer(migrated, case, world, dist.group.WORLD)
        with torch.no_grad():
            for theirs, ours in zip(theirs_layer.parameters(), ours_layer.parameters(), strict=True):
                ours.copy_(theirs)
        theirs_results = _run(theirs_layer, _input(case, rank, world), rank)
        start = len(hits)
        ours_results = _run(ours_layer, _input(case, rank, world), rank)
        assert {name for name, _ in hits[start:]} == calls, case
        names = ("output", "input gradient", *(name for name, _ in theirs_layer.named_parameters()))
        for what, a, b in zip(names, theirs_results, ours_results, strict=True):
            assert (a is None) == (b is None), (case, what)
            if a is not None:
                torch.testing.assert_close(b, a, rtol=0, atol=1e-12, msg=f"{case}: {what} differs")
    return hits


@pytest.mark.parametrize("world", [2, 4])
def test_the_migrated_layers_compute_the_same_values_and_gradients(migrated_layers: ModuleType, layers: Migration,
                                                                   world: int) -> None:
    hits = run_forked(world, lambda rank, size: _compare(migrated_layers, rank, size))
    lines = {line for rank_hits in hits for _, line in rank_hits}
    assert len(lines) == len(layers.rewritten)  # every rewritten call site ran
