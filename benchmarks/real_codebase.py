"""What the mypy plugin costs on a real codebase: megatron-core, unannotated and after ``spmd-annotate``.

    python benchmarks/real_codebase.py            # all of megatron/core, 2 repeats: about 12 minutes on 2 cores
    python benchmarks/real_codebase.py --quick    # 1 repeat, 1 warm run
    python benchmarks/real_codebase.py --subset tensor_parallel transformer models/gpt

The installed megatron-core (``make setup`` installs it without its
dependencies) is copied into a temporary directory, with an empty
``megatron/__init__.py`` so that mypy maps its files to ``megatron.core.*``
(the installed ``megatron`` is a namespace package), and checked with and
without the plugin: the configurations, the snapshot of the code, the child
runner and the modes (cold, cold with torch cached, warm; both
configurations back to back, the order alternating) are those of
``benchmarks/plugin_cost.py``.  ``--subset`` checks only those folders or
files of ``megatron/core``; mypy still follows their imports into the rest of
the copy.

Then ``spmd-annotate --mesh tp=2`` runs Megatron's ``VocabParallelEmbedding``
feeding its ``MLP`` (a ``ColumnParallelLinear`` then a ``RowParallelLinear``,
as in ``tests/codemods/test_annotate_megatron.py``) on the copy, on token ids
declared ``I["tp"]``, and writes the types it observes into the copy's
``tensor_parallel/layers.py`` and ``transformer/mlp.py``; the copy is
measured again.

Reported: the timing table of ``plugin_cost.py`` (median wall seconds with the
spread, CPU seconds, ratios, peak RSS), and per stage the number of mypy's
errors with and without the plugin, with every error that one configuration
reports and the other does not.  On the unannotated code the plugin must add
no error: the script exits with status 1 if it does.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plugin_cost  # configurations, snapshot, child runner, modes and the timing table

# Run by spmd-annotate in the copy: Megatron's vocabulary-parallel embedding feeding its MLP (column- then
# row-parallel linear layers), on token ids the same on every rank.
ANNOTATE_RUN = '''\
import torch
from megatron.core.tensor_parallel.layers import ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding
from megatron.core.transformer.mlp import MLP, MLPSubmodules
from megatron.core.transformer.transformer_config import TransformerConfig

import spmd_types as spmd
from spmd_types import I


def run() -> None:
    tp = spmd.current_mesh().get_group("tp")
    config = TransformerConfig(num_layers=1, hidden_size=8, num_attention_heads=2, ffn_hidden_size=16,
                               tensor_model_parallel_size=spmd.axis_size("tp"), use_cpu_initialization=True,
                               perform_initialization=False, add_bias_linear=True)
    embedding = VocabParallelEmbedding(32, 8, init_method=torch.nn.init.zeros_, config=config, tp_group=tp)
    mlp = MLP(config, MLPSubmodules(linear_fc1=ColumnParallelLinear, linear_fc2=RowParallelLinear), tp_group=tp)
    mlp(embedding(spmd.assert_type(torch.randint(0, 32, (3, 2)), I["tp"])))
'''
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*)$")


def installed_megatron_core() -> Path:
    """The folder of the installed ``megatron.core``."""
    spec = importlib.util.find_spec("megatron.core")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("megatron-core is not installed (`make setup` installs it)")
    return Path(next(iter(spec.submodule_search_locations)))


def copy_megatron(where: Path, subset: list[str]) -> plugin_cost.Workload:
    """A copy of megatron-core under ``where``, and the workload that checks it (``subset`` of it, if given)."""
    core = where / "megatron" / "core"
    shutil.copytree(installed_megatron_core(), core, ignore=shutil.ignore_patterns("__pycache__"))
    (where / "megatron" / "__init__.py").write_text("")
    targets = [core / part for part in subset] if subset else [where / "megatron"]
    files = sorted(f for t in targets for f in ([t] if t.is_file() else t.rglob("*.py")))
    edit_file = core / "tensor_parallel" / "layers.py"  # the edit mode is not measured here
    return plugin_cost.Workload("megatron-core", targets, edit_file, ("", ""), None, len(files),
                                sum(len(f.read_text().splitlines()) for f in files))


def annotate(where: Path) -> str:
    """Run spmd-annotate on the copy under ``where``; what it wrote, in a line."""
    before = {f: f.read_text() for f in (where / "megatron").rglob("*.py")}
    (where / "_annotate_run.py").write_text(ANNOTATE_RUN)
    run = subprocess.run([sys.executable, "-W", "ignore", "-m", "spmd_types.codemods.annotate", "--mesh", "tp=2",
                          "--root", str(where / "megatron"), "_annotate_run.py:run"],
                         cwd=where, env=plugin_cost.child_env(), capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"spmd-annotate failed:\n{run.stdout}\n{run.stderr}")
    changed = {f: text for f, text in before.items() if f.read_text() != text}
    added = sum(f.read_text().count("Annotated[") - text.count("Annotated[") for f, text in changed.items())
    notes = [line for line in run.stderr.splitlines() if line.strip()]
    return (f"spmd-annotate wrote {added} annotations into {', '.join(str(f.relative_to(where)) for f in changed)}; "
            f"{len(notes)} left unwritten: {'; '.join(notes) or '-'}")


def errors(output: str, root: Path) -> Counter[str]:
    """mypy's errors in ``output``, with paths relative to ``root``."""
    found = (ERROR.match(line.replace(f"{root}/", "")) for line in output.splitlines())
    return Counter(m.group(0) for m in found if m is not None)


