"""DTensor's boundaries with local code under runtime checking: ``to_local`` typed, ``from_local`` checked.

A DTensor's own ops are not tracked (their communication is DTensor's); what
runtime checking follows is the local tensors on either side.  While
checking is on, ``DTensor.to_local`` and ``DTensor.from_local`` are replaced
(:func:`~spmd_types._rebinding.replace_attributes`) by wrappers that hand
each call to the tracker, which types ``d.to_local(grad_placements=g)`` by
the rule core's :func:`~spmd_types.typesystem.to_local_type` and checks the
tensor given to ``from_local`` by :func:`~spmd_types.typesystem.check_from_local`,
as the plugin does.  ``local_map`` calls both, so the function it wraps is
checked too when it is declared (``@checked``).

This module reads torch's placements as the core's: ``Shard(i)``,
``Replicate()``, ``Partial()`` of a sum, on a mesh whose dims are named.
Anything else (another reduction, a strided shard, a mesh without dim names)
leaves the call unchecked and its result unknown.  DTensor is replaced only
when ``torch.distributed.tensor`` is loaded when checking starts.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

from spmd_types._rebinding import replace_attributes
from spmd_types.typesystem import Placement, Placements

__all__ = ["FromLocal", "ToLocal", "layout", "replace_boundaries"]

ToLocal = Callable[[Callable[..., Any], Any, Any], Any]
"""``(to_local, d, grad_placements)``: the tracker's ``d.to_local(grad_placements=...)``."""

FromLocal = Callable[[Callable[..., Any], inspect.BoundArguments], Any]
"""``(from_local, arguments)``: the tracker's ``DTensor.from_local(...)``, its arguments bound by name."""


def replace_boundaries(to_local: ToLocal, from_local: FromLocal) -> Callable[[], None]:
    """Route DTensor's ``to_local`` and ``from_local`` through ``to_local`` and ``from_local``; returns the undo."""
    api = sys.modules.get("torch.distributed.tensor._api")
    if api is None:
        return lambda: None
    dtensor = api.DTensor
    original_to_local = dtensor.to_local
    original_from_local = dtensor.from_local
    signature = inspect.signature(original_from_local)

    def checked_to_local(self: Any, *, grad_placements: Any = None) -> Any:
        return to_local(original_to_local, self, grad_placements)

    def checked_from_local(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original_from_local(*args, **kwargs)  # the call itself reports the wrong arguments
        return from_local(original_from_local, bound)

    return replace_attributes(dtensor, {"to_local": checked_to_local, "from_local": staticmethod(checked_from_local)})


def layout(mesh: object, placements: Sequence[object] | None,
           grads: Sequence[object] | None) -> tuple[Placements, tuple[Placement, ...] | None] | None:
    """torch's ``placements`` (and ``grad_placements``) on ``mesh`` as the core's; ``None`` if any is unknown."""
    names = getattr(mesh, "mesh_dim_names", None)
    if not names or placements is None or len(placements) != len(names):
        return None
    forward = tuple(map(_placement, placements))
    backward = tuple(map(_placement, grads)) if grads is not None else None
    if None in forward or (backward is not None and (None in backward or len(backward) != len(names))):
        return None
    kept = tuple(p for p in forward if p is not None)
    return Placements(tuple(names), kept), (tuple(p for p in backward if p is not None) if backward else None)


def _placement(p: object) -> Placement | None:
    """The core's placement for torch's ``p``: only ``Shard``, ``Replicate`` and a sum's ``Partial`` themselves."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    if type(p) is Shard:
        return Placement("Shard", p.dim)
    if type(p) is Replicate:
        return Placement("Replicate")
    if type(p) is Partial and p.reduce_op == "sum":
        return Placement("Partial")
    return None
