"""``spmd-check PATHS...``: run mypy with the SPMD plugin and say, file by file, what it found.

Usage::

    python -m spmd_mypy.cli examples/
    python -m spmd_mypy.cli --exit-zero examples/      # a demo: report, but do not fail

It runs mypy once, in this process, over ``PATHS`` and prints every file it
checked: ``clean``, or each error with its line, the source line, the error
code, the message and, on a line of its own, the fix the plugin suggests.  A
summary line counts the errors by code.  The exit status is mypy's: 0 when
everything is clean, 1 when errors were found (0 with ``--exit-zero``), 2 when
mypy itself could not run.

Variants.  When the plugin's options name ``variants`` (configurations that
set module-level switches, see :mod:`spmd_mypy.variants`), mypy runs once per
variant and the report says which errors occur only in some of them;
``--variant NAME`` checks one.

Baseline.  ``--update-baseline --baseline FILE`` records every error found
now; ``--baseline FILE`` then reports, and fails on, only the errors FILE does
not record (:mod:`spmd_mypy.baseline` says how errors are matched).

Coverage.  ``--coverage`` adds, after the report, how much of each function
the SPMD types reach and each place where they are lost
(:mod:`spmd_mypy.coverage`); ``--coverage-report FILE`` writes the same as
JSON.  The files given are then checked again even when mypy's cache has them
(mypy keeps expression types only for what it checks); with variants, name one
with ``--variant``.

Settings.  A mypy configuration of yours (found the way mypy finds one, or
given with ``--config-file``) is used when it loads the plugin
(``plugins = spmd_mypy.plugin``).  Otherwise the recommended settings
(:mod:`spmd_mypy.recommended`, with torch's internals skipped) are used, and
the report says so.  ``spmd-check --print-config [ini|pyproject]`` prints them
(add ``--skip-torch-internals`` for the faster form meant for one-shot runs),
to start a configuration from; it needs no mypy.

Stubs.  mypy reads the ``spmd_types`` API from its PEP 561 stubs.  When the
Python environment mypy inspects (and the configured ``mypy_path``) has no
stubs for ``spmd_types``, as in a source checkout or an editable install, the
checkout's ``stubs/`` directory is put on ``MYPYPATH`` for the run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import spmd_mypy
from spmd_mypy import baseline, config, recommended, variants
from spmd_types.typesystem import Code, Message

if TYPE_CHECKING:
    from mypy.options import Options

    from spmd_mypy.coverage import FileCoverage

__all__ = ["Finding", "Settings", "SetupError", "choose_settings", "find_stubs", "main", "parse_output"]

CHECKOUT_STUBS = Path(__file__).resolve().parents[1] / "stubs"
NO_MYPY = (
    "mypy is not installed in this Python environment ({python}); "
    'install it with `pip install "mypy>=2.0,<3"` (or install spmd-typecheck with its [mypy] extra)'
)

_SPMD_CODES = frozenset(code.value for code in Code)
_LINE = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+)(?::\d+)*: (?P<kind>error|note): (?P<message>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)


# -- what mypy reported ----------------------------------------------------------------


@dataclass
class Finding:
    """One error (or a note on its own) that mypy reported, with the notes that follow it."""

    kind: str  # "error" or "note"
    line: int
    code: str | None
    message: str
    notes: list[str] = field(default_factory=list)


def parse_output(stdout: str) -> tuple[dict[Path, list[Finding]], list[str]]:
    """mypy's report as findings by (absolute) file, and the lines that belong to no file."""
    findings: dict[Path, list[Finding]] = {}
    other: list[str] = []
    for text in stdout.splitlines():
        match = _LINE.match(text)
        if match is None:
            if text.strip():
                other.append(text)
            continue
        entries = findings.setdefault(Path(match["path"]).resolve(), [])
        line = int(match["line"])
        if match["kind"] == "note" and entries and entries[-1].line == line:
            entries[-1].notes.append(match["message"])
        else:
            entries.append(Finding(match["kind"], line, match["code"], match["message"]))
    return findings, other


# -- settings ---------------------------------------------------------------------------


class SetupError(Exception):
    """mypy cannot be set up to check with the plugin (the message says what to do)."""


@dataclass(frozen=True)
class Settings:
    """The configuration file mypy runs with, why, and the stubs directory it needs (if any)."""

    config_file: str
    origin: str
    stubs: Path | None


def _options(args: list[str]) -> tuple[list[str], Options] | None:
    """``(files, options)`` as mypy would compute them from ``args``; ``None`` if mypy rejects them."""
    from mypy.main import process_options

    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            sources, options = process_options(args)
    except SystemExit:
        return None
    return [source.path for source in sources if source.path], options


