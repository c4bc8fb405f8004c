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

__all__ = ["BaselineError", "Entry", "Split", "load", "record", "save", "source_line", "split"]

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


def source_line(path: Path, line: int) -> str | None:
    """Line ``line`` of ``path`` without its comment and indentation; ``None`` if it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8").splitlines()[line - 1].strip()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    try:
        tokens = tokenize.generate_tokens(io.StringIO(text + "\n").readline)
        comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
        code = text[: comment.start[1]] if comment else text
    except (tokenize.TokenError, IndentationError, SyntaxError):
        code = text
    return code.rstrip() or None


def _entry(path: Path, error: Reported, root: Path) -> Entry:
    try:
        shown = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        shown = path.resolve().as_posix()
    # mypy's own messages sometimes name another line ("already defined on line 12").
    message = _LINE_NUMBER.sub("line N", error.message)
    return Entry(shown, error.code or "", message, source_line(path, error.line) or "")


def _errors(findings: Mapping[Path, Sequence[F]]) -> list[tuple[Path, F]]:
    return [(path, f) for path, found in findings.items() for f in found if f.kind == "error"]


def record(findings: Mapping[Path, Sequence[Reported]], root: Path) -> Counter[Entry]:
    """The baseline entries of every error in ``findings``; paths relative to ``root``."""
    return Counter(_entry(path, error, root) for path, error in _errors(findings))


def split(findings: Mapping[Path, Sequence[F]], baseline: Counter[Entry], root: Path) -> Split[F]:
    """Separate the errors that ``baseline`` does not know from those it does."""
    unused = Counter(baseline)
    new: dict[Path, list[F]] = {}
    known = 0
    for path, error in _errors(findings):
        entry = _entry(path, error, root)
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
    listed = "".join(f"\n    {row}{',' if n < len(rows) - 1 else ''}" for n, row in enumerate(rows))
    file.write_text(f'{{\n  "format": {_FORMAT},\n  "errors": [{listed}{chr(10) + "  " if rows else ""}]\n}}\n',
                    encoding="utf-8")


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
