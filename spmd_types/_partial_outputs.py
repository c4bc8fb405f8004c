"""Contractions with an explicit partial output: ``einsum``, ``matmul``, ``linear`` and ``sum``.

Each is the torch op of the same name, plus ``out_partial_axes=``: the mesh
axes (a name or a tuple of names) on which the ranks' local results are the
summands of the global result.  ``matmul(x, w, out_partial_axes="tp")`` is
``reinterpret(torch.matmul(x, w), "tp", src=V, dst=P)``, one call per listed
axis: the local op, then a change of type that leaves the data alone, forward
and backward (the gradient of the ``P`` result is ``R``, the same on every
rank, which the op's backward takes as its ``V`` gradient).

It is how a row-parallel linear layer says where its pending sum comes from:
the activations and the weight are both cut along the contracted dim on
``tp``, so each rank's product is one summand::

    y = spmd.matmul(x, w, out_partial_axes="tp")       # x: V, w: S(0) on tp -> y: P
    y = spmd.all_reduce(y, "tp", src=P, dst=R)

On each listed axis the op's local result must be ``V``: an ``R``, ``I`` or
``P`` result, or a shard ``S(i)``, is an error under
[runtime checking](runtime_checking.md) and in the checker, as is a bias
passed to ``linear`` together with ``out_partial_axes`` (it would be added
once per rank; add it after the reduction).  Without ``out_partial_axes``
each function is its torch op.  The axes must be axes of the
[current mesh](mesh.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from spmd_types._checking import partial_output
from spmd_types._errors import CollectiveArgumentError
from spmd_types._local import reinterpret
from spmd_types.typesystem import PARTIAL_OUTPUT_FUNCTIONS, P, V, partial_axes, partial_output_bias

__all__ = ["einsum", "linear", "matmul", "sum"]

def _run(name: str, op: Callable[..., torch.Tensor], args: tuple[Any, ...], kwargs: dict[str, Any],
         out_partial_axes: object) -> torch.Tensor:
    """``op(*args, **kwargs)``, reinterpreted from ``V`` to ``P`` on each of ``out_partial_axes``."""
    function = PARTIAL_OUTPUT_FUNCTIONS[name]
    axes, problem = partial_axes(out_partial_axes)
    if axes is None:
        raise CollectiveArgumentError(f"{function.where}: {problem}")
    if axes and kwargs.get("bias") is not None:
        raise CollectiveArgumentError.from_violation(function.where, partial_output_bias(function, axes))

    def run() -> torch.Tensor:
        out = op(*args, **kwargs)
        for axis in axes:
            out = reinterpret(out, axis, src=V, dst=P)
        return out

    if not axes:
        return run()
    return partial_output(function, op, args, kwargs, axes, run)


def einsum(equation: str, *operands: torch.Tensor, out_partial_axes: str | tuple[str, ...] = ()) -> torch.Tensor:
    """``einsum(equation, *operands: V, out_partial_axes: axes) -> P on axes``

    ``torch.einsum(equation, *operands)``; on each axis of
    ``out_partial_axes`` the local result (``V`` there) becomes ``P``: the
    ranks' results are the summands of the global one::

        x: V, w: S(0) on tp
        einsum("bk,kn->bn", x, w, out_partial_axes="tp")

        +X0 W0
        +X1 W1  =  X W   (summed over the ranks)
        +X2 W2

    Args:
        equation: the einsum equation, as for ``torch.einsum``.
        operands: the tensors it contracts.
        out_partial_axes: a mesh-axis name or a tuple of them (default: none).

    Returns:
        ``torch.einsum``'s result, of type ``P`` on ``out_partial_axes``.

    **Backward**: the op's own; the gradient of the ``P`` result is ``R``
    (the same on every rank), which reaches each rank's op unchanged.
    """
    return _run("einsum", torch.einsum, (equation, *operands), {}, out_partial_axes)


def matmul(input: torch.Tensor, other: torch.Tensor, *,
           out_partial_axes: str | tuple[str, ...] = ()) -> torch.Tensor:
    """``matmul(input: V, other: V, out_partial_axes: axes) -> P on axes``

    ``torch.matmul(input, other)``; on each axis of ``out_partial_axes`` the
    local product (``V`` there) becomes ``P``.  The row-parallel matmul,
    ``input`` cut along its last dim and ``other`` along its first::

        [X0 | X1 | X2] @ [W0; W1; W2]

        X0 @ W0      +X0 @ W0
        X1 @ W1  =>  +X1 @ W1
        X2 @ W2      +X2 @ W2

    Args:
        input: the left operand.
        other: the right operand.
        out_partial_axes: a mesh-axis name or a tuple of them (default: none).

    Returns:
        ``torch.matmul``'s result, of type ``P`` on ``out_partial_axes``.

    **Backward**: the op's own; the ``R`` gradient of the result reaches
    each rank's product unchanged::

        G      G
        G  <=  G
        G
    """
    return _run("matmul", torch.matmul, (input, other), {}, out_partial_axes)


def linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
           out_partial_axes: str | tuple[str, ...] = ()) -> torch.Tensor:
    """``linear(input: V, weight: V, bias = None, out_partial_axes: axes) -> P on axes``

    ``torch.nn.functional.linear(input, weight, bias)``; on each axis of
    ``out_partial_axes`` the local result (``V`` there) becomes ``P``.  The
    row-parallel linear layer: ``input`` cut along its last dim, ``weight``
    along its last dim (``S(1)``), each rank's product one summand.

    A ``bias`` together with ``out_partial_axes`` raises
    :class:`~spmd_types._errors.CollectiveArgumentError`: it would be added
    on every rank, so the sum would count it once per rank.  Add it after
    the reduction::

        y = spmd.linear(x, w, out_partial_axes="tp")
        y = spmd.all_reduce(y, "tp", src=P, dst=R) + bias

    or keep the sum pending and add the bias once:
    ``y + spmd.convert(bias, "tp", src=R, dst=P)``.

    Args:
        input: the activations.
        weight: the weight, ``(out_features, in_features)``.
        bias: the bias; only without ``out_partial_axes``.
        out_partial_axes: a mesh-axis name or a tuple of them (default: none).

    Returns:
        ``linear``'s result, of type ``P`` on ``out_partial_axes``.

    **Backward**: the op's own; the gradient of the ``P`` result is ``R``,
    which reaches each rank's product unchanged.
    """
    return _run("linear", torch.nn.functional.linear, (input, weight), {"bias": bias}, out_partial_axes)


def sum(input: torch.Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        out_partial_axes: str | tuple[str, ...] = ()) -> torch.Tensor:
    """``sum(input: V, dim = None, keepdim = False, out_partial_axes: axes) -> P on axes``

    ``torch.sum(input, dim, keepdim)`` (every dim when ``dim`` is ``None``);
    on each axis of ``out_partial_axes`` the local sum (``V`` there) becomes
    ``P``: summing over a dim cut across the ranks leaves each rank one
    summand of the global sum (here ``x: S(0)``, summed over dim 0)::

        X0      +sum(X0)
        X1  =>  +sum(X1)
        X2      +sum(X2)

    Args:
        input: the tensor to sum.
        dim: the dim or dims to sum over; ``None``: all.
        keepdim: keep the summed dims, with size 1.
        out_partial_axes: a mesh-axis name or a tuple of them (default: none).

    Returns:
        The sum, of type ``P`` on ``out_partial_axes``.

    **Backward**: the op's own (every summed element gets the gradient of its
    sum); the gradient of the ``P`` result is ``R``.
    """
    return _run("sum", torch.sum, (input,), {"dim": dim, "keepdim": keepdim}, out_partial_axes)