def _place(error: str) -> str:
    """``path:line`` and the error code of ``error``: the same error, whatever types its message prints."""
    return f"{error.split(': error: ')[0]} {error.rsplit('  [', 1)[-1] if error.endswith(']') else ''}"


def compare_errors(stage: str, cell: plugin_cost.Cell, root: Path) -> Counter[str]:
    """Print how the errors of the first cold run differ between the configurations; return the plugin's new ones.

    An error of one configuration whose place (file, line and code) has an
    error in the other too is the same error with its types printed
    differently (``SpmdTensor[...]`` for ``Tensor``); the others are errors
    that only one configuration reports.
    """
    plain, plugin = (errors(cell.samples[c][0].output, root) for c in plugin_cost.CONFIGS)
    only_plugin, only_plain = plugin - plain, plain - plugin
    places = {c: Counter(map(_place, found.elements())) for c, found in (("plain", plain), ("plugin", plugin))}
    added = Counter({e: n for e, n in only_plugin.items() if places["plugin"][_place(e)] > places["plain"][_place(e)]})
    removed = Counter({e: n for e, n in only_plain.items() if places["plain"][_place(e)] > places["plugin"][_place(e)]})
    reworded = (only_plugin - added).total()
    print(f"\n{stage}: mypy errors without the plugin {plain.total()}, with it {plugin.total()}; "
          f"only with the plugin {added.total()}, only without it {removed.total()}, "
          f"{reworded} the same with other types printed")
    for label, which in (("only with the plugin", added), ("only without it", removed),
                         ("printed differently with the plugin", only_plugin - added)):
        for line in sorted(which.elements()):
            print(f"  {label}: {line}")
    return added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", nargs="+", default=[], metavar="PATH",
                        help="folders or files of megatron/core to check (default: all of it)")
    parser.add_argument("--repeats", type=int, default=2, help="cold runs per configuration and stage")
    parser.add_argument("--warm-repeats", type=int, default=2, help="warm runs after each cold run")
    parser.add_argument("--no-annotate", action="store_true", help="measure the unannotated code only")
    parser.add_argument("--quick", action="store_true", help="one repeat, one warm run")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    parser.add_argument("--commit", help="measure this commit's plugin (default: the working tree)")
    args = parser.parse_args(argv)
    missing = [part for part in args.subset if not (installed_megatron_core() / part).exists()]
    if missing:
        parser.error(f"not in megatron/core: {', '.join(missing)}")
    if args.quick:
        args.repeats, args.warm_repeats = 1, 1

    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    print(plugin_cost.machine())
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="spmd-real-codebase-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        print(plugin_cost.prepare_children(tmp, args.commit))
        configs = plugin_cost.write_configs(tmp)
        base = plugin_cost.generate_model(tmp, 0, 1)
        for config in plugin_cost.CONFIGS:  # the caches "cold, torch cached" starts from
            plugin_cost.run_mypy(configs[config], tmp / f"cache-base-{config}", base.targets)
        workload = copy_megatron(tmp / "copy", args.subset)
        print(f"megatron-core {workload.files} files, {workload.lines} lines checked"
              f"{' (' + ', '.join(args.subset) + ')' if args.subset else ''}")
        rows: list[tuple[str, str, plugin_cost.Cell]] = []
        stages = ["unannotated"] if args.no_annotate else ["unannotated", "annotated"]
        false_positives: Counter[str] = Counter()
        for stage in stages:
            if stage == "annotated":
                print(annotate(tmp / "copy"))
                workload.name = "megatron-core-annotated"  # its own caches
            cells = plugin_cost.measure_batch(workload, configs, tmp, args.repeats, args.warm_repeats, False, log)
            rows += [(f"megatron-core, {stage}", mode, cell) for mode, cell in cells.items()]
            added = compare_errors(stage, cells["cold"], tmp / "copy")
            if stage == "unannotated":
                false_positives = added
        print(f"\nmypy with the plugin vs without it; {args.repeats} repeats ({args.warm_repeats} warm runs after "
              "each cold one); wall seconds as median [min-max]")
        plugin_cost.print_table(rows)
        print(f"\ntotal benchmark time {time.perf_counter() - started:.0f} s")
        if false_positives:
            print(f"\nFAILED: the plugin reports {false_positives.total()} errors on unannotated code (see above)")
        return 1 if false_positives else 0
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
