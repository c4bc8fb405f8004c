"""spmd_mypy.identity: answers remembered by the identity of the object asked about."""

from __future__ import annotations

import weakref

from mypy.types import AnyType, TypeOfAny

from spmd_mypy.identity import IdentityMemo


def test_an_answer_is_found_for_the_same_object_only() -> None:
    memo: IdentityMemo[AnyType, str] = IdentityMemo(8)
    asked, equal = AnyType(TypeOfAny.explicit), AnyType(TypeOfAny.explicit)
    assert asked == equal
    assert memo.get(asked) is None
    assert memo.put(asked, "first") == "first"
    assert memo.get(asked) == (asked, "first")
    assert memo.get(equal) is None  # equal, but another object: its own question


def test_none_is_an_answer() -> None:
    memo: IdentityMemo[object, str | None] = IdentityMemo(8)
    asked = object()
    memo.put(asked, None)
    assert memo.get(asked) == (asked, None)


def test_an_entry_keeps_its_object_so_its_identity_is_not_reused() -> None:
    class Asked:
        pass

    memo: IdentityMemo[Asked, int] = IdentityMemo(8)
    asked = Asked()
    alive = weakref.ref(asked)
    memo.put(asked, 1)
    del asked
    assert alive() is not None  # while the entry lasts, no other object can have its id
    memo.clear()
    assert alive() is None


def test_a_full_memo_starts_again_and_clear_forgets() -> None:
    memo: IdentityMemo[object, int] = IdentityMemo(2)
    first, second, third = object(), object(), object()
    memo.put(first, 1)
    memo.put(second, 2)
    memo.put(third, 3)  # the limit was reached: the memo started again
    assert (memo.get(first), memo.get(second), memo.get(third)) == (None, None, (third, 3))
    memo.clear()
    assert memo.get(third) is None
