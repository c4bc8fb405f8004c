"""What runtime checking (``spmd_types.runtime_checking()``) adds to each torch op and collective.

    python benchmarks/runtime_checking.py            # about 2 minutes
    python benchmarks/runtime_checking.py --quick    # smoke run, well under a minute

Three measurements, each as the median over ``--rounds`` rounds:

* **ops**: one small torch op at a time (16x16 float32 tensors, so that the
  op itself costs a few microseconds and the overhead is what is left), in
  three conditions: plain eager (checking off), checking on with tensors
  that carry no tracked type (the fast path: every op is still seen by the
  checker's ``TorchFunctionMode``), and checking on with tracked tensors
  (the op table applied, the result typed).  Each round times ``iters``
  calls of every condition back to back, the order rotating between rounds;
  a checked condition enters ``runtime_checking()`` once per round, outside
  the timed loop.  The overhead is the median per-op time with checking
  minus without.
* **collectives**: ``all_reduce``, ``all_gather`` and ``convert`` of this
  package on a ``fake`` process group of world size 2 (one process; the
  collectives complete without moving data), checking off and on with a
  tracked input: the ``src`` check, the pause of op tracking inside the
  call and the typing of the result.
* **examples**: each correct program in ``examples/`` run on its simulated
  ranks (``EXAMPLE.run()``, under ``LocalTensorMode``), without and with
  checking: the whole-program slowdown where every op already runs once per
  simulated rank.

One intra-op thread, garbage collector off while timing.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _shared import machine  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402

BAR_US = 20.0
EXAMPLES = ("tp_mlp", "sequence_parallel_attention", "vocab_parallel_cross_entropy", "moe_all_to_all",
            "ring_attention", "data_parallel_loss")


def _tensors(tracked: bool) -> dict[str, torch.Tensor]:
    """Operands of the op cases; with ``tracked``, each with an SPMD type that makes its op valid."""
    g = torch.Generator().manual_seed(0)
    made = {name: torch.randn(16, 16, generator=g) for name in ("r", "v", "p", "w", "i")}
    if tracked:
        for name, markers in {"r": (R["tp"], V["dp"]), "v": (V["tp"], V["dp"]), "p": (P["tp"], V["dp"]),
                              "w": (S["tp", 0], R["dp"]), "i": (I["tp"], R["dp"])}.items():
            spmd.assert_type(made[name], *markers)
    return made


# Each case is one op; chosen to cover the kinds of handling (operators, functions, methods,
# properties, sequences, in-place writes, ops outside the table).
OPS: dict[str, Callable[[dict[str, torch.Tensor]], object]] = {
    "r + v": lambda t: t["r"] + t["v"],
    "p * 2.0": lambda t: t["p"] * 2.0,
    "p + p": lambda t: t["p"] + t["p"],
    "F.linear(r, w)": lambda t: F.linear(t["r"], t["w"]),
    "p.sum(-1)": lambda t: t["p"].sum(-1),
    "p.view(-1)": lambda t: t["p"].view(-1),
    "v.T": lambda t: t["v"].T,
    "torch.cat([p, p])": lambda t: torch.cat([t["p"], t["p"]]),
    "v[0]": lambda t: t["v"][0],
    "torch.exp(v) (not in the table)": lambda t: torch.exp(t["v"]),
    "F.gelu(r)": lambda t: F.gelu(t["r"]),
    "v.add_(r)": lambda t: t["v"].add_(t["r"]),
    "torch.zeros(16) (a constant)": lambda t: torch.zeros(16),
}


@contextlib.contextmanager
def _quiet_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _per_call_us(fn: Callable[[], object], iters: int) -> float:
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters * 1e6


def _conditions() -> dict[str, Callable[[Callable[[dict[str, torch.Tensor]], object], int], float]]:
    """How to time one op in each condition: plain, checked with untracked tensors, checked with tracked ones."""
    plain_tensors = _tensors(tracked=False)

    def plain(op: Callable[[dict[str, torch.Tensor]], object], iters: int) -> float:
        return _per_call_us(lambda: op(plain_tensors), iters)

    def checked(tracked: bool) -> Callable[[Callable[[dict[str, torch.Tensor]], object], int], float]:
        def run(op: Callable[[dict[str, torch.Tensor]], object], iters: int) -> float:
            with spmd.runtime_checking():
                tensors = _tensors(tracked)
                op(tensors)  # the first call of an op reads its signature: not timed
                return _per_call_us(lambda: op(tensors), iters)

        return run

    return {"plain": plain, "untracked": checked(False), "tracked": checked(True)}


def measure_ops(rounds: int, iters: int) -> list[tuple[str, dict[str, float], tuple[float, float]]]:
    conditions = _conditions()
    rows = []
    for name, op in OPS.items():
        samples: dict[str, list[float]] = {c: [] for c in conditions}
        order = list(conditions)
        with _quiet_gc():
            for k in range(rounds):
                for condition in order[k % 3:] + order[:k % 3]:
                    samples[condition].append(conditions[condition](op, iters))
        medians = {c: statistics.median(s) for c, s in samples.items()}
        spread = [t - p for t, p in zip(samples["tracked"], samples["plain"])]
        rows.append((name, medians, (min(spread), max(spread))))
    return rows


def measure_collectives(rounds: int, iters: int) -> list[tuple[str, float, float]]:
    dist.init_process_group("fake", rank=0, world_size=2)
    mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("tp",))
    cases: dict[str, tuple[tuple[object, ...], Callable[[torch.Tensor], torch.Tensor]]] = {
        "all_reduce(x, src=P, dst=R)": ((P["tp"],), lambda x: spmd.all_reduce(x, "tp", src=P, dst=R)),
        "all_gather(x, src=S(0), dst=R)": ((S["tp", 0],), lambda x: spmd.all_gather(x, "tp", src=S(0), dst=R)),
        "convert(x, src=I, dst=R)": ((I["tp"],), lambda x: spmd.convert(x, "tp", src=I, dst=R)),
    }
    rows = []
    try:
        with spmd.set_current_mesh(mesh):
            for name, (markers, call) in cases.items():
                x = torch.randn(16)
                off, on = [], []
                with _quiet_gc():
                    for k in range(rounds):
                        for checked in ((False, True) if k % 2 == 0 else (True, False)):
                            if checked:
                                with spmd.runtime_checking():
                                    spmd.assert_type(x, *markers)  # type: ignore[arg-type]
                                    on.append(_per_call_us(lambda: call(x), iters))  # noqa: B023
                            else:
                                off.append(_per_call_us(lambda: call(x), iters))  # noqa: B023
                rows.append((name, statistics.median(off), statistics.median(on)))
    finally:
        dist.destroy_process_group()
    return rows


def measure_examples(repeats: int) -> list[tuple[str, float, float]]:
    rows = []
    for name in EXAMPLES:
        example = importlib.import_module(f"examples.{name}").EXAMPLE
        example.run()  # warm up: imports, first-call costs
        off, on = [], []
        for k in range(repeats):
            for checked in ((False, True) if k % 2 == 0 else (True, False)):
                start = time.perf_counter()
                if checked:
                    with spmd.runtime_checking():
                        ok = example.run().ok
                else:
                    ok = example.run().ok
                (on if checked else off).append(time.perf_counter() - start)
                assert ok, name
        rows.append((name, statistics.median(off), statistics.median(on)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few rounds and iterations")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--iters", type=int, default=5000)
    parser.add_argument("--example-repeats", type=int, default=7)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.iters, args.example_repeats = 3, 200, 1
    torch.set_num_threads(1)
    print(f"machine: {machine()}; torch {torch.__version__}")
    print(f"\n## ops (16x16 float32; median of {args.rounds} rounds of {args.iters} calls; µs per op)\n")
    print("| op | plain | checking, untracked | checking, tracked | overhead (tracked) | [min-max] over rounds | "
          f"bar (≤ {BAR_US:g}) |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for name, m, (low, high) in measure_ops(args.rounds, args.iters):
        overhead = m["tracked"] - m["plain"]
        worst = max(worst, overhead, m["untracked"] - m["plain"])
        verdict = "ok" if overhead <= BAR_US else ("noise" if low <= BAR_US else "MISS")
        print(f"| `{name}` | {m['plain']:.1f} | {m['untracked']:.1f} | {m['tracked']:.1f} | {overhead:.1f} | "
              f"[{low:.1f} to {high:.1f}] | {verdict} |")
    print(f"\nlargest median overhead per op: {worst:.1f} µs")
    print("\n## collectives (fake backend, world 2, 16 elements; µs per call)\n")
    print("| call | checking off | checking on | overhead |")
    print("|---|---|---|---|")
    for name, off, on in measure_collectives(args.rounds, max(args.iters // 10, 20)):
        print(f"| `{name}` | {off:.1f} | {on:.1f} | {on - off:.1f} |")
    print(f"\n## examples on 4 simulated ranks (LocalTensorMode; median of {args.example_repeats} runs, seconds)\n")
    print("| example | checking off | checking on | ratio |")
    print("|---|---|---|---|")
    for name, off, on in measure_examples(args.example_repeats):
        print(f"| `{name}` | {off:.3f} | {on:.3f} | {on / off:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
