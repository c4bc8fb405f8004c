"""What the torch-skipping section of the recommended configuration saves, and that it keeps the public types.

    python benchmarks/torch_skip.py            # 5 cold runs of each configuration; about 2 minutes
    python benchmarks/torch_skip.py --quick    # 1 run each

Two configurations, both with the plugin and the stubs, on a snapshot of the
code (the working tree, or ``--commit``), as in ``benchmarks/plugin_cost.py``:
``skip`` is the recommended configuration with its ``follow_imports = skip``
section for torch's subpackages, ``full`` is the same without it (what
``mypy.ini.example`` is), so that mypy analyses all of torch that the code reaches.

* Cost: cold runs (empty cache) on the annotated examples (``examples/``,
  copied to a temporary directory), both configurations back to back, the
  order alternating between repeats.  Reported: median wall and CPU seconds,
  the spread, the peak RSS, and the saving.
* Types kept: a probe module ``reveal_type``s ``Tensor`` arithmetic and
  methods, ``torch.nn.functional`` and ``torch`` functions, ``ProcessGroup``
  and ``DeviceMesh``.  Under both configurations each must reveal the same
  type, and none may be ``Any``.  The examples' diagnostics (the buggy twins
  have errors on purpose) must be the same too.

Exits with status 1 if a type or a diagnostic differs or a probe reveals
``Any``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plugin_cost  # configurations and the child runner

PROBE = '''\
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.distributed import ProcessGroup
from torch.distributed.device_mesh import DeviceMesh

from spmd_types import P, R, all_reduce


def probe(x: Tensor, w: nn.Parameter, pg: ProcessGroup, mesh: DeviceMesh, p: Annotated[Tensor, P["tp"]]) -> None:
    reveal_type(x @ x + 1)
    reveal_type(x.chunk(3, dim=-1))
    reveal_type(x.sum().item())
    reveal_type(F.linear(x, w))
    reveal_type(F.gelu(x))
    reveal_type(F.cross_entropy(x, x))
    reveal_type(torch.softmax(x, dim=-1))
    reveal_type(torch.cat([x, x]))
    reveal_type(pg.size())
    reveal_type(pg.rank())
    reveal_type(mesh.get_group("tp"))
    reveal_type(mesh["tp"])
    reveal_type(mesh.size())
    reveal_type(all_reduce(p, "tp", src=P, dst=R))
'''

REVEALED = re.compile(r":(\d+): note: Revealed type is \"(.*)\"")


def revealed(output: str) -> dict[int, str]:
    """Line number -> revealed type, from mypy's output."""
    return {int(m.group(1)): m.group(2) for m in REVEALED.finditer(output)}


def diagnostics(output: str, root: Path) -> list[str]:
    """mypy's messages with the temporary directory removed, sorted."""
    return sorted(line.replace(str(root), "") for line in output.splitlines() if ": " in line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="cold runs per configuration")
    parser.add_argument("--quick", action="store_true", help="one run per configuration")
    parser.add_argument("--commit", help="measure this commit's code (default: the working tree)")
    args = parser.parse_args()
    if args.quick:
        args.repeats = 1

    print(plugin_cost.machine())
    tmp = Path(tempfile.mkdtemp(prefix="spmd-torch-skip-"))
    failed = False
    try:
        print(plugin_cost.prepare_children(tmp, args.commit))
        configs = {"skip": tmp / "skip.ini", "full": tmp / "full.ini"}
        configs["skip"].write_text(plugin_cost.config_text(plugin=True, skip_torch=True))
        configs["full"].write_text(plugin_cost.config_text(plugin=True, skip_torch=False))
        examples = plugin_cost.example_workload(tmp)
        probe = tmp / "probe" / "probe.py"
        probe.parent.mkdir()
        probe.write_text(PROBE)

        # Types kept (these runs also warm the page cache and write the bytecode).
        outputs = {name: plugin_cost.run_mypy(config, tmp / f"cache-probe-{name}", [probe]).output
                   for name, config in configs.items()}
        types = {name: revealed(out) for name, out in outputs.items()}
        print(f"\nRevealed types in {probe.name}, with the plugin:")
        print(f"{'line':>4} {'same':>4}  {'skip (--skip-torch-internals)':60} full torch")
        lines = PROBE.splitlines()
        for line in sorted(set(types["skip"]) | set(types["full"])):
            skip, full = types["skip"].get(line, "-"), types["full"].get(line, "-")
            ok = skip == full and "Any" not in skip
            failed = failed or not ok
            expression = lines[line - 1].strip().removeprefix("reveal_type(").removesuffix(")")
            print(f"{line:4d} {'yes' if ok else 'NO':>4}  {expression:38} {skip:21} {full}")
        if len(types["skip"]) != PROBE.count("reveal_type("):
            failed = True
            print(f"probe: {len(types['skip'])} revealed types, expected {PROBE.count('reveal_type(')}:\n"
                  f"{outputs['skip']}")

        # Cost, and the examples' diagnostics under both.
        wall: dict[str, list[float]] = {name: [] for name in configs}
        cpu: dict[str, list[float]] = {name: [] for name in configs}
        rss: dict[str, float] = {name: 0.0 for name in configs}
        found: dict[str, list[str]] = {}
        for rep in range(args.repeats):
            for name in (list(configs) if rep % 2 == 0 else list(reversed(configs))):
                cache = tmp / f"cache-{name}"
                shutil.rmtree(cache, ignore_errors=True)
                sample = plugin_cost.run_mypy(configs[name], cache, examples.targets)
                wall[name].append(sample.wall)
                cpu[name].append(sample.cpu)
                rss[name] = max(rss[name], sample.rss_mb)
                found[name] = diagnostics(sample.output, tmp)
            print(f"  repeat {rep + 1}/{args.repeats} done", file=sys.stderr, flush=True)
        same = found["skip"] == found["full"]
        failed = failed or not same
        print(f"\nCold mypy with the plugin on {examples.name}, {args.repeats} runs each, median [min-max]:")
        print(f"{'configuration':26} {'wall s':>18} {'CPU s':>18} {'peak MB':>8}")
        for name, label in (("full", "full torch"), ("skip", "skip (--skip-torch-internals)")):
            print(f"{label:26} {plugin_cost.fmt_spread(wall[name]):>18} {plugin_cost.fmt_spread(cpu[name]):>18} "
                  f"{rss[name]:8.0f}")
        full, skip = statistics.median(wall["full"]), statistics.median(wall["skip"])
        print(f"saving: {full - skip:.2f} s of {full:.2f} s wall ({1 - skip / full:.0%}), skip/full = "
              f"{skip / full:.2f}x; the examples' {len(found['skip'])} diagnostics identical: {same}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
