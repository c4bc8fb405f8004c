"""``spmd-migrate``: rewrite calls of Megatron's mapping functions into ``spmd_types`` calls.

Usage::

    spmd-migrate [--diff | --check] PATH...

Each PATH is a Python file or a directory, searched for ``*.py`` files
(skipping hidden directories, such as ``.venv`` and ``.git``, and
``__pycache__``).  Without an option the files are rewritten in place;
``--diff`` prints a unified diff of the changes instead, and ``--check``
only lists the files that would change; neither writes anything.  The calls
that were recognised but left as they are, with the reason, go to stderr as
``path:line: function: reason`` lines, then a one-line summary.

Exit status: 0 when nothing is left to do (every recognised call was
rewritten, or with ``--diff``/``--check``, no file would change and no call is
left); 1 when a file would change (``--diff``, ``--check``) or a recognised
call was left as it was; 2 when a path does not exist or a file is not valid
Python (the other files are still processed), or libcst is not installed.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["main"]

_INSTALL_HINT = ("spmd-migrate needs libcst: pip install 'spmd-typecheck[codemods]' "
                 "(or pip install libcst)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spmd-migrate",
        description="Rewrite calls of Megatron's mapping functions (copy_to_tensor_model_parallel_region and "
                    "the rest) into the spmd_types calls that compute the same forward and backward.",
        epilog="Exit status: 0 nothing left to do; 1 a file would change (--diff, --check) or a recognised call "
               "was left as it was; 2 a path is missing or a file is not valid Python.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff instead of writing the files")
    mode.add_argument("--check", action="store_true", help="list the files that would change; write nothing")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="Python files or directories")
    return parser


def python_files(paths: Sequence[Path]) -> Iterator[Path]:
    """The files named, and the ``*.py`` files under the directories named, each once, in a stable order."""
    seen: set[Path] = set()
    for path in paths:
        found = [path] if path.is_file() else sorted(
            p for p in path.rglob("*.py")
            if not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(path).parts[:-1])
        )
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                yield file


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        import libcst
    except ImportError:
        print(_INSTALL_HINT, file=sys.stderr)
        return 2
    from spmd_types.codemods.rewrite import migrate_source

    status = 0
    changed = rewritten = left = 0
    for missing in (p for p in args.paths if not p.exists()):
        print(f"{missing}: no such file or directory", file=sys.stderr)
        status = 2
    for path in python_files([p for p in args.paths if p.exists()]):
        with path.open(encoding="utf-8", newline="") as file:  # keep the file's line endings
            source = file.read()
        try:
            migration = migrate_source(source, path.resolve())
        except libcst.ParserSyntaxError as error:
            print(f"{path}: not valid Python, left as it is: {error.message}", file=sys.stderr)
            status = 2
            continue
        for finding in migration.left:
            print(f"{path}:{finding.line}: {finding.function} not rewritten: {finding.reason}", file=sys.stderr)
        rewritten += len(migration.rewritten)
        left += len(migration.left)
        if migration.code == source:
            continue
        changed += 1
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(
                source.splitlines(keepends=True), migration.code.splitlines(keepends=True), str(path), str(path)))
        elif args.check:
            print(f"would rewrite {path}")
        else:
            with path.open("w", encoding="utf-8", newline="") as file:
                file.write(migration.code)
    verb = "would rewrite" if args.diff or args.check else "rewrote"
    print(f"spmd-migrate: {verb} {rewritten} call(s) in {changed} file(s); {left} call(s) left as they were",
          file=sys.stderr)
    if status == 0 and (left or (changed and (args.diff or args.check))):
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
