"""Answers remembered by the identity of a mypy object.

mypy shares one type or signature object among the places it flows to (a
parameter's type at each use of the parameter, a callee's signature at each
call of it, the type an op's result was given) and does not change it, so a
question about its structure has one answer per object.  Keying by ``id()``
is far cheaper than hashing a type, which mypy does structurally.  An entry
keeps its object, so that no other object can take the identity while the
entry lasts; a memo is bounded as every memo of the checker is
(:func:`~spmd_types.typesystem.bounded_put`).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from spmd_types.typesystem import bounded_put

__all__ = ["IdentityMemo"]

Keyed = TypeVar("Keyed")
Answer = TypeVar("Answer")


class IdentityMemo(Generic[Keyed, Answer]):
    """The answer for each object asked about, by the object's identity."""

    def __init__(self, limit: int) -> None:
        self._entries: dict[int, tuple[Keyed, Answer]] = {}
        self._limit = limit

    def get(self, key: Keyed) -> tuple[Keyed, Answer] | None:
        """The entry of ``key`` (``key`` and its answer), if remembered; an answer may itself be ``None``."""
        entry = self._entries.get(id(key))
        return entry if entry is not None and entry[0] is key else None

    def put(self, key: Keyed, answer: Answer) -> Answer:
        """Remember ``answer`` for ``key``; returns ``answer``."""
        bounded_put(self._entries, id(key), (key, answer), self._limit)
        return answer

    def clear(self) -> None:
        """Forget every answer."""
        self._entries.clear()
