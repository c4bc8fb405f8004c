"""The compiled build: the plugin and the rule core compiled with mypyc, in a copy of the checkout.

    python -m tools.compiled build DEST   # copy this checkout into DEST (emptied first), compile there
    python -m tools.compiled check        # run inside such a copy: fail unless its modules load compiled

mypyc compiles each listed module to a C extension that Python imports in
preference to the ``.py`` file beside it.  The extensions are only ever built
in a copy, never in the checkout, where they would shadow the sources a
developer edits: the copy holds the sources it was compiled from, so it cannot
be stale against itself, and a change to the checkout takes a new copy
(``make test-compiled`` builds a fresh one each time).  Without the
extensions the same modules run as Python: the pure build, which is the
default, and the one the compiled build must match diagnostic for diagnostic
(``make test-compiled`` runs the plugin's case suites against the copy).

Modules left as Python, and why, are :data:`INTERPRETED`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spmd_mypy", "spmd_types/typesystem")
"""The folders whose modules are compiled: the plugin and the rule core."""
_COMMAND_LINE = "used by the spmd-check command only, not on the type-checking path"
INTERPRETED = {
    "spmd_mypy/plugin.py": "the entry point mypy loads: it subclasses mypy's compiled Plugin, and is cheap",
    "spmd_mypy/baseline.py": _COMMAND_LINE + " (and a generic dataclass, which mypyc's class set-up rejects)",
    **dict.fromkeys(("spmd_mypy/cli.py", "spmd_mypy/coverage.py", "spmd_mypy/recommended.py",
                     "spmd_mypy/variants.py"), _COMMAND_LINE),
    "spmd_types/typesystem/__init__.py": "a module __getattr__: mypyc's module set-up calls it before the "
                                         "module's globals exist (a crash)",
    "spmd_types/typesystem/annotations.py": "metaclasses (Axis[...], Spmd[...]), which mypyc compiles only in "
                                            "classes marked with mypy_extensions, a dependency the runtime lacks",
    "spmd_types/typesystem/local_types.py": "metaclasses (R[...], S[...]) and an exception class, as above",
}
"""Modules of :data:`PACKAGES` that stay Python, each with the reason."""


def compiled_sources(root: Path) -> list[str]:
    """The modules compiled, as paths relative to ``root``."""
    found = sorted(str(path.relative_to(root)) for package in PACKAGES for path in (root / package).glob("*.py"))
    return [path for path in found if path not in INTERPRETED]


def copy_checkout(dest: Path) -> None:
    """Copy the checkout's files (tracked, and untracked ones git does not ignore) into an emptied ``dest``."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    if dest.exists():
        shutil.rmtree(dest)
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def compile_in(root: Path, sources: list[str] | None = None) -> None:
    """Compile ``sources`` (by default :func:`compiled_sources`) in place in ``root``, a copy of the checkout
    (never the checkout itself).  A copy of another version of the code passes the list that version's own
    ``tools/compiled.py`` gives, since which modules can be compiled changes with the code."""
    if root.resolve() == ROOT:
        raise SystemExit("tools.compiled: compiling in the checkout would shadow its sources; give a copy")
    if sources is None:
        sources = compiled_sources(root)
    subprocess.run([sys.executable, "-m", "mypyc", *sources], cwd=root, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(root)})
    shutil.rmtree(root / "build")  # the C sources and object files


def not_compiled(root: Path) -> list[str]:
    """The modules of :func:`compiled_sources` that this interpreter imports as Python, not as extensions."""
    missing = []
    for source in compiled_sources(root):
        module = importlib.import_module(source.removesuffix(".py").replace("/", "."))
        if str(module.__file__).endswith(".py"):
            missing.append(f"{module.__name__} ({module.__file__})")
    return missing


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.compiled", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="copy the checkout into DEST and compile the plugin and rule core there")
    build.add_argument("dest", type=Path)
    commands.add_parser("check", help="fail unless the modules meant to be compiled import compiled")
    args = parser.parse_args(argv)
    if args.command == "build":
        copy_checkout(args.dest)
        compile_in(args.dest)
        print(f"compiled {len(compiled_sources(args.dest))} modules in {args.dest}")
    else:
        here = Path.cwd()
        missing = not_compiled(here)
        if missing:
            raise SystemExit("not compiled: " + ", ".join(missing))
        print(f"{len(compiled_sources(here))} modules compiled")


if __name__ == "__main__":
    main()
