"""Axes of size one: where a program has tested that an axis has one rank, its SPMD types coincide.

On an axis with a single rank every collective is the identity in both
directions (an all-reduce, an all-gather or a reduce-scatter over one rank
returns its input, and so does its backward), so ``R``, ``I``, ``V``, ``P``
and every shard describe the same tensor there, and any of them fits any
other.  Real code relies on this in its fast paths::

    if get_tensor_model_parallel_world_size() == 1:
        return input_                     # V returned as R: right, on one rank

Only the tested axis is affected: a mismatch on any other axis is still one.
The same holds where the branches of such a test meet: a branch that runs
only with one rank on an axis does not constrain the joined type on that
axis (:func:`merge_guarded_paths`), as in Megatron's embedding::

    if tp_size > 1:
        masked_input = input_ - vocab_start_index   # V
    else:
        masked_input = input_                       # R, taken as V: one rank

This module says which tests establish that an axis has one rank, and which
violations remain inside the code such a test guards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from spmd_types.typesystem.join import merge_paths
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Violation

__all__ = ["SIZE_GETTERS", "merge_guarded_paths", "on_size_one", "size_one_when"]

SIZE_GETTERS: Final[dict[str, str]] = {
    "megatron.core.parallel_state.get_tensor_model_parallel_world_size": "tp",
    "megatron.core.parallel_state.get_context_parallel_world_size": "cp",
    "megatron.core.parallel_state.get_expert_model_parallel_world_size": "ep",
}
"""Library functions that return the number of ranks in the process group of a role."""

# For ``size <op> n``: the n for which the comparison being true means exactly one rank,
# and the n for which it being false does.
_ONE_WHEN_TRUE: Final[dict[str, int]] = {"==": 1, "<=": 1, "<": 2}
_ONE_WHEN_FALSE: Final[dict[str, int]] = {"!=": 1, ">": 1, ">=": 2}


def size_one_when(operator: str, bound: int) -> bool | None:
    """Which branch of ``if size <operator> bound:`` runs with one rank on the axis.

    ``True``: the ``if`` branch (``size == 1``, ``size <= 1``, ``size < 2``);
    ``False``: the ``else`` branch (``size > 1``, ``size != 1``, ``size >= 2``);
    ``None``: neither is known to.  A size is at least one.
    """
    if _ONE_WHEN_TRUE.get(operator) == bound:
        return True
    if _ONE_WHEN_FALSE.get(operator) == bound:
        return False
    return None


def on_size_one(violations: Iterable[Violation], axes: frozenset[str]) -> tuple[Violation, ...]:
    """The ``violations`` that still hold where every axis of ``axes`` has one rank: those on other axes.

    A violation that names no axis (a malformed call, a loss of an unknown
    kind) is kept.
    """
    return tuple(v for v in violations if v.axis is None or v.axis not in axes)


def merge_guarded_paths(paths: Sequence[tuple[SpmdType, frozenset[str]]]) -> SpmdType | None:
    """The type of a value that has one of ``paths``' types, each with the axes its path runs with one rank on.

    On such an axis a path's type coincides with every other, so it is taken
    as the type of a path that runs with any number of ranks there (when every
    path runs with one rank, each keeps its own).  The rest is
    :func:`~spmd_types.typesystem.join.merge_paths`: ``None`` if the paths
    still disagree.
    """
    adjusted = []
    for t, axes in paths:
        for axis in sorted(axes):
            unguarded = next((other for other, guarded in paths if axis not in guarded), None)
            if unguarded is not None:
                t = t.with_axis(axis, unguarded.get(axis))
        adjusted.append(t)
    return merge_paths(adjusted)
