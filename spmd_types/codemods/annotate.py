"""``spmd-annotate``: infer the SPMD annotations of a model's modules from one run on simulated ranks.

::

    spmd-annotate --mesh tp=4 --dry-run train.py:build_and_run
    spmd-annotate --mesh dp=2,tp=2 mypackage.smoke:run
    spmd-annotate --mesh tp=2 scripts/smoke.py

The target is a function that takes no arguments, builds the model and calls
it (forward, and backward if you like) with inputs whose SPMD types it states
(``assert_type(x, I["tp"])`` or a collective such as ``convert(x, "tp",
src=I, dst=S(0))``), or a script run as ``__main__`` that does the same; it is
run several times, on every rank of the mesh in one process
(:func:`~spmd_types.codemods.observe.observe`).  The observed types of the
modules defined under ``--root`` (default: the current directory) are written
into their source (:func:`~spmd_types.codemods.writer.write_annotations`):
``forward``'s parameters and result, and the parameters declared in the class
body.  ``--dry-run`` prints the unified diff instead.  What could not be
annotated, and why, is printed to standard error.

The Python API is :func:`observe` and :func:`write_annotations`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from spmd_types.codemods.observe import observe
from spmd_types.codemods.writer import write_annotations

__all__ = ["main", "observe", "write_annotations"]


def parse_mesh(text: str) -> dict[str, int]:
    """``"dp=2,tp=4"`` -> ``{"dp": 2, "tp": 4}``, in the order given (the mesh's axis order)."""
    sizes: dict[str, int] = {}
    for item in text.split(","):
        name, sep, size = item.partition("=")
        if not sep or not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise argparse.ArgumentTypeError(f"expected axis=size items such as tp=2,dp=2, got {item!r}")
        sizes[name.strip()] = int(size)
    return sizes


def load_target(target: str) -> Callable[[], object]:
    """What ``target`` names, as a function of no arguments.

    ``path/to/file.py:function`` and ``package.module:function`` name a
    function; ``path/to/script.py`` runs the script as ``__main__`` at each call.
    """
    where, sep, function = target.rpartition(":")
    if not sep:
        script = str(Path(target).resolve())
        return lambda: runpy.run_path(script, run_name="__main__")
    if where.endswith(".py"):
        path = Path(where).resolve()
        name = path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"spmd-annotate: cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    found = getattr(module, function, None)
    if not callable(found):
        raise SystemExit(f"spmd-annotate: {where} has no function {function!r}")
    return found  # type: ignore[no-any-return]


def defined_under(root: Path) -> Callable[[type], bool]:
    """Whether a class is defined in a source file under ``root``."""

    def keep(cls: type) -> bool:
        try:
            file = inspect.getsourcefile(cls)
        except TypeError:  # a built-in class
            return False
        return file is not None and Path(file).resolve().is_relative_to(root)

    return keep


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="spmd-annotate",
        description="Run a model once on simulated ranks and write the SPMD types observed at its module "
                    "boundaries and parameters into its source.")
    parser.add_argument("target", help="path/to/file.py:function, package.module:function, or path/to/script.py")
    parser.add_argument("--mesh", required=True, type=parse_mesh, help="the simulated mesh, e.g. tp=2,dp=2")
    parser.add_argument("--root", default=".", help="annotate modules defined under this directory (default: .)")
    parser.add_argument("--dry-run", action="store_true", help="print the diff instead of writing the files")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.getcwd())  # as `python -m` does: the target's imports resolve from here
    root = Path(args.root).resolve()
    observation = observe(load_target(args.target), args.mesh, keep=defined_under(root))
    for rewrite in write_annotations(observation, root=root, dry_run=args.dry_run):
        if args.dry_run:
            sys.stdout.write(rewrite.diff())
        elif rewrite.changed:
            print(f"annotated {os.path.relpath(rewrite.path)}")
        for note in rewrite.notes:
            print(f"{os.path.relpath(rewrite.path)}: {note}", file=sys.stderr)
    for note in observation.notes:
        print(f"{os.path.relpath(note.file)}: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
