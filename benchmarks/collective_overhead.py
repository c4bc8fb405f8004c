"""Per-call overhead of spmd_types' collectives and casts over the raw torch.distributed calls.

    python benchmarks/collective_overhead.py                  # fake and gloo backends; about 3 minutes
    python benchmarks/collective_overhead.py --quick          # smoke run, well under a minute
    python benchmarks/collective_overhead.py --backend fake   # one backend only
    python benchmarks/collective_overhead.py --runtime-checks # the library with its cross-rank check on

Every case times the library call (``spmd_types.all_reduce(x, "tp", src=P,
dst=R)`` and so on, with the axis given by name under
``set_current_mesh``) against the *raw* call that moves the same data: the
``torch.distributed`` function the library issues itself (``all_reduce``,
``all_gather_single``, ``reduce_scatter_single``, ``all_to_all_single``), into
a freshly allocated output, with the group and split sizes computed once
outside the loop.  Forward+backward cases compare against a minimal hand-written
``torch.autograd.Function`` with the same raw forward and the raw backward
communication (what one writes without this library, as Megatron-LM does);
both sides then run ``torch.autograd.grad(y, x, g)``.  A cast that does not
communicate in the forward (``reinterpret(I -> R)``) has an empty raw
forward.

Backends (each runs in fork-started child processes, so nothing leaks between them):

* ``fake``: ``dist.init_process_group("fake", rank=0, world_size=2)`` in one
  process.  A real c10d process group whose collectives complete at once
  without moving data: the library and the raw call pass through the same
  ``torch.distributed`` functions, dispatcher and output allocation, so the
  difference is the library's own Python and autograd cost, with no network
  noise.  World size 2 keeps the shapes of a
  real two-rank job (a gather doubles, a scatter halves); gloo with world 1
  would make every collective a degenerate copy.  ``LocalTensorMode`` is not
  used: it runs every op once per simulated rank through a Python dispatch
  mode, which would swamp the overhead being measured.
* ``gloo``: world 2, two fork-started processes talking over TCP on
  localhost; rank 0's timings are reported (it waits for rank 1, as a real
  job does).  Outputs and gradients of the library and the raw path are
  compared once per case before timing.

Tensors: ``--small`` (16) and ``--large`` (4M) float32 elements in the
input.  Timing: ``--rounds`` rounds of ``iters`` pairs of calls, library and
raw alternating call by call (which goes first alternates between rounds),
every call timed on its own, with the garbage collector off and one intra-op
thread per process.  Reported: the median per-call microseconds of each over
all calls, their difference (the overhead), and the range of that difference
over the rounds (each round's median minus median): how noisy it was.  A
forward+backward pair is two calls into the library (the forward, and the
backward that autograd runs), so the summary judges the bar per call: the
forward's overhead, and the backward's (forward+backward minus forward):
``ok`` when both are within the bar, ``noise`` when one is not but the
lowest round's difference is (the excess does not hold across rounds), and
``MISS`` when even that is over the bar.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _shared import machine, run_ranks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

Fn = Callable[[Any], Any]


@dataclass
class Case:
    name: str
    shape: tuple[int, ...]  # input shape, for a given element count (filled in by build)
    lib: Fn
    raw: Fn
    raw_fn: Fn  # raw forward inside a hand-written autograd.Function whose backward is the raw backward
    out_shape: tuple[int, ...]


def build_cases(elements: int, n: int, rank: int, group: Any) -> list[Case]:
    """The cases for inputs of ``elements`` elements on an axis of ``n`` ranks (``group``: its process group)."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    import spmd_types as spmd
    from spmd_types import I, P, R, S, V

    # The torch.distributed calls the library issues (see spmd_types._comm), each into a fresh output.
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor

    def function(forward: Fn, backward: Fn) -> Fn:
        """A minimal autograd.Function: ``forward`` and ``backward`` are raw calls."""

        class Raw(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return forward(x)

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                return backward(grad)

        return Raw.apply

    chunk = elements // n
    ones = [1] * n
    # ppermute: a ring shift by one, as an all-to-all whose only non-empty piece goes to the next rank.
    perm = [(i, (i + 1) % n) for i in range(n)]
    send_next = [int(k == (rank + 1) % n) for k in range(n)]
    from_prev = [int(k == (rank - 1) % n) for k in range(n)]

    def ar(x: Any) -> Any:
        out = x.clone()
        dist.all_reduce(out, group=group)
        return out

    def ag(x: Any) -> Any:
        out = x.new_empty((n * x.shape[0], *x.shape[1:]))
        gather(out, x, group=group)
        return out

    def rs(x: Any) -> Any:
        out = x.new_empty((x.shape[0] // n, *x.shape[1:]))
        scatter(out, x, group=group)
        return out

    def exchange(x: Any, out_rows: list[int], in_rows: list[int]) -> Any:
        out = x.new_empty((sum(out_rows), *x.shape[1:]))
        dist.all_to_all_single(out, x, out_rows, in_rows, group=group)
        return out

    def a2a(x: Any) -> Any:
        return exchange(x, ones, ones)

    def shift(x: Any, out_rows: list[int], in_rows: list[int]) -> Any:
        return exchange(x.reshape(1, -1), out_rows, in_rows).reshape(x.shape)

    def take(x: Any) -> Any:
        return x.narrow(0, rank * chunk, chunk).clone()

    def pad(g: Any) -> Any:
        return F.pad(g, (rank * chunk, (n - 1 - rank) * chunk))

    def identity(x: Any) -> Any:
        return x

    flat, rows = (elements,), (n, chunk)
    return [
        Case("all_reduce P->R", flat, lambda x: spmd.all_reduce(x, "tp", src=P, dst=R), ar, function(ar, ar), flat),
        Case("all_reduce P->I", flat, lambda x: spmd.all_reduce(x, "tp", src=P, dst=I), ar,
             function(ar, identity), flat),
        Case("all_gather V->R", flat, lambda x: spmd.all_gather(x, "tp", src=V, dst=R),
             lambda x: ag(x.unsqueeze(0)), function(lambda x: ag(x.unsqueeze(0)), lambda g: rs(g).squeeze(0)),
             (n, elements)),
        Case("all_gather S(0)->R", flat, lambda x: spmd.all_gather(x, "tp", src=S(0), dst=R), ag,
             function(ag, rs), (n * elements,)),
        Case("reduce_scatter P->V", rows, lambda x: spmd.reduce_scatter(x, "tp", src=P, dst=V),
             lambda x: rs(x).squeeze(0), function(lambda x: rs(x).squeeze(0), lambda g: ag(g.unsqueeze(0))),
             (chunk,)),
        Case("reduce_scatter P->S(0)", flat, lambda x: spmd.reduce_scatter(x, "tp", src=P, dst=S(0)), rs,
             function(rs, ag), (chunk,)),
        Case("all_to_all V->V", rows, lambda x: spmd.all_to_all(x, "tp", src=V, dst=V), a2a, function(a2a, a2a),
             rows),
        Case("ppermute (ring shift)", flat, lambda x: spmd.ppermute(x, "tp", perm),
             lambda x: shift(x, from_prev, send_next),
             function(lambda x: shift(x, from_prev, send_next), lambda g: shift(g, send_next, from_prev)), flat),
        Case("reinterpret I->R", flat, lambda x: spmd.reinterpret(x, "tp", src=I, dst=R), identity,
             function(identity, ar), flat),
        Case("convert R->S(0)", flat, lambda x: spmd.convert(x, "tp", src=R, dst=S(0)), take, function(take, pad),
             (chunk,)),
        Case("redistribute S(0)->R", flat, lambda x: spmd.redistribute(x, "tp", src=S(0), dst=R), ag,
             function(ag, rs), (n * elements,)),
    ]


# -- timing (runs in each rank's process) ----------------------------------------------


def time_pairs(lib: Fn, raw: Fn, pairs: int, lib_first: bool) -> tuple[list[float], list[float]]:
    """Microseconds of each of ``pairs`` alternating calls of ``lib()`` and ``raw()``.

    Timing every call (instead of a loop) lets medians discard the calls that
    another process or the scheduler interrupted.
    """
    clock = time.perf_counter_ns
    lib_t, raw_t = [], []
    first, second = (lib, raw) if lib_first else (raw, lib)
    for _ in range(pairs):
        t0 = clock()
        first()
        t1 = clock()
        second()
        t2 = clock()
        a, b = (t1 - t0) / 1e3, (t2 - t1) / 1e3
        lib_t.append(a if lib_first else b)
        raw_t.append(b if lib_first else a)
    return lib_t, raw_t


def bench_rank(rank: int, port: int, backend: str, world: int, args: argparse.Namespace) -> list[tuple[Any, ...]]:
    """One rank: build every case, check it, time it; the rows of its timings."""
    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    import spmd_types as spmd

    torch.set_num_threads(1)
    spmd.set_runtime_checks(args.runtime_checks)
    if backend == "fake":
        dist.init_process_group("fake", rank=0, world_size=world)
    else:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
    group = mesh.get_group("tp")
    rows = []
    with spmd.set_current_mesh(mesh):
        for size_label, elements, iters, rounds in (
            ("small", args.small, args.iters_small, args.rounds),
            ("large", args.large, args.iters_large, max(3, args.rounds // 2)),
        ):
            for case in build_cases(elements, world, dist.get_rank(), group):
                if args.only and not any(word in case.name for word in args.only):
                    continue
                for mode in ("fwd", "fwd+bwd"):
                    row = bench_case(torch, case, mode, iters, rounds, backend == "gloo", rank)
                    rows.append((backend, size_label, elements, *row))
                    if rank == 0:
                        print(f"  {backend} {size_label} {case.name} {mode}: done", file=sys.stderr, flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return rows


def bench_case(torch: Any, case: Case, mode: str, iters: int, rounds: int, check: bool,
               rank: int) -> tuple[str, str, float, float, float, float, float]:
    gen = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(case.shape, generator=gen)
    g = torch.randn(case.out_shape, generator=gen)
    if mode == "fwd":
        lib: Fn = lambda: case.lib(x)  # noqa: E731
        raw: Fn = lambda: case.raw(x)  # noqa: E731
    else:
        x.requires_grad_(True)
        lib = lambda: torch.autograd.grad(case.lib(x), x, g)  # noqa: E731
        raw = lambda: torch.autograd.grad(case.raw_fn(x), x, g)  # noqa: E731
    if check:  # the raw path must move the same data as the library
        for a, b in zip(_as_tuple(lib()), _as_tuple(raw())):
            if a.shape != b.shape or not torch.allclose(a, b):
                raise AssertionError(f"{case.name} {mode}: library and raw results differ")
    time_pairs(lib, raw, max(3, iters // 10), True)  # warm up both
    lib_all, raw_all, diffs = [], [], []
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            lib_t, raw_t = time_pairs(lib, raw, iters, lib_first=bool(r % 2))
            lib_all += lib_t
            raw_all += raw_t
            diffs.append(statistics.median(lib_t) - statistics.median(raw_t))
    finally:
        gc.enable()
    raw_med, lib_med = statistics.median(raw_all), statistics.median(lib_all)
    return case.name, mode, raw_med, lib_med, lib_med - raw_med, min(diffs), max(diffs)


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


# -- driver ------------------------------------------------------------------------



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("fake", "gloo", "both"), default="both")
    parser.add_argument("--small", type=int, default=16, help="elements of a small input")
    parser.add_argument("--large", type=int, default=4 * 1024 * 1024, help="elements of a large input")
    parser.add_argument("--rounds", type=int, default=15, help="timing rounds (large tensors: half as many)")
    parser.add_argument("--iters-small", type=int, default=200, help="calls per round, small tensors")
    parser.add_argument("--iters-large", type=int, default=5, help="calls per round, large tensors")
    parser.add_argument("--only", nargs="+", help="run only the cases whose name contains one of these words")
    parser.add_argument("--bar", type=float, default=15.0, help="overhead bar in microseconds per call")
    parser.add_argument("--quick", action="store_true", help="5 rounds, 50 small calls, 64K-element large tensors")
    parser.add_argument("--runtime-checks", action="store_true",
                        help="time the library with set_runtime_checks(True): "
                             "its cross-rank check before each collective")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.iters_small, args.large = 5, 50, 64 * 1024

    import torch

    print(f"{machine()}, torch {torch.__version__}, load average at start {os.getloadavg()[0]:.2f}")
    started = time.perf_counter()
    rows: list[tuple[Any, ...]] = []
    for backend in ("fake", "gloo") if args.backend == "both" else (args.backend,):
        # World size 2 on both; the fake backend simulates its peer in one process.
        rows += run_ranks(1 if backend == "fake" else 2, bench_rank, backend, 2, args)
    header = (f"{'backend':7} {'size':>8} {'case':24} {'mode':8} {'raw us':>10} {'spmd us':>10} "
              f"{'overhead us':>12} {'[range over rounds]':>24}")
    print("\nMedian time per invocation, world size 2, float32; overhead = spmd - raw")
    print(header)
    print("-" * len(header))
    overhead: dict[tuple[str, int, str, str], tuple[float, float]] = {}  # median, lowest round
    for backend, _, elements, name, mode, raw, lib, diff, lo, hi in rows:
        overhead[backend, elements, name, mode] = diff, lo
        print(f"{backend:7} {elements:8d} {name:24} {mode:8} {raw:10.1f} {lib:10.1f} {diff:12.1f} "
              f"{f'[{lo:.1f} to {hi:.1f}]':>24}")
    print(f"\nOverhead per call into the library (backward = forward+backward minus forward), microseconds; "
          f"bar: <= {args.bar:g} us per call")
    header = f"{'backend':7} {'size':>8} {'case':24} {'forward':>8} {'backward':>9} {'bar':>5}"
    print(header)
    print("-" * len(header))
    for (backend, elements, name, mode), (fwd, fwd_lo) in overhead.items():
        if mode != "fwd" or (backend, elements, name, "fwd+bwd") not in overhead:
            continue
        both, both_lo = overhead[backend, elements, name, "fwd+bwd"]
        bwd, bwd_lo = both - fwd, both_lo - fwd
        if max(fwd, bwd) <= args.bar:
            verdict = "ok"
        else:
            verdict = "noise" if max(fwd_lo, bwd_lo) <= args.bar else "MISS"
        print(f"{backend:7} {elements:8d} {name:24} {fwd:8.1f} {bwd:9.1f} {verdict:>5}")
    print(f"\ntotal benchmark time {time.perf_counter() - started:.0f} s, load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
