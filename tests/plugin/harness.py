"""Run mypy with the plugin once over many case files and compare with inline expectations.

A case file is ordinary Python.  A comment on a line says what mypy must
report for that line::

    y = p + r          # E: [spmd-partial] P plus a non-partial term (R)
    z = a + b          # OK
    reveal_type(z)     # N: SpmdTensor[Literal['tp:V']]

``# E: [code] text`` expects an error with that code whose message contains
``text`` (the text is optional); a line may carry several.  ``# N: text``
expects a note containing ``text``.  ``# OK`` marks a line that mypy checks
and accepts: it must get no error, carry no other expectation, and lie in
code that mypy type-checks, not in the body of a function without annotations
(which mypy skips: none of the configurations sets ``check_untyped_defs``).
Every error must be expected: an unexpected error anywhere fails the case.

The same files can be checked under several configurations (see
``test_cases.py``).  A marker written ``E@name``, ``N@name`` or ``OK@name``
holds in configuration ``name`` only, for the few verdicts that depend on
mypy's options (the plugin says which, once per run).  Without
``allow_redefinition`` the plugin writes the types it computes
``SpmdTensor[Any]`` for mypy (:mod:`spmd_mypy.encoding`), so there a revealed
``SpmdTensor[Literal[...]]`` may also be ``SpmdTensor[Any]``.

All case files of one configuration are checked in a single mypy run, so
torch is analysed once.  The configuration is the recommended one (what
``spmd-check --print-config --skip-torch-internals`` prints) plus the lines a
test adds.
"""

from __future__ import annotations

import ast
import configparser
import io
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from mypy import api

from spmd_mypy import recommended

ROOT = Path(__file__).resolve().parents[2]
# For mypy started as a subprocess: the plugin and the runtime of this checkout, however it is installed.
SUBPROCESS_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
EXPECTATION = re.compile(r"#\s*(E|N)(?:@([\w-]+))?:\s*(?:\[([\w-]+)\])?\s*(.*?)\s*(?=#\s*[EN](?:@[\w-]+)?:|$)")
ACCEPTED = re.compile(r"#\s*OK(?:@([\w-]+))?\b")
RECOMMENDED = "recommended"
"""The name of the recommended configuration, the one unscoped markers and the documentation assume."""
OUTPUT = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+)(?::(?P<column>\d+))?: (?P<kind>error|note): (?P<message>.*?)"
                    r"(?:  \[(?P<code>[\w-]+)\])?$")


@dataclass(frozen=True)
class Expected:
    kind: str  # "error" or "note"
    code: str | None
    text: str
    or_text: str | None = None  # another text that matches too

    def matches(self, reported: Reported) -> bool:
        return (reported.kind == self.kind and self.code in (None, reported.code)
                and (self.text in reported.message or (self.or_text is not None and self.or_text in reported.message)))


@dataclass(frozen=True)
class Reported:
    kind: str
    code: str | None
    message: str
    column: int | None = None  # 1-based, as mypy prints it with --show-column-numbers


@dataclass
class CaseFile:
    path: Path
    expected: dict[int, list[Expected]] = field(default_factory=dict)
    accepted: set[int] = field(default_factory=set)  # the lines marked ``# OK``
    unchecked: set[int] = field(default_factory=set)  # the lines mypy does not type-check

    @classmethod
    def read(cls, path: Path, configuration: str = RECOMMENDED, rebindable: bool = True) -> CaseFile:
        """The expectations of ``path`` that hold in ``configuration`` (``rebindable``: with ``allow_redefinition``)."""
        source = path.read_text()
        case = cls(path, unchecked=_in_untyped_functions(ast.parse(source)))
        for number, line in enumerate(source.splitlines(), start=1):
            comment = line.partition("#")[2] if "#" in line else ""
            if any(scope in ("", configuration) for scope in ACCEPTED.findall(line)):
                case.accepted.add(number)
            found = [Expected("error" if kind == "E" else "note", code or None, text,
                              None if rebindable or kind == "E" else _as_inferred(text))
                     for kind, scope, code, text in EXPECTATION.findall("#" + comment) if scope in ("", configuration)]
            if found:
                case.expected[number] = found
        return case

    @property
    def checks(self) -> int:
        """How many accept and reject cases the file states (:func:`mismatches` checks each)."""
        return len(self.accepted) + sum(len(v) for v in self.expected.values())


