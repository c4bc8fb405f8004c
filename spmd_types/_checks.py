"""``assert_type``: a checked cast for mypy, and an optional run-time check.

Statically, ``assert_type(x, R["dp"], V["tp"])`` tells the type checker what
``x`` is on the named axes (the plugin verifies the claim where it can).  At
run time it returns ``x`` unchanged and, by default, does nothing else.

These data checks are off by default.  Turn them on with
``spmd_types.set_runtime_checks(True)`` or by setting the environment variable
``SPMD_TYPES_RUNTIME_CHECKS=1`` before ``spmd_types`` is first used (or for
one block with ``runtime_checking(data=True)``).  Then each ``assert_type``
verifies what the local data can show:

* ``R`` and ``I`` on an axis: every rank of the axis holds the same values
  (NaNs compare equal).  Under ``LocalTensorMode`` the simulated ranks'
  tensors are compared directly; on real ranks this costs two all-reduces
  (element-wise max and min), so every rank of the axis must reach the call;
* ``S(i)``: the tensor has a dim ``i``;
* ``V`` and ``P``: nothing can be checked from the data.

A failed check raises :class:`~spmd_types._errors.SpmdTypeCheckError` naming
the axis and the ranks that differ.  Axis names need a current mesh
(:func:`~spmd_types._mesh.set_current_mesh`) while checking is on.

The same switch turns on a **cross-rank check before every collective**
(forward and backward): the ranks of the axis first exchange what they are
about to do (the call with its ``src``/``dst`` and dims, ``split_sizes`` or
``perm``, and the tensor's dtype and shape) in one all-gather of 13 int64
values, and a mismatch raises :class:`~spmd_types._errors.ShapeError` (dtype
or shape) or :class:`~spmd_types._errors.CollectiveArgumentError` (a
different call) on every rank, naming the ranks and what each passed.
Without the check, ranks that disagree deadlock, abort inside the backend
(gloo kills the process with SIGABRT) or silently compute garbage.  Under
``LocalTensorMode`` the collectives always make this check, whatever the
switch says: every simulated rank's tensor is at hand, so it costs no
communication, and a mismatch is reported as the same error rather than as
whatever torch says when it meets tensors of different shapes.  The cost
is one extra small all-gather per collective, waited for before the
collective starts: about 45 µs of Python and dispatch per call (fake
backend), plus that all-gather's latency (0.35-0.45 ms per call on gloo over
localhost; see the performance page).  Casts that do not communicate pay
nothing, and nothing is paid with checks off.  Inside ``torch.compile`` the
check is skipped (it needs the exchanged values in Python).
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterator
from typing import Final, NoReturn, TypeVar

import torch

from spmd_types import _comm, _dist
from spmd_types._checking import assert_declared
from spmd_types._errors import CollectiveArgumentError, ShapeError, SpmdTypeCheckError, SpmdValueError
from spmd_types._mesh import Group, local_tensors, rank_values, resolve_axis, simulated
from spmd_types.typesystem import AxisTypes, I, R, Shard

__all__ = ["assert_type", "check_exchange_sizes", "check_ranks_agree", "runtime_checks_enabled", "set_runtime_checks"]

_T = TypeVar("_T", bound=torch.Tensor)

_ENV = "SPMD_TYPES_RUNTIME_CHECKS"
_enabled: bool = os.environ.get(_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def set_runtime_checks(enabled: bool) -> None:
    """``set_runtime_checks(enabled: bool) -> None``: turn run-time verification on or off.

    On: ``assert_type`` verifies the data, and every collective first checks
    that the ranks of its axis agree on the call, dtype and shape (one small
    extra all-gather per collective).  The setting is process-wide; the
    environment variable ``SPMD_TYPES_RUNTIME_CHECKS=1`` turns it on from
    the start (a debug mode).
    """
    global _enabled
    _enabled = bool(enabled)


def runtime_checks_enabled() -> bool:
    """``runtime_checks_enabled() -> bool``: whether ``assert_type`` and the collectives verify at run time."""
    return _enabled


def checking() -> bool:
    """Whether a collective checks that the ranks agree: with run-time checks on, and always on simulated ranks."""
    return _enabled or simulated() is not None


def assert_type(x: _T, *types: AxisTypes) -> _T:
    """``assert_type(x, R["dp"], S["tp", 0], ...) -> x``

    A checked cast: the type checker takes ``x`` to have the given local SPMD
    types on the named axes.  At run time it returns ``x`` itself; when
    run-time checks are on (:func:`set_runtime_checks`), it first verifies
    what the data can show (``R``/``I`` axes hold equal values on every rank,
    ``S(i)`` has a dim ``i``) and raises
    :class:`~spmd_types._errors.SpmdTypeCheckError` if it does not.  Under
    :func:`~spmd_types._checking.runtime_checking`, the SPMD type tracked for
    ``x`` must fit the markers (``spmd-boundary`` otherwise), and ``x`` then
    has exactly the asserted type, as for the plugin.

    Args:
        x: the tensor; returned unchanged.
        types: markers such as ``R["dp"]``, ``V["dp", "cp"]``, ``S["tp", 0]``.
    """
    if _enabled:
        _check(x, types)
    assert_declared(x, types)
    return x


def _check(x: torch.Tensor, types: tuple[AxisTypes, ...]) -> None:
    if not isinstance(x, torch.Tensor):
        raise SpmdValueError(
            f"assert_type: x must be a torch.Tensor to check its SPMD types, got {type(x).__name__}; "
            f"convert it first, e.g. torch.as_tensor(x)"
        )
    for marker in types:
        if not isinstance(marker, AxisTypes):
            raise SpmdValueError(
                f'assert_type takes markers such as R["dp"] or S["tp", 0] after the tensor, got {marker!r}'
            )
        for axis in marker.axes:
            t = marker.axis_type
            if isinstance(t, Shard):
                if not -x.dim() <= t.dim < x.dim():
                    raise SpmdTypeCheckError(
                        f"assert_type: {marker!r} names dim {t.dim}, but the tensor has {x.dim()} dims"
                    )
            elif t is R or t is I:
                _check_same_on_axis(x, resolve_axis(axis), t.code)


def _check_same_on_axis(x: torch.Tensor, group: Group, code: str) -> None:
    data = x.detach()
    local = local_tensors(data)
    if local is not None:
        for members in group.members():
            first = members[0]
            with _no_simulation():
                differ = [r for r in members[1:] if r in local and not _same(local[first], local[r])]
            if differ:
                raise SpmdTypeCheckError(
                    f"assert_type: the tensor is declared {code} on axis {group.label!r}, but ranks {differ} "
                    f"hold values different from rank {first} (global ranks of one group of the axis)"
                )
        return
    high = _comm.all_reduce(data, group, "max")
    low = _comm.all_reduce(data, group, "min")
    if not _same(high, low):
        raise SpmdTypeCheckError(
            f"assert_type: the tensor is declared {code} on axis {group.label!r}, but the ranks of the axis "
            f"hold different values (rank {group.rank} of the axis sees the difference)"
        )


# -- the cross-rank check of a collective's arguments ---------------------------------

_DTYPES: Final = tuple(sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str))
_SLOTS: Final = 8  # shape entries exchanged; a longer shape's tail is folded into the last one
_HEAD: Final = 5  # call digest, arguments digest, dtype, ndim, the dim allowed to differ


def check_ranks_agree(x: torch.Tensor, group: Group, call: str, extra: object, loose_dim: int | None) -> None:
    """Raise on every rank of ``group`` unless all of them run ``call`` on tensors of one dtype and shape.

    ``call`` describes the collective (``"all_gather(V -> R)"``), ``extra``
    its other arguments (``split_sizes``, a permutation); ``loose_dim`` is a
    dim whose length may differ (an uneven shard).  Under ``LocalTensorMode``
    the simulated ranks' tensors are compared directly; on real ranks the
    ranks all-gather a small int64 signature.  Skipped while compiling.
    """
    if torch.compiler.is_compiling():
        return
    head = (zlib.crc32(call.encode()), zlib.crc32(repr(extra).encode()))
    local = local_tensors(x)
    if local is not None:
        for members in group.members():
            signatures = [(r, _signature(local[r], head, loose_dim)) for r in members if r in local]
            _compare(call, extra, group, head, signatures)
        return
    if simulated() is not None:  # a plain tensor under LocalTensorMode: the call itself says what is wrong
        return
    mine = torch.tensor(_signature(x, head, loose_dim), dtype=torch.int64, device=x.device)
    rows = _comm.all_gather(mine, group)
    ranks = _dist.process_group_ranks(group.pg)
    _compare(call, extra, group, head, list(zip(ranks, map(tuple, rows.view(group.size, -1).tolist()))))


def check_exchange_sizes(
    call: str, group: Group, sends: tuple[int, ...], gets: tuple[int, ...], device: torch.device
) -> None:
    """Raise unless every rank expects from each rank what that rank sends it.

    ``sends[k]`` is what this rank sends rank ``k`` of ``group``, ``gets[k]``
    what it expects from rank ``k`` (the ``split_sizes`` and
    ``out_split_sizes`` of an uneven ``all_to_all``).  On simulated ranks the
    check is free and always made; on real ranks it costs one all-gather of
    the sizes, made only with run-time checks on (and not while compiling).
    """
    mode = simulated()
    n = group.size
    if mode is not None:
        sent = [rank_values(size, mode.ranks) for size in sends]
        got = [rank_values(size, mode.ranks) for size in gets]
        for members in group.members():
            for i, sender in enumerate(members):
                for j, receiver in enumerate(members):
                    if sent[j][sender] != got[i][receiver]:
                        _sizes_differ(call, group, sender, receiver, sent[j][sender], got[i][receiver], i, j)
        return
    if not _enabled or torch.compiler.is_compiling():
        return
    # Every rank gets every rank's sizes, so that a mismatch raises on all of them (none is left waiting).
    mine = torch.tensor([[*sends, *gets]], dtype=torch.int64, device=device)
    rows = _comm.all_gather(mine, group).tolist()  # rank k's sends, then what it expects
    for i in range(n):
        for j in range(n):
            if rows[i][j] != rows[j][n + i]:
                ranks = _dist.process_group_ranks(group.pg)
                _sizes_differ(call, group, ranks[i], ranks[j], rows[i][j], rows[j][n + i], i, j)


def _sizes_differ(call: str, group: Group, sender: int, receiver: int, sent: int, expected: int, i: int,
                  j: int) -> NoReturn:
    raise ShapeError(
        f"{call} on axis {group.label!r}: rank {sender} sends {sent} to rank {receiver} (its split_sizes[{j}]), "
        f"but rank {receiver} expects {expected} from it (its out_split_sizes[{i}]) (global ranks); pass "
        f"out_split_sizes that are the senders' split_sizes for this rank, or leave it out to have them exchanged"
    )


def _signature(t: torch.Tensor, head: tuple[int, int], loose_dim: int | None) -> tuple[int, ...]:
    shape = list(t.shape)
    if len(shape) > _SLOTS:
        shape[_SLOTS - 1 :] = [-1]
    dtype = _DTYPES.index(t.dtype) if t.dtype in _DTYPES else -1
    return (*head, dtype, t.dim(), -1 if loose_dim is None else loose_dim, *shape, *[0] * (_SLOTS - len(shape)))


def _render(sig: tuple[int, ...]) -> str:
    dtype = str(_DTYPES[sig[2]]).removeprefix("torch.") if sig[2] >= 0 else "?"
    ndim = sig[3]
    dims = [str(d) for d in sig[_HEAD : _HEAD + min(ndim, _SLOTS)]]
    if ndim > _SLOTS:
        dims[-1] = "..."
    return f"{dtype}[{', '.join(dims)}]"


def _compare(
    call: str, extra: object, group: Group, head: tuple[int, int], sigs: list[tuple[int, tuple[int, ...]]]
) -> None:
    others = [r for r, sig in sigs if sig[:2] != head]
    if others:
        args = "" if extra is None else f" (split_sizes or permutation {extra})"
        raise CollectiveArgumentError(
            f"{call} on axis {group.label!r}: this rank runs {call}{args}, but rank(s) "
            f"{', '.join(map(str, others))} run a different collective or pass different src=/dst=, dims, "
            f"split_sizes or perm; every rank of the axis must make the same call"
        )
    first, ref = sigs[0]
    loose = _HEAD + ref[4] if ref[4] >= 0 else None
    differ = [(r, sig) for r, sig in sigs if [v for i, v in enumerate(sig) if i != loose] != [
        v for i, v in enumerate(ref) if i != loose
    ]]
    if differ:
        same = "the same dtype and shape" if loose is None else f"the same dtype and shape except dim {ref[4]}"
        listed = "; ".join(f"rank {r} has {_render(sig)}" for r, sig in [(first, ref), *differ[:7]])
        raise ShapeError(
            f"{call} on axis {group.label!r}: every rank of the axis must pass a tensor of {same}, but {listed} "
            f"(global ranks); make the ranks' tensors agree (pad them, or use split_sizes= for uneven shards)"
        )


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))
    return bool(torch.equal(a, b))


@contextlib.contextmanager
def _no_simulation() -> Iterator[None]:
    """Run plain-tensor comparisons with ``LocalTensorMode`` (if any) switched off."""
    try:
        from torch.distributed._local_tensor import maybe_disable_local_tensor_mode
    except ImportError:  # pragma: no cover - older torch
        yield
        return
    with maybe_disable_local_tensor_mode():
        yield
