"""spmd-annotate on megatron-core's tensor-parallel layers, run as they are on simulated ranks.

A column-parallel layer feeding a row-parallel one (Megatron's MLP, without
sequence parallelism) is run with its input declared ``I["tp"]``.  The types
observed at the layers' boundaries and parameters are those of
``docs/megatron.md``: the column-parallel layer takes ``I`` (its backward
all-reduces the input's gradient, as ``copy_to_tensor_model_parallel_region``
does) and returns its shard of the last dim; the row-parallel layer takes that
shard, reduces with ``reduce_from_tensor_model_parallel_region`` to ``I`` and
adds its ``I`` bias after the reduction.  The annotations are then written
into a copy of megatron-core's ``layers.py`` (all but the row-parallel result,
a tuple with no annotation to put the types into), and the copy, run again
under runtime checking, agrees with them.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("libcst")
layers = pytest.importorskip("megatron.core.tensor_parallel.layers",
                             reason="megatron-core is installed by `make setup`; run the suite through make")

from megatron.core.model_parallel_config import ModelParallelConfig  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I  # noqa: E402
from spmd_types.codemods.observe import observe  # noqa: E402
from spmd_types.codemods.writer import annotate_source  # noqa: E402
from spmd_types.typesystem import parse  # noqa: E402

LAST_DIM_SHARD = parse("tp:S(2)")  # docs/megatron.md's S(-1), of the 3-D [sequence, batch, hidden] activations


def _mlp(module: object) -> None:
    """Megatron's MLP, column- then row-parallel, on an I input of shape [sequence, batch, hidden]."""
    tp = spmd.current_mesh().get_group("tp")
    config = ModelParallelConfig(tensor_model_parallel_size=spmd.axis_size("tp"), use_cpu_initialization=True,
                                 perform_initialization=False)
    column = module.ColumnParallelLinear(8, 16, config=config, init_method=torch.nn.init.zeros_, bias=True,
                                         gather_output=False, tp_group=tp)
    row = module.RowParallelLinear(16, 8, config=config, init_method=torch.nn.init.zeros_, bias=True,
                                   input_is_parallel=True, skip_bias_add=False, tp_group=tp)
    hidden, _ = column(spmd.assert_type(torch.randn(3, 2, 8), I["tp"]))
    row(hidden)


def _observe(module: object) -> object:
    return observe(lambda: _mlp(module), {"tp": 2}, keep=lambda cls: cls.__module__ == module.__name__)


def test_the_observed_types_are_those_of_the_megatron_page() -> None:
    observation = _observe(layers)
    column, row = observation.types("ColumnParallelLinear"), observation.types("RowParallelLinear")
    assert column is not None and row is not None
    assert dict(column.arguments) == {"input_": parse("tp:I")}
    assert column.result == (LAST_DIM_SHARD, None)  # (output, output_bias): no bias returned
    assert dict(column.parameters) == {"weight": parse("tp:S(0)"), "bias": parse("tp:S(0)")}
    assert dict(row.arguments) == {"input_": LAST_DIM_SHARD}
    assert row.result == (parse("tp:I"), None)
    assert dict(row.parameters) == {"weight": parse("tp:S(1)"), "bias": parse("tp:I")}
    assert observation.notes == ()


def test_the_annotated_copy_of_layers_py_agrees_with_a_run(tmp_path: Path) -> None:
    observation = _observe(layers)
    source = Path(inspect.getsourcefile(layers)).read_text()
    rewrite = annotate_source(source, [c for c in observation.classes if c.file == inspect.getsourcefile(layers)])
    # RowParallelLinear.forward returns (output, None) and has no return annotation to put the type into.
    assert [str(note) for note in rewrite.notes] == [
        "RowParallelLinear.forward -> return: a tuple with elements of no SPMD type, and no annotation to add them "
        "to: not annotated"]
    after = rewrite.after
    assert 'input_: Annotated[torch.Tensor, I["tp"]],' in after
    assert ') -> Tuple[Annotated[torch.Tensor, S["tp", 2]], Optional[torch.Tensor]]:' in after
    assert '    weight: Annotated[torch.nn.Parameter, S["tp", 1]]\n    bias: Annotated[torch.nn.Parameter, I["tp"]]\n' \
        in after
    assert "    def forward(self, input_: Annotated[torch.Tensor, S[\"tp\", 2]]):" in after
    copy = tmp_path / "layers.py"
    copy.write_text(after)
    name = "megatron.core.tensor_parallel.annotated_layers"  # in Megatron's package: its relative imports resolve
    spec = importlib.util.spec_from_file_location(name, copy)
    assert spec is not None and spec.loader is not None
    annotated = importlib.util.module_from_spec(spec)
    sys.modules[name] = annotated
    try:
        spec.loader.exec_module(annotated)
        again = _observe(annotated)
    finally:
        del sys.modules[name]
    # Every declaration fits the run (a misfit would be a note); only the row-parallel result is still to write.
    assert again.notes == ()
    assert [(c.qualname, dict(c.arguments), c.result, dict(c.parameters)) for c in again.classes] == [
        ("RowParallelLinear", {}, (parse("tp:I"), None), {})]
