"""How a global tensor is laid out over the ranks of a named mesh, by its SPMD type.

On each mesh axis of ``n`` ranks, rank ``k`` of the axis holds

=========  ===========================================================
type       rank ``k``'s local tensor, for a global value ``X``
=========  ===========================================================
``R, I``   ``X`` itself
``S(d)``   chunk ``k`` of ``X`` along dim ``d``
``V``      ``X[k]`` (a varying value is the list of the ranks' tensors)
``P``      the ``k``-th of ``n`` random tensors whose sum is ``X``
=========  ===========================================================

and a mesh of several axes applies the axes in mesh order.  :func:`split`
cuts a value into the pieces of one axis; :func:`join` puts them back
together (concatenates shards, stacks ``V``, sums ``P``, and for ``R``/``I``
checks that the ranks really agree).  :class:`MeshLayout` is what the example
checks need from a set of ranks, simulated (:mod:`examples.simulation`) or real
processes (:mod:`examples.real_ranks`).
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch.distributed.device_mesh import DeviceMesh

from spmd_types import I, P, R, Shard, V
from spmd_types.typesystem import AxisType, SpmdType

__all__ = ["MeshLayout", "ReplicasDiffer", "join", "split"]


class ReplicasDiffer(AssertionError):
    """Ranks that should hold the same tensor (type ``R`` or ``I`` on an axis) do not."""


@dataclass(frozen=True)
class MeshLayout(abc.ABC):
    """A named mesh of ranks; subclasses say how a value reaches the ranks and comes back.

    ``distribute`` gives the ranks their pieces of a global value, ``collect``
    rebuilds the global value from the pieces, and inside ``one_device()``
    torch runs once, as on one device (for the single-device reference).
    """

    mesh: DeviceMesh
    sizes: Mapping[str, int]

    @property
    @abc.abstractmethod
    def description(self) -> str:
        """Where the ranks run, for a report's title."""
        raise NotImplementedError

    def axis_types(self, spmd_type: SpmdType) -> list[AxisType]:
        """The type on every mesh axis, in mesh order; every axis must be declared."""
        types = []
        for axis in self.sizes:
            t = spmd_type.get(axis)
            if t is None:
                raise ValueError(f"the type {spmd_type.describe()!r} does not say what the tensor is on axis {axis!r}")
            types.append(t)
        return types

    def global_shape(self, local_shape: torch.Size, spmd_type: SpmdType) -> torch.Size:
        """The shape of the global value whose local tensors have ``local_shape``."""
        shape = list(local_shape)
        for n, t in zip(reversed(list(self.sizes.values())), reversed(self.axis_types(spmd_type))):
            if isinstance(t, Shard):
                shape[t.dim] *= n
            elif t is V:
                shape.insert(0, n)
        return torch.Size(shape)

    @abc.abstractmethod
    def distribute(self, value: torch.Tensor, spmd_type: SpmdType, generator: torch.Generator) -> torch.Tensor:
        """The local tensor(s) of the global ``value`` laid out as ``spmd_type``; ``generator`` draws ``P`` summands."""
        raise NotImplementedError

    @abc.abstractmethod
    def collect(self, local: torch.Tensor, spmd_type: SpmdType) -> torch.Tensor:
        """The global value of the local tensor(s) ``local`` of type ``spmd_type``.

        Raises :class:`ReplicasDiffer` where the type says the ranks agree and they do not.
        """
        raise NotImplementedError

    @abc.abstractmethod
    def one_device(self) -> contextlib.AbstractContextManager[None]:
        """Inside this block, torch runs as usual, once, on plain tensors (for references)."""
        raise NotImplementedError


def split(value: torch.Tensor, t: AxisType, n: int, generator: torch.Generator) -> list[torch.Tensor]:
    """The ``n`` ranks' pieces of ``value`` on one axis of type ``t``."""
    if t is R or t is I:
        return [value] * n
    if isinstance(t, Shard):
        if value.shape[t.dim] % n:
            raise ValueError(f"dim {t.dim} of shape {tuple(value.shape)} does not split into {n} equal shards")
        return list(value.chunk(n, t.dim))
    if t is V:
        if value.shape[0] != n:
            raise ValueError(f"a V value is one entry per rank along dim 0: need {n} entries, got shape {tuple(value.shape)}")
        return list(value.unbind(0))
    if t is P:
        if not value.is_floating_point():
            raise ValueError(f"a {value.dtype} tensor cannot be a pending sum")
        parts = [torch.randn(value.shape, generator=generator, dtype=value.dtype) for _ in range(n - 1)]
        return [*parts, value - sum(parts, torch.zeros_like(value))]
    raise ValueError(f"cannot lay out a tensor of type {t!r}")


def join(parts: list[torch.Tensor], t: AxisType, axis: str) -> torch.Tensor:
    """The value that the ranks' ``parts`` on one axis of type ``t`` denote."""
    if t is R or t is I:
        for k, part in enumerate(parts[1:], start=1):
            if part.shape != parts[0].shape or not torch.allclose(part, parts[0], rtol=1e-6, atol=1e-9):
                raise ReplicasDiffer(
                    f"type {t!r} on axis {axis!r} says every rank holds the same tensor, "
                    f"but rank {k} of the axis differs from rank 0"
                )
        return parts[0]
    if isinstance(t, Shard):
        return torch.cat(parts, t.dim)
    if t is V:
        return torch.stack(parts)
    if t is P:
        return torch.stack(parts).sum(0)
    raise ValueError(f"cannot collect a tensor of type {t!r}")
