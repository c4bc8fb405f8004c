"""Every argument the op table names exists in torch's own signature of that op.

The table keys rules on parameter names; a typo (or a rename in a new torch)
would silently make an argument non-linear.  This reads the installed torch's
stub and source files with ``ast`` (importing torch is not needed) and checks
each rule against every overload of its function.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

import pytest

from spmd_types.typesystem import OPS
from spmd_types.typesystem.ops import MODULE_OPS, canonical_param

SPEC = importlib.util.find_spec("torch")
if SPEC is None or SPEC.origin is None:
    pytest.skip("torch is not installed", allow_module_level=True)
TORCH = Path(SPEC.origin).parent

# Where torch declares each namespace of the table (stubs first, then sources).
SOURCES = {
    "torch": ["_C/_VariableFunctions.pyi", "functional.py", "_C/_nn.pyi"],
    "torch.Tensor": ["_C/__init__.pyi", "_tensor.py"],
    "torch.nn.functional": ["nn/functional.pyi", "nn/functional.py", "_C/_nn.pyi", "_C/_VariableFunctions.pyi"],
    "torch.nn": ["nn/parameter.pyi", "nn/parameter.py"],
}
CLASSES = {"torch.Tensor": {"TensorBase", "Tensor"}, "torch.nn": {"Parameter"}}


@cache
def signatures(namespace: str) -> dict[str, list[set[str]]]:
    """Parameter names of every overload of every function in ``namespace``."""
    found: dict[str, list[set[str]]] = {}
    for relative in SOURCES[namespace]:
        path = TORCH / relative
        if not path.exists():
            continue
        tree = ast.parse(path.read_text())
        nodes = tree.body
        if namespace in CLASSES:
            nodes = [n for c in tree.body if isinstance(c, ast.ClassDef) and c.name in CLASSES[namespace]
                     for n in c.body]
        for node in nodes:
            if isinstance(node, ast.FunctionDef):
                a = node.args
                names = {canonical_param(x.arg) for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
                if a.vararg:
                    names.add(a.vararg.arg)
                found.setdefault(node.name, []).append(names)
    return found


def _split(name: str) -> tuple[str, str]:
    if name == "torch.nn.Parameter":  # a constructor: its parameters are those of __new__
        return "torch.nn", "__new__"
    for namespace in ("torch.nn.functional", "torch.Tensor"):
        if name.startswith(namespace + "."):
            return namespace, name[len(namespace) + 1:]
    return name.split(".", 1)[0], name.split(".", 1)[1]


@pytest.mark.parametrize("name", sorted(OPS))
def test_rule_arguments_exist_in_torch(name):
    namespace, short = _split(name)
    overloads = signatures(namespace).get(short)
    if overloads is None:
        # Properties (T, mT) and the in-place dunders torch does not declare (__itruediv__).
        assert short in {"T", "mT", "H", "mH", "real", "imag", "__itruediv__", "__pos__"}, f"torch has no {name}"
        return
    mentioned = set(OPS[name].params)
    everything = set().union(*overloads)
    assert mentioned <= everything, f"{name}: {sorted(mentioned - everything)} not among {sorted(everything)}"


@pytest.mark.parametrize(("module", "op"), sorted(MODULE_OPS.items()))
def test_module_ops_name_real_classes(module: str, op: str) -> None:
    nn = signatures_of_module_classes()
    assert module.rpartition(".")[2] in nn, f"torch.nn has no {module}"
    namespace, short = _split(op)
    assert short in signatures(namespace), f"{module} maps to unknown op {op}"


@cache
def signatures_of_module_classes() -> set[str]:
    """Names of the classes torch.nn exports (read from its __init__, without importing torch)."""
    tree = ast.parse((TORCH / "nn" / "modules" / "__init__.py").read_text())
    return {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}
