"""Mixed precision: the dtype a collective communicates in, forward and backward.

``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all`` and
``redistribute`` take three keyword arguments, each ``None`` by default::

    comm_dtype       the dtype the forward communication runs in
    out_dtype        the dtype of the result
    grad_comm_dtype  the dtype the backward communication runs in

The forward casts ``x`` to ``comm_dtype``, communicates, and casts the result
to ``out_dtype``, by default back to ``x``'s dtype.  The backward casts the
incoming gradient (whose dtype is the result's) to ``grad_comm_dtype``,
communicates, and returns the gradient in ``x``'s dtype, as autograd requires.
``None`` keeps the dtype at hand: no cast before the forward communication
(``comm_dtype``), the result in ``x``'s dtype (``out_dtype``), no cast of the
gradient before the backward communication (``grad_comm_dtype``).  The two
directions are independent: ``comm_dtype`` alone does not lower the
backward's precision.  Per rank, with ``c``, ``o``, ``g`` the three dtypes and
``d`` the dtype of ``x``::

    forward:   y  = to(o or d)( collective( to(c)(x) ) )
    backward:  gx = to(d)( backward_collective( to(g)(gy) ) )

This is fully sharded data parallelism's standard mixed precision: gather the
``float32`` parameter shards in ``bfloat16`` (half the bytes), and
reduce-scatter their gradients in ``float32`` (sums of many ranks' gradients
lose too much in ``bfloat16``)::

    w = all_gather(shard, "dp", src=S(0), dst=R,
                   comm_dtype=torch.bfloat16, grad_comm_dtype=torch.float32)

``w`` is ``float32`` holding ``bfloat16``-rounded values; with
``out_dtype=torch.bfloat16`` it stays ``bfloat16`` (compute in ``bfloat16``,
and no full-size ``float32`` copy), and the gradient, arriving in
``bfloat16``, is raised to ``float32`` before the reduce-scatter.

Sums run in the communication dtype: ``all_reduce(x, ..., comm_dtype=torch.bfloat16)``
rounds each rank's summand to ``bfloat16``, and the backend adds values of
that dtype (its partial sums travel in it), so the rounding error grows with
the number of ranks; the order of the additions is the backend's.  With
``op="avg"`` the division by the axis size happens after the cast to
``out_dtype``.  A call that does not communicate
(``redistribute`` routed to ``convert``, or to the identity) applies only
``out_dtype``.  The types are unchanged: a dtype is not part of the SPMD type,
and the checker accepts the three arguments on every call that takes them.

The options are for floating-point and complex data: each must be a
``torch.dtype`` of the same kind as ``x`` (floating point for a real ``x``,
complex for a complex one), otherwise the call raises
:class:`~spmd_types._errors.CollectiveArgumentError`.  An integer ``x`` with
any of them is refused the same way: casting counts or indices to another
dtype is a bug, not a precision choice.  Without the options no cast is
made: the call only checks that none was given.
"""

from __future__ import annotations

import torch

from spmd_types._errors import CollectiveArgumentError
from spmd_types._prims import Precision

__all__ = ["precision"]


def precision(
    call: str,
    x: torch.Tensor,
    comm_dtype: torch.dtype | None,
    out_dtype: torch.dtype | None,
    grad_comm_dtype: torch.dtype | None,
) -> Precision | None:
    """The checked ``(comm, out, grad_comm)`` dtypes of ``call``, or ``None`` when none was given."""
    if comm_dtype is None and out_dtype is None and grad_comm_dtype is None:
        return None
    complex_x = x.is_complex()
    if not (complex_x or x.is_floating_point()):
        raise CollectiveArgumentError(
            f"{call}: comm_dtype=, out_dtype= and grad_comm_dtype= are for floating-point data, but x is "
            f"{x.dtype}; communicate it in its own dtype (drop them), or convert x first if that is intended"
        )
    kind = "complex" if complex_x else "floating-point"
    for name, dtype in (("comm_dtype", comm_dtype), ("out_dtype", out_dtype), ("grad_comm_dtype", grad_comm_dtype)):
        if dtype is None:
            continue
        if not isinstance(dtype, torch.dtype):
            raise CollectiveArgumentError(f"{call}: {name} must be a torch.dtype such as torch.bfloat16, got {dtype!r}")
        if dtype.is_complex != complex_x or not (dtype.is_complex or dtype.is_floating_point):
            raise CollectiveArgumentError(
                f"{call}: {name}={dtype} does not fit x of dtype {x.dtype}; pass a {kind} dtype"
            )
    return (comm_dtype, out_dtype, grad_comm_dtype)
