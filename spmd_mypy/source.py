"""An expression written back as Python source, for the operand of a printed fix.

A fix is applied by wrapping its operand, as written, in a call; so the
operand must be spelled completely (``self.lookup(ids)``, not
``self.lookup(...)``) and parenthesized where Python's precedence needs it.
:func:`source` does that for the expressions tensors are written with;
for anything else (a lambda, a comprehension) it gives ``None``, and the fix
that would need the spelling is not printed.
"""

from __future__ import annotations

from mypy.nodes import (
    ARG_NAMED,
    ARG_STAR,
    ARG_STAR2,
    BytesExpr,
    CallExpr,
    ComparisonExpr,
    ConditionalExpr,
    EllipsisExpr,
    Expression,
    FloatExpr,
    IndexExpr,
    IntExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    OpExpr,
    SliceExpr,
    StrExpr,
    TupleExpr,
    UnaryExpr,
)

__all__ = ["source"]

# Binding strength of Python's operators, loosest first (the language reference's table).
_PRECEDENCE = {
    "if": 1, "or": 2, "and": 3, "not": 4, "cmp": 5, "|": 6, "^": 7, "&": 8, "<<": 9, ">>": 9, "+": 10, "-": 10,
    "*": 11, "@": 11, "/": 11, "//": 11, "%": 11, "unary": 12, "**": 13,
}
_ATOM = 14


def source(expr: Expression) -> str | None:
    """``expr`` as Python source that parses back to the same expression, or ``None`` when it cannot say."""
    found = _spell(expr)
    return found[0] if found is not None else None


def _at_least(expr: Expression, strength: int) -> str | None:
    found = _spell(expr)
    if found is None:
        return None
    text, own = found
    return text if own >= strength else f"({text})"


def _spell(expr: Expression) -> tuple[str, int] | None:
    if isinstance(expr, NameExpr):
        return expr.name, _ATOM
    if isinstance(expr, MemberExpr):
        base = _at_least(expr.expr, _ATOM)
        return (f"{base}.{expr.name}", _ATOM) if base is not None else None
    if isinstance(expr, IntExpr):
        return str(expr.value), _ATOM
    if isinstance(expr, FloatExpr):
        return repr(expr.value), _ATOM
    if isinstance(expr, StrExpr):
        return (f'"{expr.value}"' if '"' not in expr.value and "\\" not in expr.value else repr(expr.value)), _ATOM
    if isinstance(expr, BytesExpr):
        return None
    if isinstance(expr, EllipsisExpr):
        return "...", _ATOM
    if isinstance(expr, CallExpr):
        return _call(expr)
    if isinstance(expr, IndexExpr):
        base = _at_least(expr.base, _ATOM)
        index = _index(expr.index)
        return (f"{base}[{index}]", _ATOM) if base is not None and index is not None else None
    if isinstance(expr, OpExpr):
        return _binary(expr)
    if isinstance(expr, UnaryExpr):
        strength = _PRECEDENCE["not" if expr.op == "not" else "unary"]
        operand = _at_least(expr.expr, strength)
        space = " " if expr.op == "not" else ""
        return (f"{expr.op}{space}{operand}", strength) if operand is not None else None
    if isinstance(expr, ComparisonExpr):
        parts = [_at_least(e, _PRECEDENCE["cmp"] + 1) for e in expr.operands]
        if any(p is None for p in parts):
            return None
        text = str(parts[0])
        for op, part in zip(expr.operators, parts[1:]):
            text += f" {op} {part}"
        return text, _PRECEDENCE["cmp"]
    if isinstance(expr, ConditionalExpr):
        parts = [_at_least(e, _PRECEDENCE["if"] + 1) for e in (expr.if_expr, expr.cond, expr.else_expr)]
        if any(p is None for p in parts):
            return None
        return f"{parts[0]} if {parts[1]} else {parts[2]}", _PRECEDENCE["if"]
    if isinstance(expr, (TupleExpr, ListExpr)):
        items = [_at_least(e, _PRECEDENCE["if"]) for e in expr.items]
        if any(i is None for i in items):
            return None
        inner = ", ".join(map(str, items))
        if isinstance(expr, ListExpr):
            return f"[{inner}]", _ATOM
        return (f"({inner},)" if len(items) == 1 else f"({inner})"), _ATOM
    return None


def _binary(expr: OpExpr) -> tuple[str, int] | None:
    strength = _PRECEDENCE.get(expr.op)
    if strength is None:
        return None
    # Left-associative, except ** (right-associative): the other side needs to bind more tightly.
    left = _at_least(expr.left, strength + (1 if expr.op == "**" else 0))
    right = _at_least(expr.right, strength + (0 if expr.op == "**" else 1))
    if left is None or right is None:
        return None
    return f"{left} {expr.op} {right}", strength


def _call(expr: CallExpr) -> tuple[str, int] | None:
    callee = _at_least(expr.callee, _ATOM)
    if callee is None:
        return None
    args = []
    for arg, kind, name in zip(expr.args, expr.arg_kinds, expr.arg_names):
        text = _at_least(arg, _PRECEDENCE["if"])
        if text is None:
            return None
        if kind == ARG_STAR:
            text = f"*{text}"
        elif kind == ARG_STAR2:
            text = f"**{text}"
        elif kind == ARG_NAMED:
            text = f"{name}={text}"
        args.append(text)
    return f"{callee}({', '.join(args)})", _ATOM


def _index(index: Expression) -> str | None:
    if isinstance(index, SliceExpr):
        return _slice(index)
    if isinstance(index, TupleExpr) and index.items:
        items = [_slice(i) if isinstance(i, SliceExpr) else _at_least(i, _PRECEDENCE["if"]) for i in index.items]
        if any(i is None for i in items):
            return None
        return ", ".join(map(str, items)) + ("," if len(items) == 1 else "")
    return _at_least(index, _PRECEDENCE["if"])


def _slice(index: SliceExpr) -> str | None:
    parts = []
    for part in (index.begin_index, index.end_index, index.stride):
        text = _at_least(part, _PRECEDENCE["if"]) if part is not None else ""
        if text is None:
            return None
        parts.append(text)
    return ":".join(parts[:2]) if index.stride is None else ":".join(parts)