def choose_settings(paths: Sequence[str], config_file: str | None, scratch: Path) -> Settings:
    """Pick the configuration (see the module docstring) and find the stubs."""
    from mypy.options import Options

    found = _options([*(["--config-file", config_file] if config_file else []), *paths])
    options = found[1] if found else Options()
    user_config = options.config_file
    if user_config and config.PLUGIN in options.plugins:
        return Settings(user_config, f"your {user_config}", find_stubs(options))
    if config_file:
        raise SetupError(
            f"{config_file} does not load the plugin; add `plugins = {config.PLUGIN}` to its [mypy] section"
        )
    chosen, origin = str(scratch / "mypy.ini"), "the recommended settings (spmd-check --print-config)"
    Path(chosen).write_text(recommended.render("ini", skip_torch_internals=True))
    if user_config:
        origin += f" ({user_config} does not load {config.PLUGIN})"
    found = _options(["--config-file", chosen, *paths])
    return Settings(chosen, origin, find_stubs(found[1] if found else Options()))


def find_stubs(options: Options) -> Path | None:
    """The stubs directory to add to ``MYPYPATH``, or ``None`` when mypy already sees the stubs.

    mypy sees them when ``spmd_types-stubs`` is installed in a directory it
    searches for the configured Python executable, or when a ``mypy_path``
    entry holds ``spmd_types/__init__.pyi``.
    """
    from mypy.modulefinder import get_search_dirs

    sys_path, site_packages = get_search_dirs(options.python_executable or sys.executable)
    if any((Path(d) / "spmd_types-stubs" / "__init__.pyi").is_file() for d in [*site_packages, *sys_path]):
        return None
    if any((Path(d) / "spmd_types" / "__init__.pyi").is_file() for d in options.mypy_path):
        return None
    if (CHECKOUT_STUBS / "spmd_types" / "__init__.pyi").is_file():
        return CHECKOUT_STUBS
    raise SetupError(
        "mypy cannot find the spmd_types stubs; install them with `pip install spmd-typecheck` "
        "(in a source checkout, run spmd-check from the checkout)"
    )


@contextlib.contextmanager
def _mypy_path(stubs: Path | None) -> Iterator[None]:
    """Put ``stubs`` in front of ``MYPYPATH`` for the duration of the run."""
    previous = os.environ.get("MYPYPATH")
    if stubs is not None:
        os.environ["MYPYPATH"] = os.pathsep.join(filter(None, [str(stubs), previous]))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("MYPYPATH", None)
        else:
            os.environ["MYPYPATH"] = previous


# -- the report -------------------------------------------------------------------------


