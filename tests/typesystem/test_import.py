"""The rule core and the markers never pull in torch, mypy or numpy.

Import *time* is measured by benchmarks/import_time.py, not asserted here.
"""

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

SNIPPET = """
import sys
from pathlib import Path
import {module}
print(",".join(sorted(m for m in ("torch", "mypy", "numpy") if m in sys.modules)))
"""


@pytest.mark.parametrize("module", ["spmd_types.typesystem", "spmd_types"])
def test_import_pulls_in_nothing_heavy(module):
    heavy = subprocess.run(
        [sys.executable, "-c", SNIPPET.format(module=module)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert heavy == "", f"importing {module} imported {heavy}"


@pytest.mark.parametrize("package", ["spmd_types", "spmd_types.typesystem"])
def test_every_public_name_loads_from_where_it_is_declared(package):
    """The packages load names on first use; each name in ``__all__`` resolves, and nothing else is public."""
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_the_core_declares_for_type_checkers_what_it_loads():
    """``spmd_types.typesystem`` imports for type checkers exactly the names it loads at run time."""
    import spmd_types.typesystem as core

    tree = ast.parse(Path(core.__file__).read_text())
    checked = next(node for node in tree.body if isinstance(node, ast.If))
    declared = {
        alias.asname or alias.name: node.module.rsplit(".", 1)[-1]
        for node in checked.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert declared == core._DEFINED_IN


def test_the_core_exports_every_public_name_of_its_submodules():
    """Every name in a submodule's ``__all__`` is the package's, so no user needs to import past the package.

    ``tables`` renders the documentation; it is a user of the core, not a part of its interface.
    """
    import spmd_types.typesystem as core

    for info in pkgutil.iter_modules(core.__path__):
        if info.name == "tables":
            continue
        module = importlib.import_module(f"spmd_types.typesystem.{info.name}")
        for name in module.__all__:
            assert getattr(core, name) is getattr(module, name), f"{info.name}.{name}"


def test_the_error_codes_load_alone():
    """mypy's plugin entry point needs the error codes on every run: they load without the rest of the core."""
    loaded = subprocess.run(
        [sys.executable, "-c",
         "import sys, spmd_types.typesystem.codes; print(sorted(m for m in sys.modules if m.startswith('spmd')))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert loaded == "['spmd_types', 'spmd_types.typesystem', 'spmd_types.typesystem.codes']"
