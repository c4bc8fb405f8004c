"""What the mypy plugin costs: mypy with and without ``plugins = spmd_mypy.plugin``.

    python benchmarks/plugin_cost.py                 # defaults: about 5 minutes on 2 cores
    python benchmarks/plugin_cost.py --quick         # smoke run, about 1 minute

Both configurations are the recommended one (``spmd-check --print-config
--skip-torch-internals``, from this checkout) with ``mypy_path`` pointing at this
checkout's stubs; "plain" drops the ``plugins =`` line (the annotations are then
ordinary ``Annotated`` metadata), nothing else differs.  mypy runs as a child
process in a snapshot of the checkout taken at the start (``prepare_children``),
so the plugin and ``spmd_types`` are importable without installing anything and
concurrent edits to the checkout do not disturb the run.

Workloads:

* ``examples``: the annotated example programs in ``examples/`` if that
  directory exists, otherwise the plugin's test cases ``tests/plugin/cases/*.py``
  (copied to a temporary directory first: this script never edits the checkout);
* ``model-N``: a generated package of N transformer blocks (Megatron tensor
  parallel on ``tp``, sequence parallel between blocks, data parallel on
  ``dp``), ``--blocks-per-module`` blocks per module, one ``Stage`` module
  chaining each module's blocks and a ``model`` module chaining the stages.
  Every block has six annotated ``nn.Parameter`` weights, an annotated
  ``forward``, ``attention`` and ``mlp``, and eight collectives or casts; the
  plugin reports no error on it.  ``model-0`` (the same imports, no blocks) is
  the baseline for the per-block cost.

Modes, each measured for both configurations back to back (the order
alternates between repeats, so drift hits both alike):

* ``cold``: empty cache directory (torch is analysed from scratch);
* ``cold, torch cached``: a copy of a cache in which mypy has checked
  ``model-0`` (torch, the stubs and the standard library are in it), so that
  only the workload's own modules are analysed from scratch: the cost of the
  annotated code without the constant cost of torch, and so a far less noisy
  measure of the per-block cost;
* ``warm``: the cache of the previous cold run, nothing changed
  (``--warm-repeats`` runs after each cold run: a warm run is short, so noisy);
* ``edit``: the warm cache, after a one-line edit in one module (plain
  incremental mypy);
* ``daemon``: ``dmypy check`` after the same kind of one-line edit, with one
  daemon per configuration kept running (the first check is reported too).
  ``edit`` and ``daemon`` run on ``examples`` and on the largest model only
  (``--edit-every-size`` for all).

The one-line edit flips ``eps = 1e-6``/``1e-5`` inside the first block's
``forward`` (models) or the value of a trailing ``_edit = 0``/``1`` line
appended to the first file (examples); neither changes a module interface.

Reported per cell: median wall-clock seconds, the spread (min-max) over the
repeats, median CPU seconds (user + sys of the mypy process, from
``os.wait4``: less sensitive to other load than wall-clock), and peak RSS
(``ru_maxrss`` of the mypy process; for the daemon, ``VmHWM`` of the daemon
process).  Ratios are medians of the per-repeat ratios plugin/plain, each pair
measured back to back.
"""

from __future__ import annotations

import argparse
import configparser
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import _shared

from spmd_mypy import recommended

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("plain", "plugin")
# What mypy's children need from the checkout (the plugin's test cases stand in where examples/ is missing).
SNAPSHOT_PATHS = ("spmd_mypy", "spmd_types", "stubs", "examples", "tests/plugin/cases")

# Set by prepare_children: where the children import the plugin from and run, and their bytecode cache.
CHECKOUT = ROOT
PYCACHE: Path | None = None


def prepare_children(where: Path, commit: str | None = None, compiled: bool = False) -> str:
    """Snapshot the code into ``where`` for every later child; say which code that is.

    The snapshot is of the working tree, or of ``commit`` (``git archive``)
    when given.  The children then import the plugin and check the examples
    from it, so that edits to the checkout during a run change neither the
    code measured nor mypy's caches (the plugin's part of the cache key hashes
    its own and the rule core's sources).  Their bytecode goes to
    ``where/pycache``.  ``compiled``: the snapshot's plugin and rule core are
    then compiled with mypyc (``tools.compiled``; a few minutes).
    """
    described = _snapshot(where, commit)
    if not compiled:
        return described
    from tools import compiled as compiled_build

    compiled_build.compile_in(CHECKOUT)
    return f"{described}, compiled with mypyc"


