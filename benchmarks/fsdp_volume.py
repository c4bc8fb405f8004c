"""Communication of an FSDP-style step: gather to R versus all-reduce then slice, and a bfloat16 gather.

    python benchmarks/fsdp_volume.py             # worlds 2 and 4 on gloo; well under a minute
    python benchmarks/fsdp_volume.py --quick     # world 2, smaller layers

A stack of ``--layers`` linear layers (``--dim`` x ``--dim`` weights, ReLU
between them) whose weights each rank holds as a shard ``S(0)`` over the
``dp`` axis, with a per-rank batch (``V`` on ``dp``).  Every step gathers the
weights for the forward and must leave each rank with *its shard* of the
summed weight gradient.  Four ways to do that:

* ``gather to R``: ``all_gather(w, "dp", src=S(0), dst=R)``; its backward is a
  reduce-scatter, which delivers each rank its shard of the sum directly;
* ``gather to I + convert``: ``convert(all_gather(w, "dp", src=S(0), dst=I),
  "dp", src=I, dst=R)``; the backward of ``convert(I -> R)`` all-reduces the
  full gradient and that of ``all_gather(S(0) -> I)`` keeps the local slice;
* ``manual all-reduce``: the plain-PyTorch way: gather without autograd, let
  the full weight collect a local gradient, then ``all_reduce`` it and slice;
* ``gather to R, bf16``: FSDP's mixed precision,
  ``all_gather(w, "dp", src=S(0), dst=R, comm_dtype=torch.bfloat16,
  grad_comm_dtype=torch.float32)``: the forward gather moves ``bfloat16``
  (half the bytes), the gradients' reduce-scatter stays ``float32``.

The communication of the forward (the gathers) and of the gradient phase
(``loss.backward()`` and, for the manual path, the all-reduce after it) is
counted two ways:

* by intercepting every collective (the c10d ops that ``torch.distributed``
  calls, as the library does, and the functional ones the manual path calls)
  with a ``TorchDispatchMode`` (nothing in the library is patched), and converting
  each to the bytes one rank sends under the bandwidth-optimal ring algorithm
  that NCCL uses: all-reduce 2(n-1)/n of the tensor, reduce-scatter (n-1)/n of
  its input, all-gather (n-1)/n of its output;
* by reading the bytes this process actually sent on its TCP sockets
  (``ss -tin``, ``bytes_sent``) around the phase, minus what a bare barrier sends:
  what gloo really moved.  A calibration row per collective (one bare call on
  a ``--dim`` x ``--dim`` tensor) shows how gloo's own algorithms compare
  with the ring model.

The gradients of the paths are compared with the first one's: they must
agree to ``rtol=1e-4, atol=1e-6`` (``float32`` rounding in different
orders).  The ``bfloat16`` path computes with the weights rounded to
``bfloat16``, which changes the gradients by a few percent through four
layers; it is compared, to the same tolerance, with the first path run on
those rounded weights, which it must equal since its gradients are reduced in
``float32``.  Bar: the gradient bytes of
``gather to R`` are at most 0.55x those of the all-reduce path (a
reduce-scatter sends half the bytes of an all-reduce, so 0.5x is the ideal);
the forward bytes of the ``bfloat16`` gather are 0.5x
those of the ``float32`` one.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from _shared import run_ranks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PATHS = ("gather to R", "gather to I + convert", "manual all-reduce", "gather to R, bf16")


def ring_bytes(op: str, n: int, in_bytes: int, out_bytes: int) -> float:
    """Bytes one rank sends for ``op`` under the ring (bandwidth-optimal) algorithm."""
    if op == "all_reduce":
        return 2 * (n - 1) / n * in_bytes
    if op in ("reduce_scatter_tensor", "all_to_all_single"):
        return (n - 1) / n * in_bytes
    if op == "all_gather_into_tensor":
        return (n - 1) / n * out_bytes
    raise ValueError(f"no byte model for {op}")


def wire_bytes_sent() -> int | None:
    """Bytes this process has sent on its TCP sockets (``ss``), or None where ``ss`` cannot say."""
    try:
        out = subprocess.run(["ss", "-tinpH"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    total, mine, found = 0, False, False
    for line in out.splitlines():
        if "users:(" in line:  # a socket line; its details follow on the next line
            mine = f"pid={os.getpid()}," in line
            found = found or mine
        match = re.search(r"bytes_sent:(\d+)", line)
        if match and mine:
            total += int(match.group(1))
    return total if found else None


def nbytes(t: Any) -> int:
    return int(t.numel() * t.element_size())


def rank_main(rank: int, port: int, world: int, args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.utils._python_dispatch import TorchDispatchMode

    import spmd_types as spmd
    from spmd_types import I, R, S

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
    group_name = mesh.get_group("dp").group_name
    ops: Any = torch.ops._c10d_functional

    # The library issues torch.distributed's c10d collectives (through spmd_types' backend reference),
    # the manual path functional ones: both reach the dispatcher, under these names.
    c10d_names = {"allreduce_": "all_reduce", "_allgather_base_": "all_gather_into_tensor",
                  "_reduce_scatter_base_": "reduce_scatter_tensor", "alltoall_base_": "all_to_all_single"}

    class Count(TorchDispatchMode):
        """Records every collective: (op, input bytes, output bytes)."""

        def __init__(self) -> None:
            super().__init__()
            self.calls: list[tuple[str, int, int]] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            result = func(*args, **(kwargs or {}))
            op = func.__name__.split(".")[0]
            if func.namespace == "_c10d_functional" and op != "wait_tensor":
                self.calls.append((op, nbytes(args[0]), nbytes(result)))
            elif func.namespace == "c10d" and op in c10d_names:
                if op == "allreduce_":  # (tensors, ...): in place
                    self.calls.append((c10d_names[op], nbytes(args[0][0]), nbytes(args[0][0])))
                else:  # (output, input, ...)
                    self.calls.append((c10d_names[op], nbytes(args[1]), nbytes(args[0])))
            return result

    gen = torch.Generator().manual_seed(0)
    full = [torch.randn(args.dim, args.dim, generator=gen) / args.dim**0.5 for _ in range(args.layers)]
    shards = [w.chunk(world, dim=0)[rank].clone() for w in full]
    batch = torch.randn(args.batch, args.dim, generator=torch.Generator().manual_seed(100 + rank))

    def wire_since(before: int | None) -> int | None:
        dist.barrier()
        after = wire_bytes_sent()
        return after - before if before is not None and after is not None else None

    def step(path: str, start: list[Any] = shards) -> tuple[list[Any], list[Any], list[Any], int | None, int | None]:
        """Forward and gradient phase: the gradient shards, the calls of each phase, their wire bytes."""
        params = [s.clone().requires_grad_(True) for s in start]
        forward, grad_phase = Count(), Count()
        dist.barrier()
        before = wire_bytes_sent()
        with spmd.set_current_mesh(mesh), forward:
            if path == "gather to R":
                weights = [spmd.all_gather(p, "dp", src=S(0), dst=R) for p in params]
            elif path == "gather to R, bf16":
                weights = [spmd.all_gather(p, "dp", src=S(0), dst=R, comm_dtype=torch.bfloat16,
                                           grad_comm_dtype=torch.float32) for p in params]
            elif path == "gather to I + convert":
                weights = [spmd.convert(spmd.all_gather(p, "dp", src=S(0), dst=I), "dp", src=I, dst=R)
                           for p in params]
            else:
                weights = [ops.wait_tensor(ops.all_gather_into_tensor(p.detach(), world, group_name))
                           .requires_grad_(True) for p in params]
            h = batch
            for w in weights:
                h = F.relu(F.linear(h, w))
            loss = h.square().mean()
        wire_forward = wire_since(before)
        dist.barrier()
        before = wire_bytes_sent()
        with spmd.set_current_mesh(mesh), grad_phase:
            loss.backward()
            if path == "manual all-reduce":
                grads = [ops.wait_tensor(ops.all_reduce(w.grad, "sum", group_name)).chunk(world, dim=0)[rank]
                         for w in weights]
            else:
                grads = [p.grad for p in params]
        return grads, forward.calls, grad_phase.calls, wire_forward, wire_since(before)

    def barrier_bytes() -> int | None:
        dist.barrier()
        before = wire_bytes_sent()
        dist.barrier()
        after = wire_bytes_sent()
        return after - before if before is not None and after is not None else None

    step(PATHS[0])  # warm up connections
    base = barrier_bytes()

    def calibrate(op: str) -> tuple[str, int, int, int | None]:
        """One bare ``op`` on a dim x dim tensor (its input; a shard for all_gather): bytes and wire bytes."""
        x = torch.randn(args.dim, args.dim, generator=gen)
        shard = x.chunk(world, dim=0)[rank].contiguous()
        run = {"all_reduce": lambda: ops.all_reduce(x, "sum", group_name),
               "reduce_scatter_tensor": lambda: ops.reduce_scatter_tensor(x, "sum", world, group_name),
               "all_gather_into_tensor": lambda: ops.all_gather_into_tensor(shard, world, group_name)}[op]
        dist.barrier()
        before = wire_bytes_sent()
        result = ops.wait_tensor(run())
        dist.barrier()
        after = wire_bytes_sent()
        wire = None if before is None or after is None or base is None else after - before - base
        source = shard if op == "all_gather_into_tensor" else x
        return op, source.numel() * 4, result.numel() * 4, wire

    calibration = [calibrate(op) for op in ("all_reduce", "reduce_scatter_tensor", "all_gather_into_tensor")]
    rows, reference = [], None
    for path in PATHS:
        grads, fwd_calls, grad_calls, wire_fwd, wire_grad = step(path)
        if reference is None:
            reference = grads
        # The bf16 path is compared with the float32 path run on the weights rounded to bfloat16: what it
        # computes, with its gradients reduced in float32.
        want = step("gather to R", [w.to(torch.bfloat16).float() for w in shards])[0] if path.endswith("bf16") \
            else reference
        agree = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(want, grads))
        rows.append((path, fwd_calls, grad_calls, *(None if w is None or base is None else w - base
                                                    for w in (wire_fwd, wire_grad)), agree))
    dist.barrier()
    dist.destroy_process_group()
    return (rows, calibration)


def summarize(calls: list[tuple[str, int, int]], n: int) -> tuple[str, float, float]:
    """``"2 x all_reduce"``-style list, payload bytes (collective inputs), ring bytes sent per rank."""
    counts: dict[str, int] = {}
    for op, _, _ in calls:
        counts[op] = counts.get(op, 0) + 1
    names = ", ".join(f"{k} x {op}" for op, k in sorted(counts.items())) or "none"
    return names, float(sum(i for _, i, _ in calls)), sum(ring_bytes(op, n, i, o) for op, i, o in calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8, help="rows of the per-rank batch")
    parser.add_argument("--bar", type=float, default=0.55)
    parser.add_argument("--quick", action="store_true", help="world 2, dim 256")
    args = parser.parse_args()
    if args.quick:
        args.worlds, args.dim = [2], 256

    import torch

    print(f"torch {torch.__version__}, gloo, {args.layers} layers of {args.dim}x{args.dim} float32 weights "
          f"({args.layers * args.dim * args.dim * 4 / 2**20:.1f} MiB in all), sharded S(0) over dp")
    mib = 2**20
    for world in args.worlds:
        rows, calibration = run_ranks(world, rank_main, world, args)
        print(f"\nworld size {world}")
        header = (f"{'path':24} {'gradient-phase collectives':44} {'payload MiB':>11} {'ring MiB/rank':>13} "
                  f"{'vs all-reduce':>13} {'gloo wire MiB':>13} {'vs all-reduce':>13} {'grads agree':>11}")
        print(header)
        print("-" * len(header))
        summaries = {path: (summarize(grad_calls, world), wire, agree) for path, _, grad_calls, _, wire, agree in rows}
        ring_ref = summaries["gather to I + convert"][0][2]
        wire_ref = summaries["gather to I + convert"][1]
        for path, ((names, payload, ring), wire, agree) in summaries.items():
            wire_s = f"{wire / mib:13.2f}" if wire is not None else f"{'n/a':>13}"
            wire_r = f"{wire / wire_ref:12.2f}x" if wire is not None and wire_ref else f"{'n/a':>13}"
            print(f"{path:24} {names:44} {payload / mib:11.2f} {ring / mib:13.2f} {ring / ring_ref:12.2f}x "
                  f"{wire_s} {wire_r} {agree!s:>11}")
        print(f"\n{'path':24} {'forward collectives':44} {'payload MiB':>11} {'ring MiB/rank':>13} "
              f"{'vs float32':>13} {'gloo wire MiB':>13} {'vs float32':>13}")
        forwards = {path: (summarize(fwd_calls, world), wire) for path, fwd_calls, _, wire, _, _ in rows}
        (_, _, fwd_ref), fwd_wire_ref = forwards["gather to R"]
        for path, ((names, payload, ring), wire) in forwards.items():
            wire_s = f"{wire / mib:13.2f}" if wire is not None else f"{'n/a':>13}"
            wire_r = f"{wire / fwd_wire_ref:12.2f}x" if wire is not None and fwd_wire_ref else f"{'n/a':>13}"
            print(f"{path:24} {names:44} {payload / mib:11.2f} {ring / mib:13.2f} {ring / fwd_ref:12.2f}x "
                  f"{wire_s} {wire_r}")
        ratio = summaries["gather to R"][0][2] / ring_ref
        print(f"calibration, one bare collective on a {args.dim}x{args.dim} tensor:")
        for op, in_bytes, out_bytes, wire in calibration:
            wire_s = f"{wire / mib:.2f} MiB" if wire is not None else "n/a"
            print(f"  {op:24} ring model {ring_bytes(op, world, in_bytes, out_bytes) / mib:.2f} MiB/rank, "
                  f"gloo wire {wire_s}")
        print(f"bar: gather-to-R gradient bytes {ratio:.2f}x the all-reduce path "
              f"({'met' if ratio <= args.bar else 'MISSED'}: <= {args.bar:g}x)")
        half = forwards["gather to R, bf16"][0][2] / fwd_ref
        print(f"bfloat16 gather: forward bytes {half:.2f}x the float32 gather ({'met' if half <= 0.5 else 'MISSED'}: "
              f"<= 0.5x)")


if __name__ == "__main__":
    main()