class _Style:
    """ANSI styling, or none."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def ok(self, text: str) -> str:
        return self(text, "32")

    def bad(self, text: str) -> str:
        return self(text, "1;31")

    def bold(self, text: str) -> str:
        return self(text, "1")

    def dim(self, text: str) -> str:
        return self(text, "2")


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _explain(finding: Finding) -> list[str]:
    """The message, with each fix the plugin suggests (and each alternative) on a line of its own."""
    if finding.code not in _SPMD_CODES:
        return [finding.message, *finding.notes]
    message = Message.parse(finding.message)
    fixes = [f"{'fix: ' if n == 0 else '  or '}{fix}" for n, fix in enumerate(message.fixes)]
    return [message.text, *fixes, *finding.notes]


def render(
    files: Sequence[Path], findings: dict[Path, list[Finding]], settings: Settings, out: TextIO, style: _Style
) -> None:
    """Print the header, every file grouped by directory (clean ``__init__.py`` files left out), the summary."""
    from mypy.version import __version__ as mypy_version

    print(
        style.bold("spmd-check")
        + f": mypy {mypy_version} with the spmd-typecheck plugin {spmd_mypy.__version__}, using {settings.origin}",
        file=out,
    )
    directory = None
    for path in sorted(files, key=lambda p: (p.parent, p.name)):
        entries = sorted(findings.get(path, []), key=lambda f: f.line)
        errors = [f for f in entries if f.kind == "error"]
        if not entries and path.name == "__init__.py":
            continue
        if path.parent != directory:
            directory = path.parent
            print(f"\n{style.bold(_shown(directory) + os.sep)}", file=out)
        if errors:
            label = f"{len(errors)} error" + ("s" if len(errors) > 1 else "")
            print(f"  {style.bad(f'{label:<9}')} {style.bold(path.name)}", file=out)
        else:
            print(f"  {style.ok('clean')}     {path.name}", file=out)
        lines = baseline.read_lines(path) if entries else []
        for finding in entries:
            tag = style.bad(f"[{finding.code}]") if finding.kind == "error" else style.dim("note")
            print(f"      line {finding.line}  {tag}", file=out)
            code = baseline.source_line(lines, finding.line)
            if code:
                print(f"        {style.dim('>')} {code}", file=out)
            for text in _explain(finding):
                print(f"        {text}", file=out)
    print(file=out)
    print(summary(files, {path: [f for f in found if f.kind == "error"] for path, found in findings.items()}), file=out)


def summary(files: Sequence[Path], errors: dict[Path, list[Finding]]) -> str:
    """One line: how many errors of which code, in how many files, and how many files are clean."""
    counts = Counter(f.code or "no code" for path in files for f in errors.get(path, []))
    flagged = sum(1 for path in files if errors.get(path))
    clean = len(files) - flagged
    if not counts:
        return f"All {len(files)} files are clean." if len(files) != 1 else "The file is clean."
    total = sum(counts.values())
    by_code = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return (
        f"{total} error{'s' if total > 1 else ''} in {flagged} file{'s' if flagged > 1 else ''} ({by_code}); "
        f"{clean} file{'s' if clean != 1 else ''} clean."
    )


# -- entry point ------------------------------------------------------------------------


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="spmd-check",
        description="Run mypy with the spmd-typecheck plugin and report, file by file, the SPMD errors it finds.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to check")
    parser.add_argument("--config-file",
                        help="a mypy configuration that loads the plugin (default: found as mypy does)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are found (for demos)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colored output")
    parser.add_argument("--print-config", nargs="?", const="ini", choices=recommended.FORMATS, metavar="FORMAT",
                        help="print the recommended mypy configuration, as ini (default) or pyproject, and exit")
    parser.add_argument("--variant", metavar="NAME",
                        help="check only the named variant of the configuration (default: every variant)")
    parser.add_argument("--baseline", type=Path, metavar="FILE",
                        help="report only the errors that FILE does not record (see --update-baseline)")
    parser.add_argument("--update-baseline", action="store_true",
                        help="with --baseline: record every error found now in FILE, and exit 0")
    parser.add_argument("--coverage", action="store_true",
                        help="also report, per function, the share of tensor expressions with a known SPMD type "
                             "and each place where a type is lost")
    parser.add_argument("--coverage-report", type=Path, metavar="FILE",
                        help="write that coverage report to FILE as JSON")
    parser.add_argument("--skip-torch-internals", action="store_true",
                        help="with --print-config: add the section that skips torch's heavy subpackages "
                             "(faster one-shot runs; not for the mypy daemon)")
    args = parser.parse_args(argv)
    if args.print_config is None and not args.paths:
        parser.error("give the files or directories to check (or --print-config)")
    if args.skip_torch_internals and args.print_config is None:
        parser.error("--skip-torch-internals goes with --print-config")
    if args.update_baseline and args.baseline is None:
        parser.error("--update-baseline goes with --baseline FILE")
    return args


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the check; the exit status (see the module docstring)."""
    args = _arguments(argv)
    out = out or sys.stdout
    if args.print_config is not None:
        out.write(recommended.render(args.print_config, skip_torch_internals=args.skip_torch_internals))
        return 0
    if importlib.util.find_spec("mypy") is None:
        print(f"spmd-check: {NO_MYPY.format(python=sys.executable)}", file=sys.stderr)
        return 2
    from mypy import api

    known: Counter[baseline.Entry] = Counter()
    if args.baseline is not None and not args.update_baseline:
        try:
            known = baseline.load(args.baseline)
        except baseline.BaselineError as error:
            print(f"spmd-check: {error}", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as scratch:
        try:
            settings = choose_settings(args.paths, args.config_file, Path(scratch))
            chosen = _chosen_variants(config.load(settings.config_file).variants, args.variant)
        except (SetupError, config.ConfigError) as error:
            print(f"spmd-check: {error}", file=sys.stderr)
            return 2
        found = _options(["--config-file", settings.config_file, *args.paths])
        mypy_args = ["--config-file", settings.config_file, "--show-absolute-path", "--show-error-codes",
                     "--hide-error-context", "--no-pretty", "--no-error-summary", *args.paths]
        measured: list[FileCoverage] | None = None
        with _mypy_path(settings.stubs):
            if args.coverage or args.coverage_report:
                if len(chosen) > 1:
                    print("spmd-check: --coverage measures one configuration; name a variant with --variant",
                          file=sys.stderr)
                    return 2
                runs, measured = _run_with_coverage(mypy_args, chosen)
            elif chosen:
                cache_root = Path(found[1].cache_dir) if found is not None else Path(".mypy_cache")
                runs = variants.run_all(chosen, mypy_args, cache_root)
            else:
                runs = {"": api.run(mypy_args)}
    failed = next((run for run in runs.values() if run[2] not in (0, 1)), None)
    if failed is not None or found is None:
        stdout, stderr, status = failed or next(iter(runs.values()))
        out.write(stdout + stderr)
        print(f"spmd-check: mypy could not check {' '.join(args.paths)} (exit status {status})", file=out)
        return 2
    findings, other = _merged({name: parse_output(run[0]) for name, run in runs.items()}, chosen)
    if args.baseline is not None:
        root = args.baseline.resolve().parent
        if args.update_baseline:
            recorded = baseline.record(findings, root)
            baseline.save(args.baseline, recorded)
            count = sum(recorded.values())
            print(f"spmd-check: recorded {count} error{'s' if count != 1 else ''} in {args.baseline}", file=out)
            return 0
        against = baseline.split(findings, known, root)
        findings = {path: [f for f in found if f.kind != "error"] + against.new.get(path, [])
                    for path, found in findings.items()}
        other.append(_baseline_summary(args.baseline, against.known, against.gone))
    # The files given, and any other file mypy reported errors in (a module they import).
    reported = {path for path, entries in findings.items() if entries}
    files = sorted({Path(path).resolve() for path in found[0]} | reported)
    color = args.color == "always" or (args.color == "auto" and out.isatty() and "NO_COLOR" not in os.environ)
    try:
        render(files, findings, settings, out, _Style(color))
        for text in other:
            print(text, file=out)
        if measured is not None and args.coverage:
            from spmd_mypy.coverage import render as render_coverage

            render_coverage(measured, out)
        out.flush()
    except BrokenPipeError:  # the reader stopped early (`spmd-check ... | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    if measured is not None and args.coverage_report:
        from spmd_mypy.coverage import as_json

        args.coverage_report.write_text(json.dumps(as_json(measured), indent=1) + "\n")
    errors = any(f.kind == "error" for found in findings.values() for f in found)
    return 1 if errors and not args.exit_zero else 0


def _run_with_coverage(
    mypy_args: list[str], chosen: tuple[config.Variant, ...]
) -> tuple[dict[str, tuple[str, str, int]], list[FileCoverage]]:
    """One mypy run that keeps expression types (:func:`spmd_mypy.compat.check_with_types`), and its coverage."""
    from spmd_mypy.compat import check_with_types
    from spmd_mypy.coverage import measure

    flags = chosen[0].mypy_flags() if chosen else []
    with contextlib.redirect_stderr(io.StringIO()) as stderr:
        run = check_with_types([*flags, *mypy_args])
    output = "".join(line + "\n" for line in run.output)
    measured = [measure(_shown(Path(path).resolve()), tree, run.types)
                for path, tree in sorted(run.trees.items())]
    return {chosen[0].name if chosen else "": (output, stderr.getvalue(), run.status)}, measured


def _chosen_variants(configured: tuple[config.Variant, ...], name: str | None) -> tuple[config.Variant, ...]:
    """The variants to check: every configured one, or the one named with ``--variant``."""
    if name is None:
        return configured
    chosen = tuple(v for v in configured if v.name == name)
    if not chosen:
        names = ", ".join(v.name for v in configured) or "none are configured"
        raise SetupError(f"no variant named {name!r} (the variants: {names})")
    return chosen


def _merged(
    parsed: dict[str, tuple[dict[Path, list[Finding]], list[str]]], chosen: tuple[config.Variant, ...]
) -> tuple[dict[Path, list[Finding]], list[str]]:
    """One report from the runs of every variant (a single run is its own report)."""
    if len(parsed) == 1:
        return next(iter(parsed.values()))
    merged = variants.merge({name: found for name, (found, _) in parsed.items()},
                            key=lambda f: (f.kind, f.line, f.code, f.message))
    findings = {
        path: [f if len(names) == len(parsed) else replace(f, notes=[*f.notes, _only_in(names)])
               for f, names in found]
        for path, found in merged.items()
    }
    other = list(dict.fromkeys(line for _, lines in parsed.values() for line in lines))
    spelled = "; ".join(f"{v.name} ({', '.join([*(f'{s}=true' for s in v.true), *(f'{s}=false' for s in v.false)])})"
                        for v in chosen)
    return findings, [*other, f"Checked {len(chosen)} variants: {spelled}."]


def _only_in(names: tuple[str, ...]) -> str:
    return f"only in variant{'s' if len(names) > 1 else ''} {', '.join(names)}"


def _baseline_summary(file: Path, known: int, gone: int) -> str:
    """What the baseline hid, and what it records that no longer occurs."""
    line = f"Baseline {file}: {known} known error{'s' if known != 1 else ''} not shown"
    if gone:
        line += (f"; {gone} recorded error{'s' if gone != 1 else ''} no longer "
                 f"occur{'s' if gone == 1 else ''} (--update-baseline drops {'them' if gone != 1 else 'it'})")
    return line + "."


if __name__ == "__main__":
    sys.exit(main())
