"""What the benchmark scripts share: a description of the machine, and forked process groups."""

from __future__ import annotations

import multiprocessing
import os
import platform
import socket
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["machine", "run_ranks"]


def machine() -> str:
    """``"<CPU model>, <n> CPUs, Python <version>"``, the CPU model as ``/proc/cpuinfo`` names it."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def run_ranks(ranks: int, target: Callable[..., Any], *args: Any) -> Any:
    """Run ``target(rank, port, *args)`` in ``ranks`` forked processes and return what rank 0 returned.

    ``port`` is a free port on localhost for the ranks' process group.  A
    failure in rank 0 is raised here as a ``RuntimeError`` carrying its
    traceback.
    """
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(target, rank, port, args, send)) for rank in range(ranks)]
    for p in procs:
        p.start()
    status, payload = receive.recv()
    for p in procs:
        p.join(timeout=60)
    if status != "ok":
        raise RuntimeError(f"rank 0 failed:\n{payload}")
    return payload


def _rank(target: Callable[..., Any], rank: int, port: int, args: tuple[Any, ...], send: Any) -> None:
    try:
        result = target(rank, port, *args)
        if rank == 0:
            send.send(("ok", result))
    except BaseException:  # report any failure, assertion errors included, to the parent
        if rank == 0:
            send.send(("error", traceback.format_exc()))
        raise


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