def _as_inferred(text: str) -> str:
    """A revealed type as mypy shows it without ``allow_redefinition``: ``SpmdTensor[Any]``."""
    return re.sub(r"(Spmd\w+)\[Literal\[[^\]]*\](?: \| Literal\[[^\]]*\])*\]", r"\1[Any]", text)


def _in_untyped_functions(tree: ast.Module) -> set[int]:
    """The lines whose innermost enclosing function has no annotation at all: mypy does not check them."""
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    typed: dict[int, bool] = {}
    for function in sorted(functions, key=lambda f: f.lineno):  # a nested function overrides the one around it
        arguments = function.args
        annotated = function.returns is not None or any(
            a.annotation is not None
            for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
            if a is not None)
        typed.update(dict.fromkeys(range(function.body[0].lineno, (function.end_lineno or function.lineno) + 1),
                                   annotated))
    return {line for line, is_typed in typed.items() if not is_typed}


def config_text(
    mypy_options: dict[str, str] | None = None,
    plugin_options: dict[str, str] | None = None,
    skip_torch_internals: bool = True,
) -> str:
    """The recommended configuration with this checkout's stubs on the path and some options set.

    ``mypy_options`` are set in ``[mypy]``, ``plugin_options`` in ``[mypy.plugins.spmd]``;
    ``skip_torch_internals=False`` leaves out the torch-skipping section, as for the daemon.
    """
    config = configparser.ConfigParser(interpolation=None)
    config.read_string(recommended.render("ini", skip_torch_internals=skip_torch_internals))
    config["mypy"].update({"mypy_path": str(ROOT / "stubs"), "warn_unused_ignores": "True", **(mypy_options or {})})
    config["mypy.plugins.spmd"].update(plugin_options or {})
    text = io.StringIO()
    config.write(text)
    return text.getvalue()


def run_mypy(files: list[Path], config: Path, cache_dir: Path,
             columns: bool = False) -> tuple[dict[Path, dict[int, list[Reported]]], str]:
    """Check ``files`` in one mypy run; the reports by file and line (with their ``columns``), and the raw output."""
    stdout, stderr, _ = api.run(
        ["--config-file", str(config), "--cache-dir", str(cache_dir), "--hide-error-context",
         "--no-error-summary", "--show-error-codes", *(["--show-column-numbers"] if columns else []), *map(str, files)]
    )
    by_file: dict[Path, dict[int, list[Reported]]] = defaultdict(lambda: defaultdict(list))
    for line in stdout.splitlines():
        match = OUTPUT.match(line)
        if match is None:
            continue
        path = Path(match["path"]).resolve()
        column = int(match["column"]) if match["column"] else None
        by_file[path][int(match["line"])].append(Reported(match["kind"], match["code"], match["message"], column))
    return by_file, stdout + stderr


def mismatches(case: CaseFile, reported: dict[int, list[Reported]]) -> list[str]:
    """What differs between a case file's expectations and what mypy reported."""
    problems = []
    for line in sorted(case.accepted):
        if line in case.expected:
            problems.append(f"line {line}: marked OK, and also expects an error or a note")
        if line in case.unchecked:
            problems.append(f"line {line}: marked OK, but mypy does not check it: the function around it has no "
                            f"annotations")
    for line in sorted(set(case.expected) | set(reported)):
        wanted = list(case.expected.get(line, []))
        got = [r for r in reported.get(line, []) if r.kind == "error" or any(w.kind == "note" for w in wanted)]
        for expected in wanted:
            match = next((r for r in got if expected.matches(r)), None)
            if match is None:
                problems.append(f"line {line}: expected {expected.kind} [{expected.code}] {expected.text!r}; "
                                f"got {[(r.kind, r.code, r.message) for r in reported.get(line, [])]}")
            else:
                got.remove(match)
        for extra in got:
            if extra.kind == "error":
                marked = "marked OK, but mypy reports" if line in case.accepted else "unexpected error"
                problems.append(f"line {line}: {marked} [{extra.code}] {extra.message}")
    return problems
