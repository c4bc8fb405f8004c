"""The example programs under ``examples/``: the correct ones and their buggy twins.

A correct example is a module ``examples/<name>.py`` that defines ``EXAMPLE``
(something with ``run() -> Comparison``); a buggy twin is a module
``examples/bugs/<name>.py`` that defines ``EXAMPLE`` and ``WRONG``, the
quantities its simulated run gets wrong.  Helper modules define neither.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _modules(package: str) -> list[ModuleType]:
    found = importlib.import_module(package)
    names = sorted(info.name for info in pkgutil.iter_modules(found.__path__) if not info.ispkg)
    return [importlib.import_module(f"{package}.{name}") for name in names]


def correct_examples() -> list[ModuleType]:
    return [module for module in _modules("examples") if hasattr(module, "EXAMPLE")]


def buggy_twins() -> list[ModuleType]:
    return [module for module in _modules("examples.bugs") if hasattr(module, "EXAMPLE")]


def source(module: ModuleType) -> Path:
    assert module.__file__ is not None
    return Path(module.__file__).resolve()
