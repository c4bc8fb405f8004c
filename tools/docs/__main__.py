"""``python -m tools.docs [--check]``: rewrite (or check) every generated part of the docs; see ``tools/docs``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.docs import ROOT
from tools.docs.generators import GENERATORS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs",
                                     description="Rewrite every generated part of the documentation.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is out of date")
    args = parser.parse_args(argv)
    failed = False
    for generator in GENERATORS:  # in order: a generator may read what an earlier one writes
        stale, stray = generator.compare()
        for path, text in stale.items():
            if args.check:
                print(f"out of date: {_shown(path)}", file=sys.stderr)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                print(f"rewrote {_shown(path)}")
        for path in stray:
            print(f"not generated (remove it): {_shown(path)}", file=sys.stderr)
        failed = failed or bool(stray) or (args.check and bool(stale))
    if failed and args.check:
        print("run: make generated-docs", file=sys.stderr)
    return 1 if failed else 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
