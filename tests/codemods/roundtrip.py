"""Running an example, stripped of its boundary and parameter annotations, under spmd-annotate.

The top module's inputs get the types the original example declares (the user
of ``spmd-annotate`` declares them the same way: a collective or
``assert_type`` on the input); everything else is inferred.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

import torch

from spmd_types import I, assert_type, convert
from spmd_types._declarations import Declarations, Each, Items, OnMesh, Tree, annotations_of, declared_trees
from spmd_types.typesystem import Shard, SpmdType, markers_from_text


def load(path: Path, name: str) -> ModuleType:
    """The module at ``path``, imported as ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def resolved(tree: Tree, axes: Iterable[str]) -> Tree:
    """A declaration with each ``PartitionSpec`` in it read on a mesh of ``axes`` (``R`` where it names no axis)."""
    if isinstance(tree, OnMesh):
        return tree.on(axes)
    if isinstance(tree, Each):
        return Each(resolved(tree.item, axes))
    if isinstance(tree, Items):
        return Items(tuple(None if t is None else resolved(t, axes) for t in tree.items))
    return tree


def declared(cls: type, axes: Iterable[str] = ()) -> dict[str, object]:
    """What a module class declares at the positions spmd-annotate writes, by position, on a mesh of ``axes``."""
    forward = Declarations.of(cls.forward, "forward")
    out: dict[str, object] = {name: tree for name, tree in declared_trees(annotations_of(cls)).items()}
    out.update({f"forward({name})": tree for name, tree in forward.parameters.items()})
    if forward.returns is not None:
        out["forward -> return"] = forward.returns
    return {position: resolved(tree, axes) for position, tree in out.items()}


def as_declared(x: torch.Tensor, t: SpmdType) -> torch.Tensor:
    """The global value ``x`` laid out as ``t`` (a shard is each rank's slice), and typed ``t``."""
    for axis, kind in t.items():
        if isinstance(kind, Shard):
            x = convert(x, axis, src=I, dst=kind)
    return assert_type(x, *markers_from_text(str(t)))


def module_example_run(example: object, module: type, inputs: list[SpmdType]) -> Callable[[], None]:
    """Build ``module`` with the example's options and call it on its inputs, typed ``inputs``."""

    def run() -> None:
        built = module(**example.options)  # type: ignore[attr-defined]
        generator = torch.Generator().manual_seed(0)
        args = [as_declared(x, t) for x, t in zip(example.inputs(generator), inputs, strict=True)]  # type: ignore[attr-defined]
        built(*args)

    return run


def training_example_run(stripped: ModuleType, batch: SpmdType) -> Callable[[], None]:
    """``data_parallel_loss``'s training step on random micro-batches laid out as ``batch``."""

    def run() -> None:
        example = stripped.EXAMPLE
        model = stripped.TokenClassifier(example.vocab, dim=5)
        generator = torch.Generator().manual_seed(0)
        batches = [tuple(as_declared(x, batch) for x in example._micro_batch(generator))
                   for _ in range(example.micro_batches)]
        example.step(model, batches)

    return run


def input_types(cls: type, axes: Iterable[str]) -> list[SpmdType]:
    """The declared types of ``forward``'s arguments, in order, on a mesh of ``axes``."""
    forward = Declarations.of(cls.forward, "forward")
    names = list(inspect.signature(cls.forward).parameters)[1:]
    types = [resolved(forward.parameters[name], axes) for name in names]
    assert all(isinstance(t, SpmdType) for t in types)
    return types  # type: ignore[return-value]

