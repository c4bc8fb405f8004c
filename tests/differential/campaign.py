"""A long differential campaign: ``python -m tests.differential.campaign --programs 20000 --seed 1``.

Generates the programs of seeds ``seed * 10**7 + k`` for ``k < programs``,
type-checks them a batch per mypy run, runs every program on simulated ranks
against its single-device reference, and prints how many were accepted,
rejected, wrong (accepted but different from one device: soundness bugs) and
falsely rejected.  Every wrong program is shrunk and written, with what
differs, to ``--out`` (one file per finding); the false rejections are listed
in ``false_rejections.txt`` there.  The exit status is 1 when a wrong program
was found.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.differential.runner import campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], prog="python -m tests.differential.campaign")
    parser.add_argument("--programs", type=int, default=2000, help="how many programs to generate")
    parser.add_argument("--seed", type=int, default=0, help="campaign seed (the same seed gives the same programs)")
    parser.add_argument("--batch", type=int, default=250, help="programs per mypy run")
    parser.add_argument("--out", type=Path, default=Path("differential-findings"), help="where findings are written")
    parser.add_argument("--exclude", default="", help="comma-separated ops never to generate (e.g. norm)")
    parser.add_argument("--no-shrink", action="store_true", help="report wrong programs as generated")
    args = parser.parse_args(argv)

    start = time.monotonic()
    seeds = [args.seed * 10**7 + k for k in range(args.programs)]
    report = campaign(seeds, batch=args.batch, shrink_findings=not args.no_shrink,
                      exclude=frozenset(filter(None, args.exclude.split(","))),
                      log=lambda line: print(f"[{time.monotonic() - start:7.0f}s] {line}", flush=True))
    print(report.summary())
    args.out.mkdir(parents=True, exist_ok=True)
    for finding in report.accepted_wrong:
        shrunk = finding.shrunk or finding.program
        outcome = finding.shrunk_outcome or finding.outcome
        text = [f"# seed {finding.seed}: accepted by mypy with the plugin, differs from one device:"]
        text += [f"#   {line}" for line in outcome.mismatches]
        text += ["", shrunk.render(), "", "# as generated:", *(f"# {line}" for line in finding.program.render().splitlines())]
        (args.out / f"wrong_{finding.seed}.py").write_text("\n".join(text) + "\n")
    with open(args.out / "false_rejections.txt", "w") as listing:
        for seed, errors in report.false_rejections:
            listing.write(f"seed {seed}:\n" + "".join(f"  {e}\n" for e in errors))
    print(f"findings written to {args.out}/ ({len(report.accepted_wrong)} wrong programs); "
          f"{time.monotonic() - start:.0f}s in all")
    return 1 if report.accepted_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
