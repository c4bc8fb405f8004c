"""``assert_type``: a checked cast for mypy, and an optional run-time check.

Statically, ``assert_type(x, R["dp"], V["tp"])`` tells the type checker what
``x`` is on the named axes (the plugin verifies the claim where it can).  At
run time it returns ``x`` unchanged and, by default, does nothing else.

Run-time checking is off by default.  Turn it on with
``spmd_types.set_runtime_checks(True)`` or by setting the environment variable
``SPMD_TYPES_RUNTIME_CHECKS=1`` before ``spmd_types`` is first used.  Then
each ``assert_type`` verifies what the local data can show:

* ``R`` and ``I`` on an axis: every rank of the axis holds the same values
  (NaNs compare equal).  Under ``LocalTensorMode`` the simulated ranks'
  tensors are compared directly; on real ranks this costs two all-reduces
  (element-wise max and min), so every rank of the axis must reach the call;
* ``S(i)``: the tensor has a dim ``i``;
* ``V`` and ``P``: nothing can be checked from the data.

A failed check raises :class:`~spmd_types._errors.SpmdTypeCheckError` naming
the axis and the ranks that differ.  Axis names need a current mesh
(:func:`~spmd_types._mesh.set_current_mesh`) while checking is on.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, TypeVar

import torch

from spmd_types._errors import SpmdTypeCheckError, SpmdValueError
from spmd_types._mesh import Group, local_tensors, resolve_axis
from spmd_types.typesystem.annotations import AxisTypes
from spmd_types.typesystem.local_types import I, R, Shard

__all__ = ["assert_type", "runtime_checks_enabled", "set_runtime_checks"]

_T = TypeVar("_T", bound=torch.Tensor)

_ENV = "SPMD_TYPES_RUNTIME_CHECKS"
_enabled: bool = os.environ.get(_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def set_runtime_checks(enabled: bool) -> None:
    """``set_runtime_checks(enabled: bool) -> None``: turn ``assert_type``'s run-time verification on or off.

    The setting is process-wide.
    """
    global _enabled
    _enabled = bool(enabled)


def runtime_checks_enabled() -> bool:
    """``runtime_checks_enabled() -> bool``: whether ``assert_type`` verifies data at run time."""
    return _enabled


def assert_type(x: _T, *types: AxisTypes) -> _T:
    """``assert_type(x, R["dp"], S["tp", 0], ...) -> x``

    A checked cast: the type checker takes ``x`` to have the given local SPMD
    types on the named axes.  At run time it returns ``x`` itself; when
    run-time checks are on (:func:`set_runtime_checks`), it first verifies
    what the data can show (``R``/``I`` axes hold equal values on every rank,
    ``S(i)`` has a dim ``i``) and raises
    :class:`~spmd_types._errors.SpmdTypeCheckError` if it does not.

    Args:
        x: the tensor; returned unchanged.
        types: markers such as ``R["dp"]``, ``V["dp", "cp"]``, ``S["tp", 0]``.
    """
    if _enabled:
        _check(x, types)
    return x


def _check(x: torch.Tensor, types: tuple[AxisTypes, ...]) -> None:
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
    ops: Any = torch.ops._c10d_functional
    values = data.contiguous()
    high = ops.wait_tensor(ops.all_reduce(values, "max", group.name))
    low = ops.wait_tensor(ops.all_reduce(values, "min", group.name))
    if not _same(high, low):
        raise SpmdTypeCheckError(
            f"assert_type: the tensor is declared {code} on axis {group.label!r}, but the ranks of the axis "
            f"hold different values (rank {group.rank} of the axis sees the difference)"
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
