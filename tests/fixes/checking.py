"""Apply every printed fix of a set of files and check the result: it type-checks, and it computes the right thing.

For each error that offers fixes (:meth:`spmd_types.typesystem.Message.parse`
reads them from mypy's output), each fix is applied to a copy of its file
(:func:`tests.fixes.rewrite.apply_fix`, where the error's column points), and
all the copies of one configuration are checked in one mypy run.  A fixed
copy is *clean* when the error is gone from its line and no error appears
that the original did not have (errors elsewhere in a case file stay: each
case file holds many).  A fix may be right and not enough: the value it
repairs goes on into an op that now reports its own error on the same line
(``torch.log(sum_exp) - t``, once ``sum_exp`` is reduced, subtracts a partial
``t`` from a replicated log).  As a reader would, the first fix of that new
error is applied next, up to :data:`CHAIN` fixes in all, and the outcome is
what the last one gives.  Then the copy is run, where it can be:

* a buggy twin (``examples/bugs/``): its ``EXAMPLE``, on 2 and 4 ranks per
  axis, against the example's single-device reference;
* a case file's function (:class:`tests.fixes.programs.FunctionProgram`): on
  2 and 4 ranks against its own run on one rank, when it is runnable and the
  original function holds no other error.
"""

from __future__ import annotations

import collections
import importlib.util
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from examples.comparison import Comparison
from spmd_types.typesystem import Message
from tests.fixes.programs import FunctionProgram, meshes
from tests.fixes.rewrite import NotApplicable, apply_fix
from tests.plugin.harness import ROOT, Reported, config_text, run_mypy

__all__ = ["CHAIN", "FixOutcome", "check_fixes"]

Errors = dict[int, list[Reported]]
CHAIN = 3
"""The most fixes applied in a row for one offered fix: it, then the first fixes of the errors it uncovers."""


@dataclass
class FixOutcome:
    """What applying one fix gave."""

    path: Path  # the original file
    line: int
    message: str  # the error's text, without its fixes
    rank: int  # 0 for the first fix offered
    fix: str
    then: list[str] = field(default_factory=list)  # the first fixes of the errors it uncovered, applied after it
    problems: list[str] = field(default_factory=list)  # why it is wrong; empty when right
    clean: bool = False  # type-checks as described in the module docstring
    ran: bool = False  # compared with a reference (else: why not, in ``not_run``)
    not_run: str = ""

    def __str__(self) -> str:
        where = f"{self.path.relative_to(ROOT)}:{self.line}"
        state = "; ".join(self.problems) if self.problems else ("right" if self.ran else f"clean, not run: {self.not_run}")
        then = "".join(f"\n    then: {fix}" for fix in self.then)
        return f"{where} fix #{self.rank + 1} {self.fix}{then}\n    for: {self.message}\n    => {state}"


