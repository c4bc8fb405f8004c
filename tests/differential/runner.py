"""The differential loop: generate, type-check a batch with one mypy run, run and compare, shrink what is wrong.

A program is *accepted* when mypy with the plugin reports no error in its
file.  An accepted program whose simulated output or gradients differ from the
single-device reference (:mod:`.oracle`) is a soundness bug; it is shrunk
(:func:`shrink`) to a program that still type-checks and still differs, with
no statement left that could be dropped.  A rejected program whose values and
gradients match the reference on every mesh is a false rejection.
"""

from __future__ import annotations

import collections
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.differential.generator import Program, generate
from tests.differential.oracle import Outcome, run
from tests.plugin.harness import ROOT, run_mypy

CACHE = ROOT / ".mypy_cache" / "differential"
CODE = re.compile(r"\[([\w-]+)\]$")


def check(programs: Sequence[Program], workdir: Path | None = None) -> list[list[str]]:
    """mypy's errors for each program (``code: message``), all programs checked in one mypy run."""
    with tempfile.TemporaryDirectory(prefix="spmd-differential-") as scratch:
        root = Path(workdir or scratch)
        root.mkdir(parents=True, exist_ok=True)
        config = root / "mypy.ini"
        from tests.plugin.harness import config_text

        config.write_text(config_text())
        files = []
        for k, program in enumerate(programs):
            path = root / f"program_{k:05d}.py"
            path.write_text(program.render())
            files.append(path)
        by_file, raw = run_mypy(files, config, CACHE)
        if "INTERNAL ERROR" in raw or "Traceback" in raw:
            raise RuntimeError(f"mypy crashed:\n{raw[-3000:]}")
        # Matched by file name: with a warm cache, mypy may print a module's errors under the path the module
        # had in an earlier run (another scratch directory), not under the path it was given this time.
        by_name = {path.name: reported for path, reported in by_file.items()}
        stray = set(by_name) - {path.name for path in files}
        if stray:
            raise RuntimeError(f"mypy reported errors in files outside the batch: {sorted(stray)}")
        result = []
        for path in files:
            reported = by_name.get(path.name, {})
            result.append([f"line {line}: {r.message} [{r.code}]" for line, rs in sorted(reported.items())
                           for r in rs if r.kind == "error"])
        return result


def error_codes(errors: Iterable[str]) -> list[str]:
    return sorted({m.group(1) for e in errors if (m := CODE.search(e))})


def shrink(program: Program, seed: int = 0, budget: int = 12) -> Program:
    """A smaller program that mypy still accepts and that still differs from the reference.

    Each round tries every single-statement removal (with later uses of the
    removed value reading one of its operands instead) in one mypy run and
    keeps the first candidate that is accepted and wrong; it stops when none
    is, or after ``budget`` rounds.
    """
    for _ in range(budget):
        candidates = []
        for index in range(program.size):
            for keep in ("first", "last"):
                candidate = program.without(index, keep)
                if candidate is not None and candidate.render() not in {c.render() for c in candidates}:
                    candidates.append(candidate)
        if not candidates:
            break
        verdicts = check(candidates)
        for candidate, errors in zip(candidates, verdicts):
            if not errors and run(candidate, seed).wrong:
                program = candidate
                break
        else:
            break
    return program


@dataclass
class Finding:
    seed: int
    program: Program
    outcome: Outcome
    shrunk: Program | None = None
    shrunk_outcome: Outcome | None = None


@dataclass
class Report:
    generated: int = 0
    accepted: int = 0
    rejected: int = 0
    accepted_matching: int = 0
    accepted_wrong: list[Finding] = field(default_factory=list)
    accepted_erroring: list[tuple[int, list[str]]] = field(default_factory=list)
    rejected_wrong: int = 0
    rejected_erroring: int = 0
    rejected_inconclusive: int = 0  # matching, but the output or a gradient is zero on one device
    false_rejections: list[tuple[int, list[str]]] = field(default_factory=list)  # seed, mypy's errors
    false_rejection_codes: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def false_rejection_rate(self) -> float:
        """False rejections among the rejected programs compared on non-zero values."""
        compared = self.rejected - self.rejected_erroring - self.rejected_inconclusive
        return len(self.false_rejections) / compared if compared else 0.0

    def summary(self) -> str:
        lines = [
            f"programs generated:               {self.generated}",
            f"accepted by the plugin:           {self.accepted}",
            f"  matching one device:            {self.accepted_matching}",
            f"  WRONG (soundness bugs):         {len(self.accepted_wrong)}",
            f"  raised at run time (not compared): {len(self.accepted_erroring)}",
            f"rejected by the plugin:           {self.rejected}",
            f"  really wrong:                   {self.rejected_wrong}",
            f"  raised at run time (not compared): {self.rejected_erroring}",
            f"  matching, but a compared value is zero (inconclusive): {self.rejected_inconclusive}",
            f"  false rejections (match):       {len(self.false_rejections)}"
            f" ({100 * self.false_rejection_rate:.1f}% of the compared rejections)",
        ]
        if self.false_rejection_codes:
            codes = ", ".join(f"{code} {n}" for code, n in self.false_rejection_codes.most_common())
            lines.append(f"  false rejections by error code:  {codes}")
        return "\n".join(lines)


def campaign(seeds: Sequence[int], batch: int = 200, shrink_findings: bool = True, log=None,
             exclude: frozenset[str] = frozenset()) -> Report:
    """Generate, check, run and compare the programs of ``seeds``, ``batch`` programs per mypy run.

    ``exclude`` names ops the generator leaves out (see :func:`.generator.generate`).
    """
    report = Report()
    for start in range(0, len(seeds), batch):
        chunk = list(seeds[start:start + batch])
        programs = [generate(seed, exclude) for seed in chunk]
        verdicts = check(programs)
        for seed, program, errors in zip(chunk, programs, verdicts):
            report.generated += 1
            outcome = run(program, seed)
            if not errors:
                report.accepted += 1
                if outcome.wrong:
                    finding = Finding(seed, program, outcome)
                    if shrink_findings:
                        finding.shrunk = shrink(program, seed)
                        finding.shrunk_outcome = run(finding.shrunk, seed)
                    report.accepted_wrong.append(finding)
                elif outcome.errors:
                    report.accepted_erroring.append((seed, outcome.errors))
                else:
                    report.accepted_matching += 1
            else:
                report.rejected += 1
                if outcome.wrong:
                    report.rejected_wrong += 1
                elif outcome.errors:
                    report.rejected_erroring += 1
                elif outcome.zero:
                    report.rejected_inconclusive += 1
                else:
                    report.false_rejections.append((seed, errors))
                    report.false_rejection_codes.update(error_codes(errors))
        if log is not None:
            log(f"{report.generated} programs: {report.accepted} accepted ({len(report.accepted_wrong)} wrong), "
                f"{report.rejected} rejected ({len(report.false_rejections)} false)")
    return report
