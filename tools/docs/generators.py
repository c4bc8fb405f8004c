"""Every generator of the docs, in the order they run (see ``tools/docs/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.docs import snippets, walkthrough
from tools.docs import docstrings, reference, type_system

__all__ = ["GENERATORS", "Generator"]


@dataclass(frozen=True)
class Generator:
    """One generator: what each file it writes should hold, and a folder it owns, if any.

    Every Markdown file in ``folder`` must be one it writes; another one there is stray.
    """

    name: str
    render: Callable[[], dict[Path, str]]
    folder: Path | None = None

    def compare(self) -> tuple[dict[Path, str], list[Path]]:
        """The files that are out of date, with what they should hold, and the stray files in its folder."""
        files = self.render()
        stale = {path: text for path, text in files.items() if not path.exists() or path.read_text() != text}
        stray = sorted(set(self.folder.glob("*.md")) - set(files)) if self.folder is not None else []
        return stale, stray


def _samples() -> dict[Path, str]:
    return snippets.with_outputs(snippets.check(snippets.all_samples()))


GENERATORS: tuple[Generator, ...] = (
    Generator("docstrings", docstrings.render),
    Generator("type-system", type_system.render),
    Generator("samples", _samples),
    Generator("walkthrough", walkthrough.render),
    Generator("reference", reference.render, reference.OUT),
)
