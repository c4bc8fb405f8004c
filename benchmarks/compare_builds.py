"""The plugin's cost in several versions of the code, side by side: plain mypy against each, on one model.

    python benchmarks/compare_builds.py --blocks 800 --repeats 3 abcc3b8 HEAD        # CPU seconds
    python benchmarks/compare_builds.py --blocks 800 --compiled abcc3b8 HEAD         # the mypyc builds
    python benchmarks/compare_builds.py --blocks 50 --instructions abcc3b8 WORKTREE  # instructions, ~1 min

Each version is a commit (``git archive`` of the plugin, the rule core and the
stubs) or ``WORKTREE`` (the checkout as it is), optionally compiled with mypyc
(:mod:`tools.compiled`; each version compiles the modules its own
``tools/compiled.py`` lists).  The workload is ``plugin_cost.py``'s generated model
in its "cold, torch cached" mode: every run starts from a copy of a cache in
which that version checked the model's imports, so only the model's own
modules are analysed, which is where the plugin's cost is.  Plain mypy runs
with the first version's stubs.  The versions' runs alternate, and medians of
CPU seconds (user + sys of the mypy process) are reported, with the spread.

``--instructions`` counts instructions instead, under ``valgrind --tool=callgrind``
(one run each: the count varies by well under 1% between runs and does not
depend on what else the machine runs, where CPU seconds spread by 15% on a
shared machine).  Use it to compare changes; CPU seconds are what users wait for.

The first run of every version is untimed and must report no issue: each
version is checked to give the same (empty) output on the model.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plugin_cost  # the workload generator and the configurations

ROOT = plugin_cost.ROOT
CODE = ("spmd_mypy", "spmd_types", "stubs")
COMPILE_LIST = "tools/compiled.py"  # which modules a version compiles
WORKTREE = "WORKTREE"


def snapshot(version: str, dest: Path, compiled: bool) -> str:
    """The plugin, rule core and stubs of ``version`` in ``dest``, compiled if asked; a description."""
    dest.mkdir(parents=True)
    paths = (*CODE, COMPILE_LIST) if compiled else CODE
    if version == WORKTREE:
        for path in paths:
            if (ROOT / path).is_dir():
                shutil.copytree(ROOT / path, dest / path, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
            else:
                (dest / path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / path, dest / path)
        described = "the working tree"
    else:
        git = ["git", "-C", str(ROOT)]
        rev = subprocess.run([*git, "rev-parse", "--short", version], capture_output=True, text=True, check=True)
        archive = subprocess.run([*git, "archive", version, "--", *paths], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        described = f"commit {rev.stdout.strip()}"
    if compiled:
        sys.path.insert(0, str(ROOT))
        from tools import compiled as compiled_build

        compiled_build.compile_in(dest, _compiled_sources_of(dest))
        described += ", compiled with mypyc"
    return described


def _compiled_sources_of(dest: Path) -> list[str]:
    """The modules that the version in ``dest`` compiles, by its own ``tools/compiled.py``: an older version
    may keep a module interpreted that this one compiles, because the module then could not be."""
    spec = importlib.util.spec_from_file_location(f"_compiled_{abs(hash(dest))}", dest / "tools" / "compiled.py")
    assert spec is not None and spec.loader is not None
    version = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(version)
    return list(version.compiled_sources(dest))


def run_mypy(checkout: Path, config: Path, cache: Path, targets: list[Path], pycache: Path,
             instructions: bool) -> tuple[float, str]:
    """CPU seconds (or billions of instructions) of one mypy run importing the plugin from ``checkout``; its output."""
    argv = [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache),
            "--no-error-summary", *map(str, targets)]
    if instructions:
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as for an installed package
    env.pop("MYPY_CACHE_DIR", None)
    proc = subprocess.Popen(argv, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode(errors="replace") if proc.stdout is not None else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"mypy failed:\n{out[-3000:]}")
    if not instructions:
        return usage.ru_utime + usage.ru_stime, out
    found = re.search(r"refs:\s+([\d,]+)", out)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{out[-3000:]}")
    return int(found.group(1).replace(",", "")) / 1e9, out


class Side:
    """One column of the comparison: plain mypy, or the plugin of one version."""

    def __init__(self, label: str, checkout: Path, plugin: bool, work: Path) -> None:
        self.label, self.checkout, self.work = label, checkout, work
        plugin_cost.CHECKOUT = checkout  # config_text points mypy_path at this version's stubs
        self.config = work / "mypy.ini"
        self.config.write_text(plugin_cost.config_text(plugin))
        self.samples: list[float] = []

    def run(self, cache: Path, targets: list[Path], instructions: bool = False) -> tuple[float, str]:
        return run_mypy(self.checkout, self.config, cache, targets, self.work / "pycache", instructions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="+", help=f"commits, or {WORKTREE} for the checkout as it is")
    parser.add_argument("--blocks", type=int, default=800)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compiled", action="store_true", help="compile each version with mypyc first")
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind), one run each")
    args = parser.parse_args()
    if args.instructions:
        args.repeats = 1

    print(plugin_cost.machine())
    tmp = Path(tempfile.mkdtemp(prefix="spmd-compare-"))
    try:
        sides = []
        for k, version in enumerate(args.versions):
            checkout = tmp / f"v{k}" / "checkout"
            described = snapshot(version, checkout, args.compiled)
            print(f"{version}: {described}")
            if k == 0:
                sides.append(Side("plain mypy", checkout, False, _mkdir(tmp / "plain")))
            sides.append(Side(version, checkout, True, tmp / f"v{k}"))
        model = plugin_cost.generate_model(tmp, args.blocks, 25)
        empty = plugin_cost.generate_model(tmp, 0, 25)
        bases = {}
        for side in sides:  # each side's cache of the model's imports; then one untimed run of the model
            bases[side.label] = side.work / "cache-base"
            side.run(bases[side.label], empty.targets)
            _, out = side.run(_fresh_copy(bases[side.label], tmp / "cache"), model.targets)
            if out.strip():
                raise RuntimeError(f"{side.label} reports something on the model:\n{out[-3000:]}")
        for _ in range(args.repeats):
            for side in sides:
                value, _ = side.run(_fresh_copy(bases[side.label], tmp / "cache"), model.targets, args.instructions)
                side.samples.append(value)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    unit = "G instructions" if args.instructions else "CPU s"
    print(f"\nmodel-{args.blocks}, cold with torch cached, {unit}, {args.repeats} run(s) each, medians [min-max]")
    plain = statistics.median(sides[0].samples)
    print(f"{'':24} {unit:>22} {'ratio':>7} {'plugin extra':>13}")
    for side in sides:
        value = statistics.median(side.samples)
        spread = f"{value:.3f} [{min(side.samples):.2f}-{max(side.samples):.2f}]"
        print(f"{side.label:24} {spread:>22} {value / plain:7.2f} {value - plain:13.3f}")


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def _fresh_copy(base: Path, cache: Path) -> Path:
    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(base, cache)
    return cache


if __name__ == "__main__":
    main()
