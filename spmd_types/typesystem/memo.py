"""Bounded memos: answers remembered by key, forgotten all at once when there are too many.

The checker asks the same few questions thousands of times (the rule of an op
name, the route of a collective, what an argument reads as), so it remembers
the answers in plain ``dict``\\ s; a daemon runs on for days, so every such
memo is bounded, and every answer goes in through :func:`bounded_put`.  A
full memo starts again empty rather than evicting one entry at a time: the
questions of one program fit many times over, so emptying is rare, and the
lookups stay the ``dict``'s own (``memo.get(key)``, ``key in memo``), which
Python and mypyc run faster on a ``dict`` than on any subclass or wrapper.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["bounded_put"]

Key = TypeVar("Key")
Answer = TypeVar("Answer")


def bounded_put(memo: dict[Key, Answer], key: Key, answer: Answer, limit: int) -> Answer:
    """Remember ``answer`` for ``key`` in ``memo``, first emptying ``memo`` if it holds ``limit`` answers;
    returns ``answer``."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = answer
    return answer