def _snapshot(where: Path, commit: str | None) -> str:
    global CHECKOUT, PYCACHE
    CHECKOUT, PYCACHE = where / "checkout", where / "pycache"
    CHECKOUT.mkdir(parents=True, exist_ok=True)
    git = ["git", "-C", str(ROOT)]
    if commit is not None:
        rev = subprocess.run([*git, "rev-parse", "--short", commit], capture_output=True, text=True, check=True)
        tracked = subprocess.run([*git, "ls-tree", "--name-only", commit, "--", *SNAPSHOT_PATHS],
                                 capture_output=True, text=True, check=True).stdout.split()
        archive = subprocess.run([*git, "archive", commit, "--", *tracked], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(CHECKOUT)], input=archive.stdout, check=True)
        return f"code: commit {rev.stdout.strip()} (git archive)"
    for name in SNAPSHOT_PATHS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, CHECKOUT / name, ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"),
                            dirs_exist_ok=True)
        elif source.exists():
            (CHECKOUT / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, CHECKOUT / name)
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--", *SNAPSHOT_PATHS], capture_output=True,
                           text=True).stdout.strip()
    return f"code: working tree at commit {head or '?'}{' with uncommitted changes' if dirty else ''}"

# -- configurations ----------------------------------------------------------------


def config_text(plugin: bool, skip_torch: bool = True) -> str:
    """The recommended configuration with the snapshot's stubs; without ``plugins =`` when not ``plugin``.

    ``skip_torch`` adds the section that skips torch's heavy subpackages
    (``spmd-check --print-config --skip-torch-internals``).
    """
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(recommended.render("ini", skip_torch_internals=skip_torch))
    parser["mypy"]["mypy_path"] = str(CHECKOUT / "stubs")
    if not plugin:
        parser["mypy"].pop("plugins", None)
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def write_configs(where: Path, skip_torch: bool = True) -> dict[str, Path]:
    paths = {}
    for name in CONFIGS:
        path = where / f"{name}{'' if skip_torch else '-noskip'}.ini"
        path.write_text(config_text(name == "plugin", skip_torch))
        paths[name] = path
    return paths


# -- running mypy ------------------------------------------------------------------


@dataclass
class Sample:
    wall: float  # seconds
    cpu: float  # user + sys seconds of the child
    rss_mb: float  # peak resident set of the child
    rc: int
    output: str


