"""spmd_types.typesystem.bounded_put: answers remembered by key, at most a limit of them."""

from __future__ import annotations

from spmd_types.typesystem import bounded_put


def test_an_answer_is_remembered_and_returned() -> None:
    memo: dict[str, int | None] = {}
    assert bounded_put(memo, "a", 1, 4) == 1
    assert bounded_put(memo, "none", None, 4) is None
    assert memo == {"a": 1, "none": None}  # None is an answer, told apart with `in`


def test_a_full_memo_starts_again_empty() -> None:
    memo: dict[int, str] = {}
    bounded_put(memo, 1, "one", 2)
    bounded_put(memo, 2, "two", 2)
    bounded_put(memo, 3, "three", 2)  # the limit was reached: the memo emptied before remembering this
    assert memo == {3: "three"}


def test_answering_again_replaces_the_answer() -> None:
    memo: dict[str, int] = {}
    bounded_put(memo, "a", 1, 1)
    bounded_put(memo, "a", 2, 1)  # full, so it empties first; the key is the same either way
    assert memo == {"a": 2}
