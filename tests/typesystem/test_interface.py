"""Code outside the rule core reaches it through ``spmd_types.typesystem``, never through a submodule.

The package exports every public name of its submodules (``test_import.py``),
so the plugin, the runtime, the other tests, the benchmarks, the examples and
the documentation tools have no reason to import past it, and importing past
it would tie them to how the core happens to be split into modules.  Left out:
the core itself and its own tests, which test the submodules one by one; and
the stubs, which name each class of the runtime package where it is defined so
that mypy does not analyze the whole core for every program it checks.
"""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import spmd_types.typesystem as core

ROOT = Path(__file__).resolve().parents[2]
CORE = "spmd_types.typesystem"
SUBMODULES = frozenset(info.name for info in pkgutil.iter_modules(core.__path__))
CHECKED = ("spmd_mypy", "spmd_types", "tests", "benchmarks", "examples", "tools")
LEFT_OUT = (ROOT / "spmd_types" / "typesystem", ROOT / "tests" / "typesystem")


def _past_the_core(tree: ast.AST) -> list[tuple[int, str]]:
    """The imports in ``tree`` of a core submodule, or of a name from one, with their lines."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith(f"{CORE}.")]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            if node.module.startswith(f"{CORE}."):
                found.append((node.lineno, node.module))
            elif node.module == CORE:
                found += [(node.lineno, f"{CORE}.{a.name}") for a in node.names if a.name in SUBMODULES]
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
              in ("import_module", "__import__")
              and node.args and isinstance(node.args[0], ast.Constant)
              and str(node.args[0].value).startswith(f"{CORE}.")):
            found.append((node.lineno, str(node.args[0].value)))
    return found


def test_nothing_outside_the_core_imports_past_its_interface() -> None:
    offenders = []
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if any(path.is_relative_to(left_out) for left_out in LEFT_OUT):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            offenders += [f"{path.relative_to(ROOT)}:{line}: {name}" for line, name in _past_the_core(tree)]
    assert not offenders, "import these names from spmd_types.typesystem instead:\n" + "\n".join(offenders)


def test_the_check_sees_every_way_of_importing_past_the_core() -> None:
    tree = ast.parse(
        "import spmd_types.typesystem.ops\n"
        "from spmd_types.typesystem.join import apply_op\n"
        "from spmd_types.typesystem import collectives, lookup\n"
        "importlib.import_module('spmd_types.typesystem.loss')\n"
        "from spmd_types.typesystem import CALLS\n"
    )
    assert [line for line, _ in _past_the_core(tree)] == [1, 2, 3, 4]