def child_env() -> dict[str, str]:
    """The environment of every mypy child: ``CHECKOUT`` importable, bytecode caching on.

    With ``PYTHONDONTWRITEBYTECODE`` set (as in some CI images) every mypy run
    would compile the plugin's and the rule core's sources again, about 25 ms
    that an installed package (whose bytecode pip writes) never pays; the
    children write their bytecode under ``PYCACHE`` instead.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), env.get("PYTHONPATH")]))
    env.pop("MYPY_CACHE_DIR", None)
    if PYCACHE is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def run_child(argv: list[str], timeout: float | None = None) -> Sample:
    """Run ``argv`` in ``CHECKOUT``; wall, CPU and peak RSS of that one child.

    Past ``timeout`` seconds the child is killed and ``rc`` is -9.
    """
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=CHECKOUT, env=child_env(), stdout=out, stderr=subprocess.STDOUT)
        timer = threading.Timer(timeout, proc.kill) if timeout is not None else None
        if timer is not None:
            timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        if timer is not None:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, text)


def mypy_argv(config: Path, cache: Path, targets: list[Path]) -> list[str]:
    return [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache),
            "--no-error-summary", *map(str, targets)]


def run_mypy(config: Path, cache: Path, targets: list[Path]) -> Sample:
    sample = run_child(mypy_argv(config, cache, targets))
    if sample.rc not in (0, 1):  # 1: type errors (the test cases have them on purpose)
        raise RuntimeError(f"mypy failed (exit {sample.rc}):\n{sample.output[-3000:]}")
    return sample


# The phases dmypy times in an incremental check that follows imports (they add up to its total).
FG_PHASES = ("find_changes_time", "fg_update_time", "refresh_suppressed_time", "find_added_suppressed_time",
             "cleanup_time")


class Daemon:
    """One ``dmypy`` daemon with its own status file, cache and configuration."""

    def __init__(self, where: Path, config: Path, name: str) -> None:
        self.status = where / f"{name}.dmypy.json"
        self.cache = where / f"{name}.dmypy-cache"
        self.log = where / f"{name}.dmypy.log"
        self.config = config
        self.perf = where / f"{name}.perf.json"
        self.last_stats: dict[str, object] = {}

    def client(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "mypy.dmypy", "--status-file", str(self.status), *args]

    def start(self) -> None:
        sample = run_child(self.client("start", "--log-file", str(self.log), "--",
                                       "--config-file", str(self.config), "--cache-dir", str(self.cache),
                                       "--no-error-summary"))
        if sample.rc != 0:
            raise RuntimeError(f"dmypy start failed:\n{sample.output}")

    def check(self, targets: list[Path], timeout: float) -> tuple[Sample, float | None]:
        """Client wall/CPU of one ``dmypy check``, and the server's own total seconds if it says.

        ``rc`` is -9 when the check ran past ``timeout`` (the daemon is then killed) and 2
        when the daemon crashed.
        """
        self.perf.unlink(missing_ok=True)
        sample = run_child(self.client("check", "--perf-stats-file", str(self.perf), *map(str, targets)), timeout)
        if sample.rc not in (0, 1):
            self.kill()
            return sample, None
        return sample, self.server_seconds()

    def server_seconds(self) -> float | None:
        """The daemon's own seconds for the last incremental check: the sum of the phases it times."""
        try:
            stats = json.loads(self.perf.read_text())
        except (OSError, ValueError):
            return None
        self.last_stats = stats
        if "fg_update_time" not in stats:
            return None
        return sum(float(stats.get(k, 0.0)) for k in FG_PHASES)

    def kill(self) -> None:
        subprocess.run(self.client("kill"), cwd=CHECKOUT, env=child_env(), capture_output=True, check=False)
        self.status.unlink(missing_ok=True)

    def peak_rss_mb(self) -> float:
        pid = json.loads(self.status.read_text())["pid"]
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        if self.status.exists():
            subprocess.run(self.client("stop"), cwd=CHECKOUT, env=child_env(), capture_output=True, check=False)


# -- workloads ---------------------------------------------------------------------

BLOCK = '''

class Block{k}(nn.Module):
    """Transformer block {k}: tensor parallel on "tp", sequence parallel between blocks."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm1: Annotated[nn.Parameter, R["dp"], I["tp"]] = nn.Parameter(torch.ones(dim))
        self.w_qkv: Annotated[nn.Parameter, R["dp"], V["tp"]] = nn.Parameter(torch.empty(3 * hidden, dim))
        self.w_out: Annotated[nn.Parameter, R["dp"], V["tp"]] = nn.Parameter(torch.empty(dim, hidden))
        self.norm2: Annotated[nn.Parameter, R["dp"], I["tp"]] = nn.Parameter(torch.ones(dim))
        self.w_up: Annotated[nn.Parameter, R["dp"], V["tp"]] = nn.Parameter(torch.empty(4 * hidden, dim))
        self.w_down: Annotated[nn.Parameter, R["dp"], V["tp"]] = nn.Parameter(torch.empty(dim, 4 * hidden))

    def attention(self, x: Annotated[Tensor, V["dp"], R["tp"]]) -> Annotated[Tensor, V["dp"], P["tp"]]:
        q, k, v = F.linear(x, self.w_qkv).chunk(3, dim=-1)
        scores = torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1)
        out = F.linear(scores @ v, self.w_out)
        return reinterpret(out, "tp", src=V, dst=P)

    def mlp(self, x: Annotated[Tensor, V["dp"], R["tp"]]) -> Annotated[Tensor, V["dp"], P["tp"]]:
        h = F.gelu(F.linear(x, self.w_up))
        return reinterpret(F.linear(h, self.w_down), "tp", src=V, dst=P)

    def forward(self, x: Annotated[Tensor, V["dp"], S["tp", 1]]) -> Annotated[Tensor, V["dp"], S["tp", 1]]:
        eps = 1e-6
        g1 = convert(self.norm1, "tp", src=I, dst=R)
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g1
        full = all_gather(h, "tp", src=S(1), dst=R)
        x = x + reduce_scatter(self.attention(full), "tp", src=P, dst=S(1))
        g2 = convert(self.norm2, "tp", src=I, dst=R)
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g2
        full = all_gather(h, "tp", src=S(1), dst=R)
        return x + reduce_scatter(self.mlp(full), "tp", src=P, dst=S(1))
'''

