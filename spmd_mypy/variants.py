"""Several named configurations of a codebase, checked in one ``spmd-check`` run.

Code whose SPMD contract depends on a module-level switch
(``if SEQUENCE_PARALLEL: ... else: ...``) is checked by mypy one side at a
time: told the switch's value (``--always-true SEQUENCE_PARALLEL``), mypy
checks the branch that runs and skips the other.  With ``variants`` in the
plugin's options (:class:`spmd_mypy.config.Variant`), ``spmd-check`` runs mypy
once per variant, each in its own process with its own cache (the variants
run side by side, as many at once as there are cores), and merges the
reports: an error found in every variant is reported once, as usual; one found
in some variants only says in which.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from spmd_mypy.config import Variant

__all__ = ["Run", "merge", "run_all"]

Run = tuple[str, str, int]
"""What one mypy run printed, and its exit status: ``(stdout, stderr, status)``."""

F = TypeVar("F")


def run_all(variants: Sequence[Variant], mypy_args: Sequence[str], cache_root: Path) -> dict[str, Run]:
    """Run ``mypy <variant's switches> <mypy_args>`` for every variant, side by side; each run by name."""

    def run(variant: Variant) -> Run:
        cache = cache_root / f"spmd-variant-{variant.name}"
        done = subprocess.run(
            [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *variant.mypy_flags(), *mypy_args],
            capture_output=True, text=True, check=False,
        )
        return done.stdout, done.stderr, done.returncode

    with ThreadPoolExecutor(max_workers=max(1, min(len(variants), os.cpu_count() or 1))) as pool:
        return dict(zip((v.name for v in variants), pool.map(run, variants)))


def merge(
    reports: Mapping[str, Mapping[Path, Sequence[F]]], key: Callable[[F], Iterable[object]]
) -> dict[Path, list[tuple[F, tuple[str, ...]]]]:
    """Each finding once, with the variants it was found in, in the variants' order.

    ``reports`` maps a variant's name to its findings by file; two findings
    are the same when ``key`` says so (line, code and message, say).
    """
    merged: dict[Path, dict[tuple[object, ...], tuple[F, list[str]]]] = {}
    for name, findings in reports.items():
        for path, found in findings.items():
            per_file = merged.setdefault(path, {})
            for finding in found:
                per_file.setdefault(tuple(key(finding)), (finding, []))[1].append(name)
    return {path: [(finding, tuple(names)) for finding, names in per_file.values()]
            for path, per_file in merged.items()}
