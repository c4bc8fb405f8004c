"""A baseline of known errors, so that CI fails only on new ones.

``spmd-check --update-baseline FILE PATHS`` records every error mypy reports
today; ``spmd-check --baseline FILE PATHS`` then reports only the errors that
are not in it.  A team adopting the checker on an existing codebase records
its current errors once and fixes them at its own pace, while CI stops every
new one.

An error is recorded by what it says, not where: its file (relative to the
baseline's directory), its code, its message, and the text of its source line
without comments or indentation.  Edits above an error, which move it to
another line, keep it known; editing the erring line itself, or the error
changing, makes it new.  The same error on several identical lines is counted,
so adding one more copy is new.  The file is JSON, sorted, one entry a line
(readable in review, stable under ``--update-baseline``).
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

__all__ = ["BaselineError", "Entry", "Split", "load", "read_lines", "record", "save", "source_line", "split"]

_FORMAT = 1
_LINE_NUMBER = re.compile(r"\bline \d+\b")


class BaselineError(Exception):
    """The baseline file cannot be read (the message says why and what to do)."""


class Reported(Protocol):
    """What the baseline needs of one reported error."""

    @property
    def kind(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def code(self) -> str | None: ...
    @property
    def message(self) -> str: ...


@dataclass(frozen=True, order=True)
class Entry:
    """One known error, independent of its line number."""

    path: str
    code: str
    message: str
    source: str


F = TypeVar("F", bound=Reported)


@dataclass(frozen=True)
class Split(Generic[F]):
    """The errors of a run against a baseline: the new ones by file, and how many known or gone."""

    new: dict[Path, list[F]]
    known: int
    gone: int


def read_lines(path: Path) -> list[str]:
    """The lines of ``path``; none if it cannot be read (read once per file, then :func:`source_line`)."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def source_line(lines: Sequence[str], line: int) -> str | None:
    """Line ``line`` (1-based) of ``lines`` without its comment and indentation; ``None`` if there is none."""
    if not 0 < line <= len(lines):
        return None
    text = lines[line - 1].strip()
    try:
        tokens = tokenize.generate_tokens(io.StringIO(text + "\n").readline)
        comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
        code = text[: comment.start[1]] if comment else text
    except (tokenize.TokenError, IndentationError, SyntaxError):
        code = text
    return code.rstrip() or None


def _entries(findings: Mapping[Path, Sequence[F]], root: Path) -> list[tuple[Path, F, Entry]]:
    """Every error in ``findings`` with its baseline entry (each file is read once)."""
    found: list[tuple[Path, F, Entry]] = []
    resolved_root = root.resolve()
    for path, reported in findings.items():
        errors = [f for f in reported if f.kind == "error"]
        if not errors:
            continue
        try:
            shown = path.resolve().relative_to(resolved_root).as_posix()
        except ValueError:
            shown = path.resolve().as_posix()
        lines = read_lines(path)
        for error in errors:
            # mypy's own messages sometimes name another line ("already defined on line 12").
            message = _LINE_NUMBER.sub("line N", error.message)
            found.append((path, error, Entry(shown, error.code or "", message, source_line(lines, error.line) or "")))
    return found


def record(findings: Mapping[Path, Sequence[Reported]], root: Path) -> Counter[Entry]:
    """The baseline entries of every error in ``findings``; paths relative to ``root``."""
    return Counter(entry for _, _, entry in _entries(findings, root))


def split(findings: Mapping[Path, Sequence[F]], baseline: Counter[Entry], root: Path) -> Split[F]:
    """Separate the errors that ``baseline`` does not know from those it does."""
    unused = Counter(baseline)
    new: dict[Path, list[F]] = {}
    known = 0
    for path, error, entry in _entries(findings, root):
        if unused[entry] > 0:
            unused[entry] -= 1
            known += 1
        else:
            new.setdefault(path, []).append(error)
    return Split(new, known, sum(unused.values()))


def save(file: Path, entries: Counter[Entry]) -> None:
    """Write ``entries`` to ``file`` (sorted, one entry a line)."""
    rows = [
        json.dumps({"path": e.path, "code": e.code, "message": e.message, "source": e.source, "count": n})
        for e, n in sorted(entries.items())
    ]
    lines = ["{", f'  "format": {_FORMAT},', '  "errors": [', ",\n".join(f"    {row}" for row in rows), "  ]", "}"]
    file.write_text("\n".join(line for line in lines if line) + "\n", encoding="utf-8")


def load(file: Path) -> Counter[Entry]:
    """The entries recorded in ``file``."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{file} does not exist; create it with --update-baseline {file}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"{file} is not a baseline written by spmd-check ({error})") from None
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("errors"), list):
        raise BaselineError(f"{file} is not a baseline written by this version of spmd-check; "
                            f"write it again with --update-baseline {file}")
    entries: Counter[Entry] = Counter()
    try:
        for row in data["errors"]:
            entries[Entry(row["path"], row["code"], row["message"], row["source"])] += int(row["count"])
    except (KeyError, TypeError, ValueError) as error:
        raise BaselineError(f"{file} has an entry spmd-check cannot read ({error!r}); "
                            f"write it again with --update-baseline {file}") from None
    return entries