STAGE_HEAD = '''"""Generated stage {m} of a tensor- and sequence-parallel transformer."""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from spmd_types import I, P, R, S, V, all_gather, convert, reduce_scatter, reinterpret
'''

CHAIN = '''

class {name}(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
{inits}

    def forward(self, x: Annotated[Tensor, V["dp"], S["tp", 1]]) -> Annotated[Tensor, V["dp"], S["tp", 1]]:
{calls}
        return x
'''

MODEL_HEAD = '''"""Generated model: {n} blocks in {stages} stages."""
from typing import Annotated

import torch
from torch import Tensor, nn

import spmd_types
from spmd_types import S, V
{imports}'''


def chain(name: str, children: dict[str, str]) -> str:
    """A module ``name`` whose forward runs its ``children`` (attribute -> class) in order."""
    inits = "\n".join(f"        self.{attr} = {cls}(dim, hidden)" for attr, cls in children.items())
    calls = "\n".join(f"        x = self.{attr}(x)" for attr in children)
    return CHAIN.format(name=name, inits=inits or "        pass", calls=calls)


EDIT_LINE = ("        eps = 1e-6\n", "        eps = 1e-5\n")


@dataclass
class Workload:
    name: str
    targets: list[Path]  # what mypy is given
    edit_file: Path
    edit_lines: tuple[str, str]
    blocks: int | None = None  # model size
    files: int = 0
    lines: int = 0
    _state: int = field(default=0)

    def edit(self) -> None:
        """Flip the edit line: a one-line change that keeps every module interface."""
        text = self.edit_file.read_text()
        old, new = self.edit_lines[self._state], self.edit_lines[1 - self._state]
        if old not in text:
            raise RuntimeError(f"{self.edit_file}: edit line {old!r} not found")
        self.edit_file.write_text(text.replace(old, new, 1))
        self._state = 1 - self._state


def generate_model(where: Path, blocks: int, per_module: int) -> Workload:
    package = where / f"model{blocks}"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    stages = []
    for m in range(max(1, -(-blocks // per_module))):
        ks = range(m * per_module, min(blocks, (m + 1) * per_module))
        text = STAGE_HEAD.format(m=m) + "".join(BLOCK.format(k=k) for k in ks)
        text += chain(f"Stage{m}", {f"b{k}": f"Block{k}" for k in ks})
        (package / f"stage{m}.py").write_text(text)
        stages.append(m)
    imports = "".join(f"from .stage{m} import Stage{m}\n" for m in stages)
    (package / "model.py").write_text(MODEL_HEAD.format(n=blocks, stages=len(stages), imports=imports)
                                      + chain("Model", {f"s{m}": f"Stage{m}" for m in stages}))
    files = sorted(package.glob("*.py"))
    edit_file = package / "stage0.py"
    if blocks == 0:  # no block to edit: give the empty stage an edit line
        edited = "\n\ndef _edited() -> float:\n" + EDIT_LINE[0] + "        return eps\n"
        edit_file.write_text(edit_file.read_text() + edited)
    return Workload(f"model-{blocks}", [package], edit_file, EDIT_LINE, blocks, len(files),
                    sum(len(f.read_text().splitlines()) for f in files))


def example_workload(where: Path) -> Workload:
    """``examples/`` (copied under its own name: its modules import ``examples.*``), else the plugin's cases."""
    source = CHECKOUT / "examples"
    label = "examples"
    if not source.is_dir() or not any(source.rglob("*.py")):
        source, label = CHECKOUT / "tests" / "plugin" / "cases", "tests/plugin/cases"
    copy = where / "workload-examples" / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"))
    files = sorted(copy.rglob("*.py"))
    annotated = [f for f in files if f.name != "__init__.py" and "Annotated[" in f.read_text()]
    edit_file = (annotated or files)[0]
    edit_file.write_text(edit_file.read_text().rstrip("\n") + "\n_edit = 0\n")
    targets = [copy] if (copy / "__init__.py").exists() else files
    return Workload(f"{label} ({len(files)} files)", targets, edit_file, ("_edit = 0\n", "_edit = 1\n"), None,
                    len(files), sum(len(f.read_text().splitlines()) for f in files))


# -- measuring ---------------------------------------------------------------------


@dataclass
class Cell:
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {c: [] for c in CONFIGS})
    server: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CONFIGS})
    rss_override: dict[str, float] = field(default_factory=dict)  # daemon VmHWM
    failures: dict[str, list[str]] = field(default_factory=lambda: {c: [] for c in CONFIGS})

    def add(self, config: str, sample: Sample, server: float | None = None) -> None:
        if sample.rc in (0, 1):
            self.samples[config].append(sample)
            if server is not None:
                self.server[config].append(server)
        else:
            if sample.rc == -9:
                why = "timed out"
            else:
                why = "daemon crashed" if "crashed" in sample.output else f"exit {sample.rc}"
            self.failures[config].append(f"{why} after {sample.wall:.0f} s")

    def wall(self, config: str) -> list[float]:
        return [s.wall for s in self.samples[config]]

    def cpu(self, config: str) -> list[float]:
        return [s.cpu for s in self.samples[config]]

    def rss(self, config: str) -> float:
        if config in self.rss_override:
            return self.rss_override[config]
        return max((s.rss_mb for s in self.samples[config]), default=float("nan"))

    def ratio(self, metric: str = "wall") -> float:
        pairs = zip(self.samples["plain"], self.samples["plugin"])
        return statistics.median(getattr(b, metric) / getattr(a, metric) for a, b in pairs)


