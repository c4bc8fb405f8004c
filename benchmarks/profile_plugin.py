"""Where the mypy plugin spends its time: per hook kind, per function, and at start-up.

    python benchmarks/profile_plugin.py                  # model of 800 blocks; about 4 minutes
    python benchmarks/profile_plugin.py --blocks 200 --top 40
    python benchmarks/profile_plugin.py --quick
    python benchmarks/profile_plugin.py --torch-cached   # only the model's own modules are new

Uses the generated model of ``benchmarks/plugin_cost.py``, its
configurations (the recommended one, torch's internals skipped, with and without the plugin) and its
snapshot of the code (the working tree, or ``--commit``).  Every
timed mypy run is cold (empty cache; with ``--torch-cached``, a copy of a cache in
which the model's imports were checked, as in ``plugin_cost.py``'s "cold, torch
cached" mode, so that only the model's own modules are analysed) and runs in a child process as
``mypy.main.main`` does from the command line, ending with mypy's fast exit
(``os._exit``, which skips freeing the build's objects; ``mypy.api.run``
frees them, which takes seconds and would inflate every figure).  Sections:

1. ``hooks``: every hook the plugin hands to mypy is wrapped in a timer, and
   so is each ``get_*_hook`` decision (mypy asks those once per call site,
   attribute and annotation).  Prints, per kind, how often it ran and its
   total and per-call time, next to the run's CPU time: the plugin's share of
   a cold run.  The timer's own cost per call is measured and subtracted.
   Also the time the child spent in Python's garbage collector, which
   runs whenever enough new objects have been allocated (by mypy or by the
   plugin) and is counted in whatever code happens to run then.
2. ``cprofile``: one in-process run under ``cProfile``; prints the functions
   of ``spmd_mypy`` and ``spmd_types`` with the most own time.  mypy itself is
   compiled (mypyc) and invisible to the profiler except as the caller, and
   profiling inflates pure-Python code more than compiled code, so read this
   as a ranking and section 1 as the absolute numbers.
3. ``startup``: what a no-op warm run pays for the plugin: its import (in a
   fresh interpreter that has already imported what mypy imports for a
   build, with bytecode cached as after an install), the rules fingerprint,
   and ``report_config_data``, which mypy calls once per module; and, apart,
   the import of the hooks and the rule core, which only a run that checks
   something pays.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plugin_cost  # the workload generator, the configurations, the snapshot and the child runner

REPORT_TAG = "PLUGIN-HOOKS"

# -- hook timing -------------------------------------------------------------------


class HookTimer:
    """Wraps the plugin's ``get_*_hook`` methods and the hooks they return; time and calls per kind."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.seconds: dict[str, float] = defaultdict(float)

    def timed(self, kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock = time.perf_counter

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[kind] += clock() - start
                self.calls[kind] += 1

        return wrapper

    @contextmanager
    def installed(self) -> Iterator[None]:
        from spmd_mypy import fullnames
        from spmd_mypy.plugin import SpmdPlugin

        originals = {}

        def classify(getter: str, fullname: str) -> str:
            if getter == "get_function_hook":
                if fullname.startswith("spmd_types."):
                    return "function: spmd collective/cast"
                if fullnames.public_function_name(fullname) is not None:
                    return "function: torch op"
                return "function: user callable (boundary)"
            if getter == "get_method_hook":
                owner = fullname.rpartition(".")[0]
                return "method: tensor op" if owner in fullnames.TENSOR_RECEIVERS else "method: user (boundary)"
            return {"get_function_signature_hook": "signature: user function",
                    "get_method_signature_hook": "signature: user method",
                    "get_attribute_hook": "attribute: tensor property",
                    "get_type_analyze_hook": "annotation"}[getter]

        for getter in ("get_function_hook", "get_method_hook", "get_function_signature_hook",
                       "get_method_signature_hook", "get_attribute_hook", "get_type_analyze_hook"):
            original = getattr(SpmdPlugin, getter)
            originals[getter] = original

            def patched(self: Any, fullname: str, _getter: str = getter, _original: Any = original) -> Any:
                hook = self._timer.timed(f"decide: {_getter}", _original)(self, fullname)
                if hook is None:
                    return None
                return self._timer.timed(classify(_getter, fullname), hook)

            setattr(SpmdPlugin, getter, patched)
        for name in ("report_config_data", "get_additional_deps", "set_modules"):
            original = getattr(SpmdPlugin, name)
            originals[name] = original
            setattr(SpmdPlugin, name,
                    lambda self, *a, _n=name, _o=original: self._timer.timed(_n, _o)(self, *a))
        SpmdPlugin._timer = self  # type: ignore[attr-defined]
        try:
            yield
        finally:
            for name, original in originals.items():
                setattr(SpmdPlugin, name, original)
            del SpmdPlugin._timer  # type: ignore[attr-defined]


def timer_overhead() -> float:
    """Seconds the timing wrapper adds to one call (measured on a function that does nothing)."""
    timer = HookTimer()
    nothing = timer.timed("x", lambda: None)
    bare = lambda: None  # noqa: E731
    n = 200_000
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            nothing()
        mid = time.perf_counter()
        for _ in range(n):
            bare()
        samples.append(((mid - start) - (time.perf_counter() - mid)) / n)
    return statistics.median(samples)


# -- child runs --------------------------------------------------------------------


def child_main(mypy_args: list[str]) -> None:
    """In a fresh process: time the plugin's hooks while mypy runs as its command line does.

    Just before mypy's fast exit (``os._exit``), prints one line ``PLUGIN-HOOKS
    {kind: [calls, seconds]}`` (the kind ``gc`` is the garbage collector's).  Never returns.
    """
    import gc

    from mypy.main import main as mypy_main

    timer = HookTimer()
    real_exit = os._exit
    collecting: list[float] = []

    def collector(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting.append(time.perf_counter())
        elif collecting:
            timer.seconds["gc"] += time.perf_counter() - collecting.pop()
            timer.calls["gc"] += 1

    gc.callbacks.append(collector)

    def report_then_exit(status: int) -> None:
        data = {kind: [timer.calls[kind], timer.seconds[kind]] for kind in timer.calls}
        print(f"{REPORT_TAG} {json.dumps(data)}", flush=True)
        real_exit(status)

    os._exit = report_then_exit  # mypy's fast exit looks os._exit up when it exits
    with timer.installed():
        try:
            mypy_main(args=mypy_args)
        except SystemExit as done:
            report_then_exit(done.code if isinstance(done.code, int) else 2)
    report_then_exit(0)


class ChildRun:
    """One cold mypy run in a child: the child's wall and CPU seconds and the hook times it reported."""

    def __init__(self, configs: dict[str, Path], tmp: Path, targets: list[Path], plugin: bool,
                 base: dict[str, Path] | None = None) -> None:
        cache = tmp / "cache-child"
        shutil.rmtree(cache, ignore_errors=True)
        name = "plugin" if plugin else "plain"
        if base is not None:
            shutil.copytree(base[name], cache)
        config = configs[name]
        argv = [sys.executable, __file__, "--child", "--",
                "--config-file", str(config), "--cache-dir", str(cache), *map(str, targets)]
        sample = plugin_cost.run_child(argv)
        if sample.rc not in (0, 1):
            raise RuntimeError(sample.output[-3000:])
        lines = [line for line in sample.output.splitlines() if line.startswith(REPORT_TAG)]
        if not lines:
            raise RuntimeError(f"the child reported no hook times:\n{sample.output[-3000:]}")
        reported = json.loads(lines[-1].split(" ", 1)[1])
        self.wall, self.cpu = sample.wall, sample.cpu
        self.gc = reported.pop("gc", [0, 0.0])[1]
        self.calls: dict[str, int] = {kind: int(v[0]) for kind, v in reported.items()}
        self.seconds: dict[str, float] = {kind: float(v[1]) for kind, v in reported.items()}

    def net(self, overhead: float) -> dict[str, float]:
        """Seconds per kind without the timer's own ``overhead`` per call."""
        return {kind: max(0.0, self.seconds[kind] - overhead * self.calls[kind]) for kind in self.seconds}

    def timer_seconds(self, overhead: float) -> float:
        """What the timer itself added to the run."""
        return overhead * sum(self.calls.values())


# -- 1. hooks ----------------------------------------------------------------------


def section_hooks(configs: dict[str, Path], tmp: Path, targets: list[Path], overhead: float,
                  base: dict[str, Path] | None) -> None:
    plain = ChildRun(configs, tmp, targets, plugin=False, base=base)
    run = ChildRun(configs, tmp, targets, plugin=True, base=base)
    net = run.net(overhead)
    total = sum(net.values())
    cpu = run.cpu - run.timer_seconds(overhead)
    print(f"\n1. Hook time in one cold run: CPU {cpu:.2f} s (timer's own cost removed) against {plain.cpu:.2f} s "
          f"without the plugin ({cpu / plain.cpu:.2f}x); in the plugin's hooks {total:.2f} s ({total / cpu:.0%}); "
          f"the timer's own {overhead * 1e6:.2f} us per call subtracted; garbage collection {run.gc:.2f} s "
          f"({plain.gc:.2f} s without the plugin), counted in the hooks where it ran in them")
    print(f"{'kind':42} {'calls':>8} {'total s':>8} {'us/call':>8}")
    for kind in sorted(net, key=lambda k: -net[k]):
        print(f"{kind:42} {run.calls[kind]:8d} {net[kind]:8.3f} {net[kind] / run.calls[kind] * 1e6:8.1f}")
    print("('decide:' rows are the get_*_hook calls themselves, made by mypy for every call site, attribute and "
          "annotation it checks, in torch's code as in yours; the other rows are the hooks those return)")


# -- 2. cProfile -------------------------------------------------------------------


def section_cprofile(config: Path, tmp: Path, targets: list[Path], top: int, base: Path | None) -> None:
    from mypy import api

    cache = tmp / "cache-cprofile"
    shutil.rmtree(cache, ignore_errors=True)
    if base is not None:
        shutil.copytree(base, cache)
    profile = cProfile.Profile()
    profile.enable()
    _, err, status = api.run(["--config-file", str(config), "--cache-dir", str(cache), *map(str, targets)])
    profile.disable()
    if status not in (0, 1):
        raise RuntimeError(err)
    stats = pstats.Stats(profile)
    ours = [(func, data) for func, data in stats.stats.items()  # type: ignore[attr-defined]
            if "/spmd_mypy/" in func[0] or "/spmd_types/" in func[0]]
    own = sum(data[2] for _, data in ours)
    print(f"\n2. cProfile of one cold run: own time in spmd_mypy and spmd_types {own:.2f} s under the profiler; "
          f"top {top} by own time")
    print(f"{'function':64} {'calls':>9} {'own s':>7} {'cum s':>7}")
    for (path, line, name), (_, ncalls, tottime, cumtime, _) in sorted(ours, key=lambda item: -item[1][2])[:top]:
        where = f"{Path(path).parent.name}/{Path(path).name}:{line}({name})"
        print(f"{where:64} {ncalls:9d} {tottime:7.3f} {cumtime:7.3f}")


# -- 3. start-up -------------------------------------------------------------------

STARTUP = """
import time, mypy.main, mypy.build, mypy.plugin
t0 = time.perf_counter()
import spmd_mypy.plugin as p
t1 = time.perf_counter()
p._rules_fingerprint()
t2 = time.perf_counter()
import spmd_mypy.hooks
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def section_startup(config: Path, runs: int) -> None:
    imports, prints, hooks = [], [], []
    for run in range(runs + 1):  # the first run writes the bytecode
        out = subprocess.run([sys.executable, "-c", STARTUP], cwd=plugin_cost.CHECKOUT,
                             env=plugin_cost.child_env(),
                             capture_output=True, text=True, check=True)
        if run:
            a, b, c = map(float, out.stdout.split())
            imports.append(a * 1e3)
            prints.append(b * 1e3)
            hooks.append(c * 1e3)
    from mypy.options import Options

    from spmd_mypy.plugin import SpmdPlugin

    options = Options()
    options.config_file = str(config)
    plugin = SpmdPlugin(options)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        plugin.report_config_data(None)  # type: ignore[arg-type]
    per_call = (time.perf_counter() - start) / n * 1e6
    print(f"\n3. Start-up, {runs} fresh interpreters that have imported mypy already, bytecode cached: "
          f"import spmd_mypy.plugin median {statistics.median(imports):.1f} ms "
          f"[{min(imports):.1f}-{max(imports):.1f}], rules fingerprint median {statistics.median(prints):.1f} ms; "
          f"report_config_data {per_call:.1f} us per call (mypy calls it once per module); "
          f"import spmd_mypy.hooks and the rule core, paid at the first hook only, median "
          f"{statistics.median(hooks):.1f} ms [{min(hooks):.1f}-{max(hooks):.1f}]")


def main() -> None:
    if "--child" in sys.argv:  # internal: one timed mypy run, see child_main
        split = sys.argv.index("--")
        child_main(sys.argv[split + 1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=800)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--startup-runs", type=int, default=10)
    parser.add_argument("--sections", nargs="+", default=["hooks", "cprofile", "startup"],
                        choices=["hooks", "cprofile", "startup"])
    parser.add_argument("--quick", action="store_true", help="100 blocks, 3 start-up runs")
    parser.add_argument("--torch-cached", action="store_true",
                        help="start each run from a cache of the model's imports (torch, the stubs) instead of none")
    parser.add_argument("--commit", help="measure this commit's code (default: the working tree)")
    parser.add_argument("--compiled", action="store_true", help="the plugin and rule core compiled with mypyc "
                        "(tools/compiled.py): the hooks section then times compiled hooks; cProfile sees only the "
                        "modules left interpreted")
    args = parser.parse_args()
    if args.quick:
        args.blocks, args.startup_runs = 100, 3

    print(f"{plugin_cost.machine()}")
    tmp = Path(tempfile.mkdtemp(prefix="spmd-profile-"))
    try:
        print(plugin_cost.prepare_children(tmp, args.commit, args.compiled))
        # The in-process sections import the plugin from the snapshot, and mypy finds spmd_types from
        # the current directory, as the children do.
        sys.path.insert(0, str(plugin_cost.CHECKOUT))
        os.chdir(plugin_cost.CHECKOUT)
        configs = plugin_cost.write_configs(tmp)
        model = plugin_cost.generate_model(tmp, args.blocks, 25)
        print(f"workload: {model.name}, {model.files} files, {model.lines} lines")
        base = None
        if args.torch_cached:  # the model with no blocks has the same imports
            empty = plugin_cost.generate_model(tmp, 0, 25)
            base = {name: tmp / f"cache-base-{name}" for name in plugin_cost.CONFIGS}
            for name, cache in base.items():
                plugin_cost.run_mypy(configs[name], cache, empty.targets)
        ChildRun(configs, tmp, model.targets, plugin=True, base=base)  # untimed: page cache, bytecode
        overhead = timer_overhead()
        if "hooks" in args.sections:
            section_hooks(configs, tmp, model.targets, overhead, base)
        if "cprofile" in args.sections:
            section_cprofile(configs["plugin"], tmp, model.targets, args.top, base["plugin"] if base else None)
        if "startup" in args.sections:
            section_startup(configs["plugin"], args.startup_runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
