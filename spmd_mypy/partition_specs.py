"""Reading ``PartitionSpec("dp", None, ("tp", "cp"))``: in ``Annotated[Tensor, ...]`` metadata, and in code.

In code (the specs passed to ``redistribute_spec``), :func:`spec_in_code`
reads mypy's expression: a ``PartitionSpec(...)`` call, or a name bound to
one at module level.  In an annotation, mypy turns a call in an annotation into a placeholder type that keeps only
where the call starts: the line of the annotation (the parameter's line, the
return annotation's line, the line of an annotated assignment) and the
column of the call.  This module reads the call back from the file's source:
it parses the file once (per modification time), indexes the calls written
in annotations by that position, and evaluates the one found there when its
callee is ``PartitionSpec``.  Its entries and ``partial=`` must be literals
(strings, ints, ``None``, tuples), so that the checker knows them.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable, Iterator

from mypy.nodes import (
    ARG_NAMED,
    ARG_POS,
    AssignmentStmt,
    CallExpr,
    Expression,
    IntExpr,
    MypyFile,
    NameExpr,
    RefExpr,
    StrExpr,
    TupleExpr,
)

from spmd_mypy.fullnames import PARTITION_SPEC
from spmd_types.typesystem import AnnotationError, PartitionSpec

__all__ = ["calls_at", "partition_spec", "spec_in_code"]


def calls_at(path: str, line: int, column: int) -> list[ast.Call]:
    """The calls written in annotations of file ``path`` that mypy places at ``line`` and ``column``."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return []
    return _index(path, stamp).get((line, column), [])


@functools.lru_cache(maxsize=64)
def _index(path: str, stamp: int) -> dict[tuple[int, int], list[ast.Call]]:
    """Every call in an annotation of the file, by (the line mypy gives the annotation, the call's column)."""
    try:
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read(), path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    index: dict[tuple[int, int], list[ast.Call]] = {}
    for line, annotation in _annotations(tree):
        for node in ast.walk(annotation):
            if isinstance(node, ast.Call):
                index.setdefault((line, node.col_offset), []).append(node)
    return index


def _annotations(tree: ast.AST) -> Iterator[tuple[int, ast.expr]]:
    """Each annotation with the line mypy's parser gives it (see ``mypy.fastparse``)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                     *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]
            yield from ((a.lineno, a.annotation) for a in every if a.annotation is not None)
            if node.returns is not None:
                yield node.returns.lineno, node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.lineno, node.annotation


def _dotted(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        owner = _dotted(expr.value)
        return f"{owner}.{expr.attr}" if owner is not None else None
    return None


def partition_spec(calls: list[ast.Call], is_spec: Callable[[str], bool]) -> PartitionSpec | None:
    """The spec that the ``PartitionSpec`` call among ``calls`` builds; ``None`` when none is one.

    ``is_spec`` says whether a callee, as written (``PartitionSpec``,
    ``spmd.PartitionSpec``), names the class.  Raises :class:`AnnotationError`
    for a spec that is not literal, is malformed, or cannot be told apart
    from another one at the same position.
    """
    found = [call for call in calls if (name := _dotted(call.func)) is not None and is_spec(name)]
    specs = {_evaluate(call) for call in found}
    if len(specs) > 1:
        raise AnnotationError("two PartitionSpec annotations start at the same line and column; write them on "
                              "lines of their own")
    return specs.pop() if specs else None


def _evaluate(call: ast.Call) -> PartitionSpec:
    entries = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise AnnotationError("PartitionSpec in an annotation takes its entries written out, not *entries")
        entries.append(_literal(arg))
    partial: object = ()
    for keyword in call.keywords:
        if keyword.arg != "partial":
            raise AnnotationError(f"PartitionSpec takes entries and partial=, got {keyword.arg or '**'}=")
        partial = _literal(keyword.value)
    return _built(entries, partial)


def _built(entries: list[object], partial: object) -> PartitionSpec:
    try:
        return PartitionSpec(*entries, partial=partial)  # type: ignore[arg-type]  # checked by the constructor
    except (TypeError, ValueError) as error:
        raise AnnotationError(str(error)) from None


def _literal(arg: ast.expr) -> object:
    try:
        return ast.literal_eval(arg)
    except ValueError:
        raise AnnotationError(
            f"PartitionSpec in an annotation takes literal entries (axis names as strings, None, tuples), "
            f"got {ast.unparse(arg)}; the checker cannot know what a name holds") from None


class _NotLiteral(Exception):
    pass


def spec_in_code(expr: Expression, modules: dict[str, MypyFile] | None) -> PartitionSpec | None:
    """The spec ``expr`` builds: a literal ``PartitionSpec(...)`` call, or a module-level name bound to one.

    ``None`` when it is neither, or is malformed (the call raises at run time).
    """
    if isinstance(expr, NameExpr) and isinstance(expr.fullname, str) and "." in expr.fullname:
        module, _, name = expr.fullname.rpartition(".")
        tree = (modules or {}).get(module)
        bound = [s.rvalue for s in (tree.defs if tree is not None else ())
                 if isinstance(s, AssignmentStmt) and len(s.lvalues) == 1 and isinstance(s.lvalues[0], NameExpr)
                 and s.lvalues[0].name == name]
        expr = bound[-1] if len(bound) == 1 else expr
    if not (isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname in PARTITION_SPEC):
        return None
    entries: list[object] = []
    partial: object = ()
    try:
        for kind, keyword, arg in zip(expr.arg_kinds, expr.arg_names, expr.args):
            if kind == ARG_POS:
                entries.append(_value(arg))
            elif kind == ARG_NAMED and keyword == "partial":
                partial = _value(arg)
            else:
                return None
        return _built(entries, partial)
    except (_NotLiteral, AnnotationError):
        return None


def _value(expr: Expression) -> object:
    if isinstance(expr, (StrExpr, IntExpr)):
        return expr.value
    if isinstance(expr, NameExpr) and expr.fullname == "builtins.None":
        return None
    if isinstance(expr, TupleExpr):
        return tuple(_value(item) for item in expr.items)
    raise _NotLiteral