def ordered(rep: int) -> tuple[str, ...]:
    return CONFIGS if rep % 2 == 0 else CONFIGS[::-1]


def measure_batch(workload: Workload, configs: dict[str, Path], tmp: Path, repeats: int, warm_repeats: int,
                  edits: bool, log) -> dict[str, Cell]:  # type: ignore[no-untyped-def]
    """Cold, torch-cached cold, warm and (if ``edits``) edit runs of both configurations.

    ``tmp / "cache-base-<config>"`` must hold the cache of a check of ``model-0``.
    """
    cells = {mode: Cell() for mode in ("cold", "cold, torch cached", "warm", "edit")}
    caches = {c: tmp / f"cache-{workload.name.split()[0].replace('/', '_')}-{c}" for c in CONFIGS}
    for rep in range(repeats):
        for config in ordered(rep):
            shutil.rmtree(caches[config], ignore_errors=True)
            shutil.copytree(tmp / f"cache-base-{config}", caches[config])
            cells["cold, torch cached"].samples[config].append(
                run_mypy(configs[config], caches[config], workload.targets))
        for config in ordered(rep + 1):
            shutil.rmtree(caches[config], ignore_errors=True)
            cells["cold"].samples[config].append(run_mypy(configs[config], caches[config], workload.targets))
        for warm in range(warm_repeats):
            for config in ordered(rep + warm + 1):
                cells["warm"].samples[config].append(run_mypy(configs[config], caches[config], workload.targets))
        log(f"  {workload.name}: repeat {rep + 1}/{repeats} cold+warm done")
    if edits:
        for rep in range(repeats):
            workload.edit()  # each cache is then exactly one edit behind
            for config in ordered(rep):
                cells["edit"].samples[config].append(run_mypy(configs[config], caches[config], workload.targets))
        log(f"  {workload.name}: edit done")
    return cells


def measure_daemon(workload: Workload, configs: dict[str, Path], tmp: Path, edits: int, timeout: float,
                   log) -> dict[str, Cell]:  # type: ignore[no-untyped-def]
    first, recheck = Cell(), Cell()
    tag = workload.name.split()[0].replace("/", "_")
    daemons = {c: Daemon(tmp, configs[c], f"{tag}-{c}") for c in CONFIGS}
    alive = set(CONFIGS)
    try:
        for config in CONFIGS:
            daemons[config].start()
            sample, server = daemons[config].check(workload.targets, timeout)
            first.add(config, sample, server)
            if sample.rc not in (0, 1):
                alive.discard(config)
        for rep in range(edits):
            workload.edit()
            for config in ordered(rep):
                if config not in alive:
                    continue
                sample, server = daemons[config].check(workload.targets, timeout)
                recheck.add(config, sample, server)
                if sample.rc not in (0, 1):
                    alive.discard(config)
        for config in alive:
            first.rss_override[config] = recheck.rss_override[config] = daemons[config].peak_rss_mb()
    finally:
        for daemon in daemons.values():
            daemon.stop()
    log(f"  {workload.name}: daemon done")
    return {"daemon first check": first, "daemon edit": recheck}


