"""``local_region``: a function that is local SPMD on chosen mesh axes, inside a global program.

The rule is the core's (:mod:`spmd_types.typesystem.regions`); this module
runs it.  Without runtime checking the wrapped function costs one extra call
(this wrapper's); with it, the function's annotations are also checked as
:func:`~spmd_types._checking.checked` checks them.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch

from spmd_types import _checking, _mesh
from spmd_types._errors import SpmdValueError
from spmd_types.typesystem import PartitionSpec, Region, region_input, region_output, region_problem

__all__ = ["local_region"]

_F = TypeVar("_F", bound=Callable[..., Any])


def local_region(
    axes: str | tuple[str, ...],
    *,
    in_specs: tuple[PartitionSpec | None, ...],
    out_specs: PartitionSpec | tuple[PartitionSpec | None, ...],
) -> Callable[[_F], _F]:
    """``@local_region(axes, in_specs=..., out_specs=...)``: run the function in local SPMD on ``axes``.

    The decorated function is local SPMD on ``axes`` (a mesh-axis name or a
    tuple of them): values may be ``V`` there and the global rules are not
    applied on them.  On the other axes it is global, as a
    :func:`~spmd_types.global_spmd` function is.  ``in_specs`` gives one
    :class:`~spmd_types.PartitionSpec` (or ``None`` for a non-tensor) per
    positional parameter (``self`` included, for a method): how the
    argument is laid out on entry.  The parameter then holds the spec's
    per-axis types (``S(i)`` on an axis cutting dim ``i``, ``P`` on a partial
    one, ``R`` elsewhere).  ``out_specs`` (a spec, or a tuple with one per
    returned value) re-states the result on exit: on a region axis the
    function may return ``V`` where the spec cuts a dim (its pieces are that
    dim's shards) or is partial (the ranks hold summands), and otherwise a
    value whose type fits the spec's.  The caller sees the specs' types.

    ``local_region(...)(fn)`` is the call form.  Under runtime checking the
    arguments are checked against ``in_specs`` and the results against
    ``out_specs`` (``spmd-boundary``), and the function's own annotations as
    :func:`~spmd_types.checked` checks them.  Malformed arguments raise
    :class:`~spmd_types.SpmdValueError` when the decorator is applied, and
    an axis outside the current mesh at the first checked call.
    """
    problem = region_problem(axes, in_specs, out_specs)
    if problem is not None:
        raise SpmdValueError(f"local_region: {problem.reason}")
    names = (axes,) if isinstance(axes, str) else axes

    def decorate(fn: _F) -> _F:
        inner = _checking.checked(fn)
        regions: dict[tuple[str, ...], Region] = {}

        @functools.wraps(fn)
        def region_call(*args: Any, **kwargs: Any) -> Any:
            tracker = _checking._ACTIVE
            if tracker is None or tracker._paused or torch.compiler.is_compiling():
                return fn(*args, **kwargs)
            mesh = _mesh.current_mesh()
            dims = tuple(mesh.mesh_dim_names or ()) if mesh is not None else ()
            region = regions.get(dims)
            if region is None:
                found = region_problem(names, in_specs, out_specs, dims or None)
                if found is not None:
                    raise SpmdValueError(f"local_region of {fn.__qualname__}: {found.reason}")
                region = regions[dims] = Region.of(names, in_specs, out_specs, dims)
            where = f'local_region "{fn.__qualname__}"'
            for k, arg in enumerate(args[:len(region.inputs)]):
                if isinstance(arg, torch.Tensor):
                    tracker._report(region_input(region, k, tracker._known(arg), None), f"{where} argument {k}",
                                    value=f"args[{k}]")
            outer = tracker._local_axes
            tracker._local_axes = outer | frozenset(names)
            tracker._global += 1  # global on the other axes
            try:
                out = inner(*args, **kwargs)
            finally:
                tracker._global -= 1
                tracker._local_axes = outer
            results: Sequence[object] = (out,) if region.one_output else out if isinstance(out, tuple) else ()
            for j, (value, spec) in enumerate(zip(results, region.outputs)):
                if isinstance(value, torch.Tensor) and spec is not None:
                    tracker._report(region_output(region, j, tracker._known(value)), f"{where} output {j}",
                                    value="out")
                    tracker._set(value, spec)
            return out

        return typing.cast(_F, region_call)

    return decorate