def _function_spans(source: str) -> dict[str, tuple[int, int]]:
    """Module-level functions: name -> (first line, last line)."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    return {node.name.value: (positions[node].start.line, positions[node].end.line)
            for node in wrapper.module.body if isinstance(node, cst.FunctionDef)}


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # typing.get_type_hints looks classes' modules up here
    spec.loader.exec_module(module)
    return module


def _codes(errors: list[Reported]) -> collections.Counter[str | None]:
    return collections.Counter(r.code for r in errors if r.kind == "error")


def _introduced_by_line(original: Errors, fixed: Errors, line: int, code: str | None) -> list[tuple[int, str]]:
    """Errors of ``fixed`` that ``original`` did not have, the fixed one counted as gone: (line, description)."""
    problems = []
    for number in sorted(set(original) | set(fixed)):
        before = _codes(original.get(number, []))
        if number == line:
            before[code] -= 1
        after = _codes(fixed.get(number, []))
        for extra in (after - before).elements():
            texts = [r.message for r in fixed.get(number, []) if r.code == extra]
            problems.append((number, f"[{extra}] {texts[0] if texts else ''}"))
    return problems


def _introduced(original: Errors, fixed: Errors, line: int, code: str | None) -> list[str]:
    """:func:`_introduced_by_line`, as the problems of a fix."""
    return [f"type-checks with an error at line {number}: {text}"
            for number, text in _introduced_by_line(original, fixed, line, code)]


@dataclass
class _Original:
    path: Path
    source: str
    errors: Errors


def _fixes(original: _Original) -> Iterator[tuple[int, Reported, int, str]]:
    for line, reported in sorted(original.errors.items()):
        for report in reported:
            if report.kind != "error" or not (report.code or "").startswith("spmd-"):
                continue
            for rank, fix in enumerate(Message.parse(report.message).fixes):
                yield line, report, rank, fix


def _uncovered(original: Errors, fixed: Errors, line: int, code: str | None) -> str | None:
    """The first fix of an error that a fix uncovered on its own ``line``, when that is all it left."""
    if any(n != line for n, _ in _introduced_by_line(original, fixed, line, code)):
        return None
    before = {(r.code, r.message) for r in original.get(line, [])}
    for report in fixed.get(line, []):
        fixes = Message.parse(report.message).fixes if (report.code or "").startswith("spmd-") else ()
        if report.kind == "error" and fixes and (report.code, report.message) not in before:
            return fixes[0]
    return None


@dataclass
class _Copy:
    """A fixed copy of a file, being checked."""

    outcome: FixOutcome
    original: _Original
    code: str | None  # the code of the error the fix is for
    source: str
    path: Path | None = None


def check_fixes(paths: list[Path], mypy_options: dict[str, str], plugin_options: dict[str, str],
                cache: Path, scratch: Path | None = None) -> list[FixOutcome]:
    """Every fix offered for ``paths`` under one configuration, applied, type-checked and run where it can be."""
    with tempfile.TemporaryDirectory(prefix="spmd-fixes-") as tmp:
        root = Path(scratch or tmp)
        root.mkdir(parents=True, exist_ok=True)
        config = root / "mypy.ini"
        config.write_text(config_text(mypy_options, plugin_options))
        by_file, raw = run_mypy(paths, config, cache, columns=True)
        assert "INTERNAL ERROR" not in raw and "Traceback" not in raw, raw
        originals = [_Original(p, p.read_text(), by_file.get(p.resolve(), {})) for p in paths]
        outcomes: list[FixOutcome] = []
        pending: list[_Copy] = []
        for original in originals:
            for line, report, rank, fix in _fixes(original):
                outcome = FixOutcome(original.path, line, Message.parse(report.message).text, rank, fix)
                outcomes.append(outcome)
                try:
                    pending.append(_Copy(outcome, original, report.code,
                                         apply_fix(original.source, line, fix, report.column)))
                except NotApplicable as error:
                    outcome.problems.append(f"cannot be applied: {error}")
        written = 0
        for step in range(CHAIN):
            for copy in pending:
                copy.path = root / f"fixed_{written:04d}_{copy.original.path.stem}.py"
                copy.path.write_text(copy.source)
                written += 1
            fixed_errors, raw = run_mypy([c.path for c in pending if c.path is not None], config, cache, columns=True)
            assert "INTERNAL ERROR" not in raw and "Traceback" not in raw, raw
            by_name = {path.name: errors for path, errors in fixed_errors.items()}
            pending = [c for c in pending if c.path is not None
                       and _goes_on(c, by_name.get(c.path.name, {}), last=step + 1 == CHAIN)]
    return outcomes


def _goes_on(copy: _Copy, errors: Errors, last: bool) -> bool:
    """Judge a fixed copy by its ``errors``; whether the first fix of an error it uncovered was applied to it
    for another round instead (never in the ``last`` round)."""
    outcome = copy.outcome
    problems = _introduced(copy.original.errors, errors, outcome.line, copy.code)
    following = _uncovered(copy.original.errors, errors, outcome.line, copy.code) if problems and not last else None
    if following is not None:
        column = next((r.column for r in errors.get(outcome.line, [])
                       if following in Message.parse(r.message).fixes), None)
        try:
            copy.source = apply_fix(copy.source, outcome.line, following, column)
        except NotApplicable:
            pass
        else:
            outcome.then.append(following)
            return True
    outcome.problems += problems
    outcome.clean = not outcome.problems
    if outcome.clean and copy.path is not None:
        _run(outcome, copy.original, copy.path)
    return False


def _run(outcome: FixOutcome, original: _Original, copy: Path) -> None:
    """Run the fixed copy where it can be, recording what differs from the reference."""
    try:
        fixed = _load(copy, copy.stem)
    except Exception as error:
        outcome.not_run = f"the fixed file does not import: {type(error).__name__}: {error}"
        return
    try:
        if hasattr(fixed, "EXAMPLE"):
            _run_example(outcome, fixed)
        else:
            _run_function(outcome, original, fixed)
    finally:
        sys.modules.pop(copy.stem, None)
        sys.modules.pop(f"unfixed_{original.path.stem}", None)


def _record(outcome: FixOutcome, runs: dict[str, Callable[[], Comparison]]) -> None:
    """Run each of ``runs`` (by the mesh it runs on) and record what raised or differed."""
    for mesh, run in runs.items():
        try:
            comparison = run()
        except Exception as error:
            outcome.problems.append(f"type-checks, but raises on {mesh}: {type(error).__name__}: {str(error)[:200]}")
            continue
        if not comparison.ok:
            outcome.problems.append(f"type-checks, but its run is wrong:\n{comparison}")
    outcome.ran = True


def _run_example(outcome: FixOutcome, fixed: ModuleType) -> None:
    _record(outcome, {f"{ranks} ranks": (lambda ranks=ranks: fixed.EXAMPLE.on_ranks(ranks).run()) for ranks in (2, 4)})


def _run_function(outcome: FixOutcome, original: _Original, fixed: ModuleType) -> None:
    spans = _function_spans(original.source)
    name = next((n for n, (first, last) in spans.items() if first <= outcome.line <= last), None)
    if name is None:
        outcome.not_run = "the error is not in a module-level function"
        return
    first, last = spans[name]
    others = sorted(n for n, errors in original.errors.items()
                    if first <= n <= last and n != outcome.line and any(r.kind == "error" for r in errors))
    if others:
        outcome.not_run = f"{name} has other errors (lines {others})"
        return
    program = FunctionProgram.of(getattr(fixed, name))
    if isinstance(program, str):
        outcome.not_run = f"{name}: {program}"
        return
    function: Callable[..., object] = getattr(fixed, name)
    try:
        unfixed = _load(original.path, f"unfixed_{original.path.stem}")
        reference = program.reference(getattr(unfixed, name))
    except Exception as error:
        outcome.not_run = f"{name} does not run on one rank: {type(error).__name__}: {str(error)[:120]}"
        return
    _record(outcome, {str(sizes): (lambda sizes=sizes: program.compare(function, reference, sizes))  # type: ignore[misc]
                      for sizes in meshes(program.axes)})
