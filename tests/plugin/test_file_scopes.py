"""The one walk of a file's statements (:func:`spmd_mypy.compat.file_scopes`) that every file fact is read from.

Each statement lands once, in the scope of its innermost function, and
within a line the later assignment comes first, so that "the last value
assigned before a use" stays the last one written.
"""

from __future__ import annotations

import textwrap

import pytest
from mypy.nodes import FuncDef, IntExpr, MypyFile, Node

from spmd_mypy.compat import Scope, check_with_types, file_scopes, name_assignments, statements_in

SOURCE = '''
    from contextlib import nullcontext
    from typing import overload

    x = 1; x = 2

    def outer(a: int) -> int:
        b = a
        def inner(c: int) -> int:
            d = c; d = c + 1
            return d
        class Local:
            def method(self) -> None:
                self.e = 1
        if a:
            with nullcontext():
                for i in range(a):
                    b += i
        else:
            try:
                b = 2
            except ValueError:
                b = 3
            finally:
                pass
        while b:
            b -= 1
        return inner(b)

    class C:
        @staticmethod
        def static(f: int) -> int:
            return f

        @overload
        def over(self, g: int) -> int: ...
        @overload
        def over(self, g: str) -> str: ...
        def over(self, g: int | str) -> int | str:
            return g
'''


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> MypyFile:
    folder = tmp_path_factory.mktemp("scopes")
    path = folder / "walked.py"
    path.write_text(textwrap.dedent(SOURCE), encoding="utf-8")
    run = check_with_types([str(path), "--cache-dir", str(folder / "cache")])
    assert run.status == 0, run.output
    return run.trees[str(path)]


def _functions(node: Node) -> list[FuncDef]:
    """The functions in ``node`` (a module or a function), nested ones included, in the order of the walk."""
    return [inner for inner in statements_in(node) if isinstance(inner, FuncDef)]


def _own(function: FuncDef) -> set[int]:
    """The statements of ``function``, less its body block and the functions in it with all they hold."""
    inside = {id(node) for node in statements_in(function)} - {id(function.body)}
    for nested in _functions(function):
        inside -= {id(nested), *(id(node) for node in statements_in(nested))}
    return inside


def test_every_function_is_a_scope_in_the_order_of_the_walk(tree: MypyFile) -> None:
    scopes = file_scopes(tree)
    assert scopes[0].function is None and scopes[0].body is tree.defs
    assert [scope.function for scope in scopes[1:]] == _functions(tree)
    assert sorted(scope.function.name for scope in scopes[1:] if scope.function is not None) == [
        "inner", "method", "outer", "over", "over", "over", "static"]


def test_each_statement_lands_once_in_its_innermost_function(tree: MypyFile) -> None:
    scopes = file_scopes(tree)
    held = [id(node) for scope in scopes for node in scope.statements]
    assert len(held) == len(set(held))
    functions = _functions(tree)
    outside = {id(node) for node in statements_in(tree)} - {id(f) for f in functions} - {id(f.body) for f in functions}
    assert set(held) == outside
    for scope in scopes[1:]:
        assert scope.function is not None
        assert {id(node) for node in scope.statements} == _own(scope.function)
        assert (scope.first, scope.last) == (scope.function.line, scope.function.end_line)


def _values(scopes: list[Scope], name: str) -> list[Node]:
    return [value for _, _, _, value in name_assignments(scopes)[name]]


def test_within_a_line_the_later_assignment_comes_first(tree: MypyFile) -> None:
    scopes = file_scopes(tree)
    assert [value.value for value in _values(scopes, "x") if isinstance(value, IntExpr)] == [2, 1]
    assert [getattr(value, "op", None) for value in _values(scopes, "d")] == ["+", None]
