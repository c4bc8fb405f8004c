"""The package build; pyproject.toml holds its metadata.  This file only adds the opt-in compiled wheel.

    SPMD_TYPES_MYPYC=1 python -m pip wheel --no-build-isolation --no-deps -w dist .

builds a wheel whose plugin and rule core are compiled with mypyc (the modules
``tools.compiled`` lists; it needs mypy, and so a build without isolation, in
an environment that has it, and a C compiler).  The wheel carries the sources
beside the extensions, so it cannot be stale against itself.  Without the
variable, or for an editable install (whose extensions would land in the
checkout and shadow the sources being edited), the build is the pure one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent

if os.environ.get("SPMD_TYPES_MYPYC") == "1":
    if "editable_wheel" in sys.argv:
        raise SystemExit("SPMD_TYPES_MYPYC=1: the compiled build is not for editable installs (see tools/compiled.py)")
    sys.path.insert(0, str(HERE))
    from mypyc.build import mypycify

    from tools.compiled import compiled_sources

    setup(ext_modules=mypycify(compiled_sources(HERE)))
else:
    setup()
