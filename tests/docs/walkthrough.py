"""Run a page's shell walk-through in a scratch project, so that what the page shows is what the tools print.

A walk-through page (:data:`PAGES`) marks its steps with HTML comments on the
line before a fence (invisible on the site):

``<!-- file: PATH -->`` before any fence
    write the fence's body to ``PATH`` in the scratch project;
``<!-- patch -->`` before a ``diff`` fence
    apply it there with ``git apply`` (an edit the reader makes by hand);
``<!-- run -->`` before an ``sh`` fence
    run each line of it there, in order, with the virtual environment's
    commands first on ``PATH``; the ``text`` fence right after (only blank
    lines between) is what they print, standard output and error together.

The steps run in page order, each on what the steps before left, in a
scratch project that starts empty every time; its mypy cache is kept between
runs, so a second run takes seconds.  :func:`with_outputs` writes what each
``run`` step printed under it; ``make generated-docs`` puts that into the page,
and the staleness test of the generated docs fails while a page shows
anything else.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.docs.snippets import FENCE, fenced
from tests.plugin.harness import ROOT

PAGES = (ROOT / "docs" / "walkthrough.md",)
SCRATCH = Path(tempfile.gettempdir()) / f"spmd-types-walkthrough-{hashlib.sha256(bytes(ROOT)).hexdigest()[:8]}"
"""Where the scratch projects live, one folder per page; their ``.mypy_cache`` folders survive a rerun.

Outside the repository, as a user's project would be: ``spmd-check`` reads the
configuration of the nearest ``pyproject.toml`` above it.
"""

_MARKER = re.compile(r"^<!--\s*(?P<kind>file|patch|run)(?::\s*(?P<path>\S+))?\s*-->\s*$")
_TIMEOUT = 600


@dataclass(frozen=True)
class Step:
    """One marked fence of a page: what to do with its body, and (``run``) the line after it."""

    kind: str  # "file", "patch" or "run"
    line: int  # the opening fence's line in the page, 1-based
    body: str
    path: str | None  # "file": where to write the body
    after: int  # index of the line after the fence


def steps(page: Path) -> list[Step]:
    """The marked steps of ``page``, in order."""
    lines = page.read_text().splitlines()
    found = []
    i = 0
    while i < len(lines):
        marker = _MARKER.match(lines[i])
        if marker is None:
            i = fenced(lines, i)[2] if FENCE.match(lines[i]) else i + 1
            continue
        info, body, after = fenced(lines, i + 1)
        kind = marker.group("kind")
        expected_info = {"patch": "diff", "run": "sh"}.get(kind)
        if expected_info is not None and info != expected_info:
            raise ValueError(f"{page}:{i + 1}: a {kind} marker must precede a {expected_info} fence")
        if kind == "file" and not marker.group("path"):
            raise ValueError(f"{page}:{i + 1}: a file marker names the file: <!-- file: PATH -->")
        found.append(Step(kind, i + 2, "\n".join(body) + "\n", marker.group("path"), after))
        i = after
    return found


def run(page: Path) -> dict[Step, list[str]]:
    """Perform the page's steps in a fresh scratch project; what each ``run`` step printed, line by line."""
    project = SCRATCH / page.stem
    if project.exists():
        for entry in project.iterdir():
            if entry.name != ".mypy_cache":
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    project.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   "PYTHONWARNINGS": "ignore", "NO_COLOR": "1", "COLUMNS": "100"}
    printed: dict[Step, list[str]] = {}
    for step in steps(page):
        if step.kind == "file":
            assert step.path is not None
            target = project / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.body)
        elif step.kind == "patch":
            _call(["git", "apply", "-"], project, environment, step, stdin=step.body, check=True)
        else:
            lines: list[str] = []
            for command in step.body.splitlines():
                command = command.partition("  #")[0].strip()
                if command:
                    lines += _call(shlex.split(command), project, environment, step).splitlines()
            printed[step] = lines
    return printed


def _call(argv: list[str], cwd: Path, environment: dict[str, str], step: Step, *, stdin: str | None = None,
          check: bool = False) -> str:
    done = subprocess.run(argv, cwd=cwd, env=environment, input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=_TIMEOUT)
    if check and done.returncode != 0:
        raise AssertionError(f"line {step.line}: {shlex.join(argv)} failed:\n{done.stdout}")
    return done.stdout


def with_outputs(page: Path, printed: dict[Step, list[str]]) -> str:
    """``page`` with what each ``run`` step printed in a ``text`` fence right under it."""
    lines = page.read_text().splitlines()
    for step in sorted(printed, key=lambda s: s.line, reverse=True):  # bottom up: line numbers stay valid
        j = step.after
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j < len(lines) and (fence := FENCE.match(lines[j])) is not None and fence.group(2) == "text":
            del lines[step.after:fenced(lines, j)[2]]
        lines[step.after:step.after] = ["", "```text", *printed[step], "```"] if printed[step] else []
    return "\n".join(lines) + "\n"


def render() -> dict[Path, str]:
    """Every walk-through page with the outputs its commands print now."""
    return {page: with_outputs(page, run(page)) for page in PAGES}


if __name__ == "__main__":
    # python -m tests.docs.walkthrough: run the walk-throughs and print what each step printed.
    for page in PAGES:
        for step, lines in run(page).items():
            print(f"--- {page.relative_to(ROOT)}:{step.line}\n" + "\n".join(lines))
