"""Type-check the code samples of the documentation with mypy and the plugin.

The samples are read where they are written by hand: the pages of ``docs/``
and the topic pages of the API reference, in ``tools/docs/topics/`` (the rest
of ``docs/reference/`` is generated and has none).

A sample that the docs claim a checker result for is marked in the Markdown
source by an HTML comment on the line before its fence (invisible on the site)::

    <!-- mypy -->
    ```python
    ...
    ```

    ```text
    example.py:12: error: ...  [spmd-partial]
    ```

The ``text`` block right after it (only blank lines between) is what mypy
prints for it, with the file called ``example.py``; without one the sample must
check clean.  ``<!-- mypy: strict_axes=true; axes=dp, tp -->`` sets options:
``axes``, ``strict_axes``, ``debug`` and ``library_axes`` go to
``[mypy.plugins.spmd]``, anything else to ``[mypy]``, on top of the
recommended configuration (see
``tests/plugin/harness.py``).  All samples with the same options are checked in
one mypy run.  :func:`with_outputs` puts what mypy prints under each sample;
``make generated-docs`` writes it into the pages.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.plugin.harness import ROOT, config_text, run_mypy

DOCS = ROOT / "docs"
TOPICS = ROOT / "tools" / "docs" / "topics"
PLUGIN_OPTIONS = frozenset({"axes", "strict_axes", "debug", "library_axes"})
_MARKER = re.compile(r"^<!--\s*mypy(?::\s*(?P<options>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(```+)\s*(\w*)")


@dataclass(frozen=True)
class Sample:
    page: Path
    line: int  # line of the opening fence in the page, 1-based
    heading: str  # the nearest heading above it
    code: str
    options: tuple[tuple[str, str], ...]
    expected: tuple[str, ...]  # mypy's output lines, the file named example.py

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def codes(self) -> list[str]:
        """The error codes its expected output lists."""
        return re.findall(r"  \[([\w-]+)\]$", "\n".join(self.expected), re.MULTILINE)


def fenced(lines: list[str], start: int) -> tuple[str, list[str], int]:
    """The info string and body of the fence opening at ``start``, and the line after it."""
    match = FENCE.match(lines[start])
    assert match is not None
    ticks, info = match.group(1), match.group(2)
    body = []
    i = start + 1
    while i < len(lines) and not lines[i].startswith(ticks):
        body.append(lines[i])
        i += 1
    return info, body, i + 1


def _options(text: str | None) -> tuple[tuple[str, str], ...]:
    if not text:
        return ()
    pairs = []
    for item in text.split(";"):
        key, _, value = item.partition("=")
        pairs.append((key.strip(), value.strip()))
    return tuple(sorted(pairs))


def samples(page: Path) -> list[Sample]:
    """The marked samples of one page."""
    lines = page.read_text().splitlines()
    found = []
    heading = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if FENCE.match(line):
            _, _, i = fenced(lines, i)
            continue
        marker = _MARKER.match(line)
        if marker is None:
            i += 1
            continue
        start = i + 1
        info, body, after = fenced(lines, start)
        assert info == "python", f"{page}:{i + 1}: a mypy marker must precede a python fence"
        expected: list[str] = []
        j = after
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j < len(lines) and FENCE.match(lines[j]) and FENCE.match(lines[j]).group(2) == "text":
            _, expected, after = fenced(lines, j)
        found.append(Sample(page, start + 1, heading, "\n".join(body) + "\n", _options(marker.group("options")),
                            tuple(expected)))
        i = after
    return found


def pages() -> list[Path]:
    """The Markdown pages written by hand, where the samples are."""
    generated = DOCS / "reference"
    return sorted(p for p in DOCS.rglob("*.md") if generated not in p.parents) + sorted(TOPICS.glob("*.md"))


def all_samples() -> list[Sample]:
    return [s for page in pages() for s in samples(page)]


def check(found: list[Sample], workdir: Path = ROOT / ".mypy_cache" / "docs-samples") -> dict[Sample, list[str]]:
    """What mypy prints for each sample (its path shown as example.py).

    The sample files are written under ``workdir``, which should stay the same
    from run to run: mypy's cache remembers a module's path and reports errors
    of an unchanged module from the cache, under the path it had then.
    """
    groups: dict[tuple[tuple[str, str], ...], list[Sample]] = defaultdict(list)
    for sample in found:
        groups[sample.options].append(sample)
    out: dict[Sample, list[str]] = {}
    for options, group in groups.items():
        mypy_options = {k: v for k, v in options if k not in PLUGIN_OPTIONS}
        plugin_options = {k: v for k, v in options if k in PLUGIN_OPTIONS}
        key = hashlib.sha256(repr(options).encode()).hexdigest()[:12]
        folder = workdir / f"config_{key}"
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / "mypy.ini"
        config.write_text(config_text(mypy_options, plugin_options))
        paths = {}
        for n, sample in enumerate(group):
            path = (folder / f"docs_sample_{key}_{n}.py").resolve()
            path.write_text(sample.code)
            paths[sample] = path
        _, raw = run_mypy(list(paths.values()), config, ROOT / ".mypy_cache" / "docs-tests" / key)
        if "INTERNAL ERROR" in raw or "Traceback" in raw:
            raise AssertionError(raw)
        claimed = 0
        for sample, path in paths.items():
            prefixes = {f"{path}:", f"{_relative(path)}:"}
            lines = [line for line in raw.splitlines() if any(line.startswith(p) for p in prefixes)]
            claimed += len(lines)
            out[sample] = ["example.py:" + line.partition(".py:")[2] for line in lines]
        if claimed != len(raw.splitlines()):  # e.g. the plugin failed to load: nothing would be checked
            raise AssertionError(f"mypy printed lines that belong to no sample:\n{raw}")
    return out


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def with_outputs(outputs: dict[Sample, list[str]]) -> dict[Path, str]:
    """The pages of the samples with mypy's real output under each (a ``text`` block; none when clean)."""
    by_page: dict[Path, list[Sample]] = defaultdict(list)
    for sample in outputs:
        by_page[sample.page].append(sample)
    out = {}
    for page, found in by_page.items():
        lines = page.read_text().splitlines()
        for sample in sorted(found, key=lambda s: s.line, reverse=True):  # bottom up: line numbers stay valid
            _, _, after = fenced(lines, sample.line - 1)
            j = after
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and (m := FENCE.match(lines[j])) is not None and m.group(2) == "text":
                _, _, end = fenced(lines, j)
                del lines[after:end]
            block = ["", "```text", *outputs[sample], "```"] if outputs[sample] else []
            lines[after:after] = block
        out[page] = "\n".join(lines) + "\n"
    return out


if __name__ == "__main__":
    # python -m tests.docs.snippets [FILTER...]: show mypy's output for the samples whose id contains a FILTER.
    import sys

    chosen = [s for s in all_samples() if not sys.argv[1:] or any(a in s.id for a in sys.argv[1:])]
    for sample, lines in check(chosen).items():
        print(f"--- {sample.id} ({sample.heading})")
        print("\n".join(lines) if lines else "(clean)")
