"""The one reference through which the runtime reaches ``torch.distributed``.

Every collective the library runs (forward and backward, the cross-rank check
of :func:`~spmd_types.set_runtime_checks` and ``assert_type``'s check
included), and every question it asks about a process group, is a call on the
module-like object that :func:`get_dist` returns.  By default that object is
``torch.distributed`` itself.  :func:`set_dist` swaps in another one for the
whole process, and :func:`use_dist` swaps it for a ``with`` block: a wrapper
that records or times the calls, a fault injector for tests, or a
communication library with the same API.

A replacement must provide what the runtime uses, with ``torch.distributed``'s
signatures and semantics (blocking calls, ``async_op`` left at ``False``)::

    all_reduce(tensor, op=ReduceOp.SUM, group=None)
    all_gather_single(output, input, group=None)           # or all_gather_into_tensor
    reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None)
                                                           # or reduce_scatter_tensor
    all_to_all_single(output, input, output_split_sizes, input_split_sizes, group=None)
    get_process_group_ranks(group)
    ReduceOp                                               # SUM, MAX, MIN
    ProcessGroup                                           # the class of an axis's group

``all_gather_single`` and ``reduce_scatter_single`` are the names torch 2.13
prefers; a backend without them is asked for the older
``all_gather_into_tensor`` and ``reduce_scatter_tensor``.  Every collective is
issued with a contiguous real tensor (complex data travels as its real view)
and a ``group`` that is one of the backend's process groups.

A wrapper that counts what a training step sends::

    class Counting:
        def __init__(self, real):
            self.real, self.calls = real, collections.Counter()

        def __getattr__(self, name):
            found = getattr(self.real, name)
            if not callable(found) or isinstance(found, type):
                return found  # ReduceOp, ProcessGroup

            def call(*args, **kwargs):
                self.calls[name] += 1
                return found(*args, **kwargs)

            return call

    counting = Counting(torch.distributed)
    with spmd.use_dist(counting):
        model(batch).sum().backward()
    print(counting.calls)  # e.g. Counter({'all_gather_single': 8, 'reduce_scatter_single': 8})

The runtime looks the functions up once, when the backend is set, so a call
costs no more than calling ``torch.distributed`` directly.  Process groups
resolved while another backend was in place stay valid only if the new
backend accepts them (a wrapper around ``torch.distributed`` does).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch.distributed

from spmd_types._errors import SpmdValueError

__all__ = ["get_dist", "set_dist", "use_dist"]

_B = TypeVar("_B")

dist: Any = torch.distributed
"""The backend in use; read it through the functions below, which :func:`set_dist` keeps in step."""

all_reduce: Callable[..., Any]
all_gather: Callable[..., Any]
reduce_scatter: Callable[..., Any]
all_to_all_single: Callable[..., Any]
process_group_ranks: Callable[..., Any]
SUM: Any
MAX: Any
MIN: Any
ProcessGroup: Any

_NEEDED = ("all_reduce", "all_to_all_single", "get_process_group_ranks", "ReduceOp", "ProcessGroup")


def _one_of(backend: Any, *names: str) -> Callable[..., Any]:
    for name in names:
        found = getattr(backend, name, None)
        if found is not None:
            return found  # type: ignore[no-any-return]
    raise SpmdValueError(f"set_dist: the backend {backend!r} has none of {', '.join(names)}")


def _bind(backend: Any) -> None:
    """Look up what the runtime calls on ``backend`` (once, so that a call pays for no lookup)."""
    global dist, all_reduce, all_gather, reduce_scatter, all_to_all_single, process_group_ranks
    global SUM, MAX, MIN, ProcessGroup
    missing = [name for name in _NEEDED if getattr(backend, name, None) is None]
    if missing:
        raise SpmdValueError(
            f"set_dist: the backend {backend!r} lacks {', '.join(missing)}; it must offer the torch.distributed "
            f"functions the runtime calls (see spmd_types._dist)"
        )
    gather = _one_of(backend, "all_gather_single", "all_gather_into_tensor")
    scatter = _one_of(backend, "reduce_scatter_single", "reduce_scatter_tensor")
    dist = backend
    all_reduce, all_gather, reduce_scatter = backend.all_reduce, gather, scatter
    all_to_all_single, process_group_ranks = backend.all_to_all_single, backend.get_process_group_ranks
    SUM, MAX, MIN = backend.ReduceOp.SUM, backend.ReduceOp.MAX, backend.ReduceOp.MIN
    ProcessGroup = backend.ProcessGroup


_bind(torch.distributed)


def world_group() -> Any:
    """The backend's default group of every rank (``group.WORLD``); ``None`` before it is set up, or if it has none."""
    return getattr(getattr(dist, "group", None), "WORLD", None)


def world_size() -> int | None:
    """How many ranks the default group has; ``None`` before it is set up, or if the backend cannot say."""
    initialized = getattr(dist, "is_initialized", None)
    if initialized is None or not initialized():
        return None
    return int(dist.get_world_size())


def get_dist() -> Any:
    """``get_dist() -> module``: the ``torch.distributed``-like object every collective goes through."""
    return dist


def set_dist(backend: Any) -> Any:
    """``set_dist(backend) -> previous``: route every collective through ``backend``; returns the old one.

    ``backend`` is ``torch.distributed`` or an object with the same functions
    (see the module docstring for the list).  The change is process-wide and
    takes effect at the next call; restore the previous backend by passing it
    back, ``spmd.set_dist(previous)``, or use :func:`use_dist` for a block.
    A backend that lacks a function the runtime needs is refused with
    :class:`~spmd_types._errors.SpmdValueError` (and the current one stays).
    """
    previous = dist
    _bind(backend)
    return previous


@contextlib.contextmanager
def use_dist(backend: _B) -> Iterator[_B]:
    """``with use_dist(backend):`` routes every collective through ``backend`` inside the block.

    The previous backend is restored on exit, also when an exception leaves
    the block; blocks nest.  Yields ``backend``.
    """
    previous = set_dist(backend)
    try:
        yield backend
    finally:
        set_dist(previous)