# -- reporting ---------------------------------------------------------------------


def fmt_spread(values: list[float]) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.2f}"
    return f"{med:.2f} [{min(values):.2f}-{max(values):.2f}]"


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_table(rows: list[tuple[str, str, Cell]]) -> None:
    header = (f"{'workload':30} {'mode':19} {'plain wall s':>21} {'plugin wall s':>21} {'ratio':>6} "
              f"{'plain cpu':>9} {'plugin cpu':>10} {'ratio':>6} {'plain MB':>8} {'plugin MB':>9}")
    print(header)
    print("-" * len(header))
    for workload, mode, cell in rows:
        if not any(cell.samples.values()) and not any(cell.failures.values()):
            continue
        paired = len(cell.samples["plain"]) == len(cell.samples["plugin"]) > 0
        wall_ratio = f"{cell.ratio('wall'):6.2f}" if paired else f"{'-':>6}"
        cpu_ratio = f"{cell.ratio('cpu'):6.2f}" if paired else f"{'-':>6}"
        if mode.startswith("daemon"):  # the client's CPU says nothing; the daemon's time is reported below
            cpu = f"{'-':>9} {'-':>10} {'-':>6}"
        else:
            cpu = f"{_median(cell.cpu('plain')):9.2f} {_median(cell.cpu('plugin')):10.2f} {cpu_ratio}"
        print(f"{workload:30} {mode:19} {fmt_spread(cell.wall('plain')):>21} {fmt_spread(cell.wall('plugin')):>21} "
              f"{wall_ratio} {cpu} {cell.rss('plain'):8.0f} {cell.rss('plugin'):9.0f}")
        for config, failed in cell.failures.items():
            if failed:
                print(f"{'':30} {'':19} {config} FAILED: {'; '.join(failed)}")


def print_scaling(models: list[Workload], cold: dict[str, Cell], mode: str) -> None:
    """Per-block cost in ``mode``: against model-0 (average) and against the next smaller model (marginal)."""
    base = next((w for w in models if w.blocks == 0), None)
    if base is None:
        return
    print(f"\nPer-block cost, {mode}, from median CPU seconds: 'average' = (model-N - model-0) / N, "
          "'marginal' = (model-N - previous model) / (N - previous N):")
    header = (f"{'model':10} {'files':>5} {'lines':>6} {'plain avg ms':>12} {'plugin avg ms':>13} "
              f"{'extra avg ms':>12} {'plain marg ms':>13} {'plugin marg ms':>14} {'plugin avg vs smallest':>22}")
    print(header)
    print("-" * len(header))
    cpu = {w.name: {c: statistics.median(cold[w.name].cpu(c)) for c in CONFIGS} for w in models}
    first = None
    previous = base
    for w in models:
        if not w.blocks:
            continue
        avg = {c: (cpu[w.name][c] - cpu[base.name][c]) / w.blocks * 1e3 for c in CONFIGS}
        marg = {c: (cpu[w.name][c] - cpu[previous.name][c]) / (w.blocks - (previous.blocks or 0)) * 1e3
                for c in CONFIGS}
        first = avg["plugin"] if first is None else first
        print(f"{w.name:10} {w.files:5d} {w.lines:6d} {avg['plain']:12.2f} {avg['plugin']:13.2f} "
              f"{avg['plugin'] - avg['plain']:12.2f} {marg['plain']:13.2f} {marg['plugin']:14.2f} "
              f"{avg['plugin'] / first:21.2f}x")
        previous = w


