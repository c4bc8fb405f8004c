"""Apply a printed ``fix:`` to the source it is about, mechanically, as a reader would.

A fix is what :meth:`spmd_types.typesystem.Message.parse` reads back from one
error line: calls, then their cost in parentheses.  Its forms, and what
applying one does to the statement (or decorator) on the error's line:

* ``f(e, ...)``, or several such calls joined by ``and``: the expression
  ``e`` becomes ``f(e, ...)`` where the error points at it, as a reader takes
  it: given the error's column, the expression that starts there if it is
  ``e`` (an argument: ``consume(r, r)``), else each operand ``e`` of that
  expression (``torch.where(r > 0, p, r)``: the third argument, not the ``r``
  of the condition); without a column, or when neither holds ``e``, every
  occurrence of ``e`` in the statement (not as an assignment target);
* ``f(e, ...) replacing the g call``: the call of ``g`` that has the argument
  ``e`` becomes ``f(e, ...)``; ``e.g(...) replacing the g call``, a method
  call, replaces the call of ``g`` on ``e``;
* ``target = f(e, ...)``: the statement becomes that assignment.

Expressions are compared as Python parses them (parentheses and spacing
aside).  A fix that finds nothing to change raises :class:`NotApplicable`:
a fix naming an operand that the statement does not hold is a wrong fix.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

__all__ = ["NotApplicable", "PrintedFix", "apply_fix"]

_COST = re.compile(r"^(?P<calls>.*) \((?P<cost>[^()]*)\)$", re.DOTALL)
_REPLACING = re.compile(r"^(?P<call>.*) replacing the (?P<name>[\w.]+) call$", re.DOTALL)


class NotApplicable(Exception):
    """The fix does not name anything in the statement it is offered for."""


@dataclass(frozen=True)
class PrintedFix:
    """One printed fix, read: the calls it makes, the call it replaces (if any), or the statement it is."""

    calls: tuple[cst.Call, ...] = ()
    replaces: str | None = None
    statement: cst.BaseSmallStatement | None = None

    @classmethod
    def read(cls, text: str) -> PrintedFix:
        found = _COST.match(text)
        if found is None:
            raise NotApplicable(f"not a fix (calls, then their cost in parentheses): {text!r}")
        calls = found["calls"]
        replacing = _REPLACING.match(calls)
        if replacing is not None:
            return cls((_call(replacing["call"]),), replacing["name"])
        try:
            statement = cst.parse_statement(calls)
        except cst.ParserSyntaxError:
            statement = None
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign):
            return cls(statement=statement.body[0])
        return cls(tuple(_call(part) for part in _split_calls(calls)))


def _split_calls(text: str) -> list[str]:
    """``a(...) and b(...)`` as ``["a(...)", "b(...)"]``, not splitting an ``and`` inside a call."""
    parts: list[str] = []
    for piece in text.split(" and "):
        parts.append(f"{parts.pop()} and {piece}" if parts and not _parses(parts[-1]) else piece)
    return parts


def _parses(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True


def _call(text: str) -> cst.Call:
    try:
        call = cst.parse_expression(text)
    except cst.ParserSyntaxError as error:
        raise NotApplicable(f"the fix {text!r} is not Python: {error}") from None
    if not isinstance(call, cst.Call) or not call.args:
        raise NotApplicable(f"the fix {text!r} is not a call on an operand")
    return call


def _same(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a.strip(), mode="eval")) == ast.dump(ast.parse(b.strip(), mode="eval"))
    except SyntaxError:
        return False


def _operand(module: cst.Module, call: cst.Call) -> str:
    """What a printed call applies to: its first positional argument, or the receiver of a method call without one."""
    positional = [a for a in call.args if a.keyword is None]
    if not positional and isinstance(call.func, cst.Attribute):
        return module.code_for_node(call.func.value)
    return module.code_for_node((positional or list(call.args))[0].value)


def _holds(module: cst.Module, call: cst.Call, operand: str) -> bool:
    """Whether ``operand`` is an argument of ``call``, or the receiver it is a method of."""
    receiver = [call.func.value] if isinstance(call.func, cst.Attribute) else []
    return any(_same(module.code_for_node(node), operand) for node in [*receiver, *(a.value for a in call.args)])


def _callee_names(module: cst.Module, call: cst.Call) -> tuple[str, str]:
    """The callee as written (``funcol.all_gather_tensor``, ``x.to_local``) and its last name."""
    written = module.code_for_node(call.func)
    return written, written.rpartition(".")[2]


def _direct_operands(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The operands of an expression: a call's arguments and receiver, an operator's sides, an index's base and index."""
    if isinstance(node, cst.Call):
        return [*([node.func.value] if isinstance(node.func, cst.Attribute) else []), *(a.value for a in node.args)]
    if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
        return [node.left, node.right]
    if isinstance(node, cst.Comparison):
        return [node.left, *(c.comparator for c in node.comparisons)]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    if isinstance(node, cst.Subscript):
        return [node.value, *(e.slice.value for e in node.slice if isinstance(e.slice, cst.Index))]
    return []


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, line: int, fix: PrintedFix, column: int | None) -> None:
        super().__init__()
        self.module = module
        self.line = line
        self.fix = fix
        self.column = column  # 0-based
        # The statement (or decorator) on the error's line, once inside it.
        self.statement: cst.BaseSmallStatement | cst.Decorator | None = None
        self.targets: set[int] = set()  # the ids of the assignment targets seen: never rewritten
        self.only: set[int] | None = None  # the ids of the expressions a wrapping fix may rewrite (None: any)
        self.changed = 0

    def _operand_of_fix(self, node: cst.CSTNode) -> bool:
        code = self.module.code_for_node(node)
        return any(_same(code, _operand(self.module, call)) for call in self.fix.calls)

    def _anchor(self, statement: cst.CSTNode) -> None:
        """Restrict a wrapping fix to where the error points: the outermost expression at its column, or its operands."""
        if self.column is None or self.fix.replaces is not None:
            return
        pending = [statement]
        while pending:  # before any rewrite: the statement's expressions, outermost first
            node = pending.pop(0)
            where = self.get_metadata(PositionProvider, node).start
            if isinstance(node, cst.BaseExpression) and (where.line, where.column) == (self.line, self.column):
                if self._operand_of_fix(node):
                    self.only = {id(node)}
                else:
                    self.only = {id(n) for n in _direct_operands(node) if self._operand_of_fix(n)} or None
                return
            pending.extend(node.children)

    def _on_line(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` spans the error's line (a function's or class's decorators count as its lines)."""
        where = self.get_metadata(PositionProvider, node)
        decorators = node.decorators if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else ()
        return bool(where.start.line <= self.line <= where.end.line) or any(map(self._on_line, decorators))

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.statement is None:
            if isinstance(node, (cst.BaseSmallStatement, cst.Decorator)) and self._on_line(node):
                self.statement = node  # a decorator too: the error of ``@local_map(...)`` is on its line
                self._anchor(node)
            elif isinstance(node, (cst.BaseStatement, cst.IndentedBlock)) and not self._on_line(node):
                return False
        if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            self.targets.add(id(node.target))
        elif isinstance(node, cst.AssignTarget):
            self.targets.add(id(node.target))
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        result = super().on_leave(original, updated)
        if original is self.statement:
            self.statement = None
            if self.fix.statement is not None:
                self.changed += 1
                return self.fix.statement
            return result  # type: ignore[return-value]
        if self.statement is None or id(original) in self.targets or not isinstance(result, cst.BaseExpression):
            return result  # type: ignore[return-value]
        for call in self.fix.calls:
            operand = _operand(self.module, call)
            if self.fix.replaces is not None:
                if (isinstance(original, cst.Call) and self.fix.replaces in _callee_names(self.module, original)
                        and _holds(self.module, original, operand)):
                    self.changed += 1
                    return call
            elif (isinstance(original, cst.BaseExpression) and (self.only is None or id(original) in self.only)
                  and _same(self.module.code_for_node(original), operand)):
                self.changed += 1
                return call
        return result  # type: ignore[return-value]


def apply_fix(source: str, line: int, fix: str, column: int | None = None) -> str:
    """``source`` with ``fix`` (one fix as :meth:`Message.parse` gives it) applied to the statement on ``line``.

    ``column`` is where the error points (1-based, as mypy prints it), if known.
    """
    printed = PrintedFix.read(fix)
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module)
    rewriter = _Rewriter(wrapper.module, line, printed, column - 1 if column is not None else None)
    fixed = wrapper.visit(rewriter)
    if not rewriter.changed:
        raise NotApplicable(f"line {line} holds nothing the fix {fix!r} applies to")
    return fixed.code + _imports(module, printed)


def _imports(module: cst.Module, fix: PrintedFix) -> str:
    """An import, appended (so that no line moves), of the names the fix calls that the module does not bind."""
    bound = set()
    for node in ast.parse(module.code).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
    code = "\n".join(module.code_for_node(node) for node in [*fix.calls, *([fix.statement] if fix.statement else [])])
    used = {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
    wanted = sorted(used & _RUNTIME_NAMES - bound)
    return f"from spmd_types import {', '.join(wanted)}\n" if wanted else ""


_RUNTIME_NAMES = frozenset({"I", "P", "R", "S", "V", "all_gather", "all_reduce", "all_to_all", "convert", "ppermute",
                            "redistribute", "reduce_scatter", "reinterpret"})