def machine() -> str:
    """The machine, mypy's version and the load average, for the head of a report."""
    import mypy.version

    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return (f"{_shared.machine()}, mypy {mypy.version.__version__}, "
            f"load average at start {load[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 800], help="model sizes in blocks")
    parser.add_argument("--repeats", type=int, default=3, help="cold/edit runs per configuration")
    parser.add_argument("--warm-repeats", type=int, default=5, help="warm runs after each cold run")
    parser.add_argument("--daemon-edits", type=int, default=5, help="one-line edits rechecked by each daemon")
    parser.add_argument("--blocks-per-module", type=int, default=25)
    parser.add_argument("--edit-every-size", action="store_true", help="edit and daemon modes for every model size")
    parser.add_argument("--no-daemon", action="store_true")
    parser.add_argument("--daemon-config", choices=("no-skip", "skip"), default="no-skip",
                        help="daemon configuration: without the torch-skipping section (default, and what "
                        "mypy.ini.example is; dmypy mishandles per-module follow_imports=skip after the first "
                        "check) or with it, as the one-shot runs")
    parser.add_argument("--daemon-timeout", type=float, default=120, help="seconds before a daemon check is abandoned")
    parser.add_argument("--no-examples", action="store_true")
    parser.add_argument("--quick", action="store_true", help="sizes 10 40, one repeat, two warm runs and "
                        "two daemon edits")
    parser.add_argument("--keep", type=Path, help="generate into this directory and keep it")
    parser.add_argument("--commit", help="measure this commit's code (default: the working tree)")
    parser.add_argument("--compiled", action="store_true", help="measure the plugin and rule core compiled with "
                        "mypyc (tools/compiled.py; the build adds a few minutes)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeats, args.warm_repeats, args.daemon_edits = [10, 40], 1, 2, 2

    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    print(machine())
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="spmd-plugin-cost-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        print(prepare_children(tmp, args.commit, args.compiled))
        configs = write_configs(tmp)
        daemon_configs = write_configs(tmp, skip_torch=args.daemon_config == "skip")
        workloads: list[Workload] = [] if args.no_examples else [example_workload(tmp)]
        models = [generate_model(tmp, n, args.blocks_per_module) for n in sorted({0, *args.sizes})]
        workloads += models
        largest = max(models, key=lambda w: w.blocks or 0)
        # The base caches for "cold, torch cached"; these untimed runs also bring torch's sources
        # into the page cache and write the children's bytecode.
        for config in CONFIGS:
            run_mypy(configs[config], tmp / f"cache-base-{config}", models[0].targets)
        for config in CONFIGS:  # the generated models must be clean, or the timings mean little
            found = run_mypy(configs[config], tmp / f"cache-sanity-{config}", largest.targets)
            if found.rc != 0:
                raise RuntimeError(f"generated model is not clean under {config}:\n{found.output[-2000:]}")
            shutil.rmtree(tmp / f"cache-sanity-{config}", ignore_errors=True)

        rows: list[tuple[str, str, Cell]] = []
        scaling: dict[str, dict[str, Cell]] = {"cold": {}, "cold, torch cached": {}}
        for workload in workloads:
            edits = args.edit_every_size or workload is largest or workload.blocks is None
            cells = measure_batch(workload, configs, tmp, args.repeats, args.warm_repeats, edits, log)
            for mode, by_workload in scaling.items():
                by_workload[workload.name] = cells[mode]
            if edits and not args.no_daemon:
                cells.update(measure_daemon(workload, daemon_configs, tmp, args.daemon_edits, args.daemon_timeout,
                                            log))
            rows += [(workload.name, mode, cell) for mode, cell in cells.items()]

        print(f"\n{'workload':30} {'files':>5} {'lines':>6}")
        for w in workloads:
            print(f"{w.name:30} {w.files:5d} {w.lines:6d}")
        print(f"\nmypy with the plugin vs without it; {args.repeats} repeats ({args.warm_repeats} warm runs after each "
              f"cold one, {args.daemon_edits} daemon edits); "
              f"wall seconds as median [min-max]; daemon configuration: {args.daemon_config}")
        print_table(rows)
        daemon_rows = [(w, c) for w, m, c in rows if m == "daemon edit" and c.server["plugin"]]
        if daemon_rows:
            print("\nDaemon recheck after a one-line edit, server-side seconds (dmypy --perf-stats-file), "
                  "median [min-max]:")
            for w, c in daemon_rows:
                print(f"  {w:30} plain {fmt_spread(c.server['plain'])}   plugin {fmt_spread(c.server['plugin'])}")
        for mode, by_workload in scaling.items():
            print_scaling(models, by_workload, mode)
        print(f"\ntotal benchmark time {time.perf_counter() - started:.0f} s, load average at end "
              f"{os.getloadavg()[0]:.2f}")
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
