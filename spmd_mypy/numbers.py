"""The SPMD type of a Python number that a tensor op is given, from the expression that computes it.

mypy types ``loss.item()`` ``float`` and ``x.shape[0]`` ``int``: nothing in
the type says where the number came from.  So when a number reaches a tensor
op, :class:`NumberReader` reads its expression: a number read out of a typed
tensor (``.item()``, ``float(t)``, ``int(t)``, ``t.tolist()[k]``), the rank's
index (``axis_index("tp")``, ``torch.distributed.get_rank(group)``, Megatron's rank
getters), arithmetic on them, Python functions of them (``math.sqrt``,
``round``, ``max``), and local variables assigned any of these in the same
function.  The rules are the core's (:mod:`spmd_types.typesystem.numbers`).
Anything else, a literal, a parameter, an attribute, is the constant it
always was.  A mistake inside the number's own computation (a pending sum
through ``math.exp``) is reported where the number meets the tensor op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from mypy.nodes import (
    CallExpr,
    ComparisonExpr,
    ConditionalExpr,
    Context,
    Expression,
    IndexExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    OpExpr,
    RefExpr,
    TupleExpr,
    UnaryExpr,
    Var,
)
from mypy.plugin import CheckerPluginInterface
from mypy.types import AnyType, Type, TypeOfAny, get_proper_type

from spmd_mypy import files
from spmd_mypy.axes import axis_name
from spmd_mypy.compat import expression_type
from spmd_mypy.encoding import Encoder, is_tensor
from spmd_mypy.fullnames import AXIS_INDEX, NUMBERS, RANK_FUNCTIONS
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_types.typesystem import (
    RANK_GETTERS,
    WEAK,
    Constant,
    SpmdType,
    Violation,
    arithmetic,
    rank_index,
    read_out,
    through_function,
)

__all__ = ["NumberReader", "Problem"]

_READ_OUT: Final = frozenset({"item", "tolist"})
"""Tensor methods that return the tensor's data as Python numbers."""

_WEAK: Final = SpmdType(default=WEAK)


@dataclass(frozen=True)
class Problem:
    """Violations found in a number's own computation: at ``at``, in the operation spelled ``where``."""

    violations: tuple[Violation, ...]
    at: Context
    where: str


@dataclass
class NumberReader:
    """Reads the SPMD types of the numbers of one call, in the module and function being checked."""

    session: Session
    api: CheckerPluginInterface
    context: Context
    problems: list[Problem] = field(default_factory=list)
    _visiting: set[Var] = field(default_factory=set)

    def read(self, expr: Expression | None) -> SpmdType | None:
        """The SPMD type of number ``expr``, where it is not a constant every rank shares; else ``None``."""
        found = self._type(expr) if expr is not None else None
        return None if found is None or _constant(found) else found

    # -- the expression forms -----------------------------------------------------------

    def _type(self, expr: Expression) -> SpmdType | None:
        if isinstance(expr, CallExpr):
            return self._call(expr)
        if isinstance(expr, IndexExpr):
            return self._index(expr)
        if isinstance(expr, OpExpr):
            return self._combined(expr.op, [expr.left, expr.right], expr)
        if isinstance(expr, UnaryExpr):
            return self._combined(f"unary {expr.op}", [expr.expr], expr)
        if isinstance(expr, ComparisonExpr):
            return self._combined("compare", expr.operands, expr)
        if isinstance(expr, ConditionalExpr):
            return self._combined("if", [expr.cond, expr.if_expr, expr.else_expr], expr)
        if isinstance(expr, (ListExpr, TupleExpr)):
            return self._combined("function", expr.items, expr, spelled="a list of numbers")
        if isinstance(expr, NameExpr) and isinstance(expr.node, Var) and expr.node.is_inferred:
            return self._variable(expr, expr.node)
        return None

    def _call(self, call: CallExpr) -> SpmdType | None:
        callee = call.callee
        if isinstance(callee, MemberExpr):
            tensor = self._tensor(callee.expr)
            if tensor is not None and callee.name in _READ_OUT:
                return read_out(tensor)
        name = callee.fullname if isinstance(callee, RefExpr) else None
        if name == AXIS_INDEX:
            axis = axis_name(self._argument(call.args[0])) if call.args else None
            return rank_index([axis]) if axis is not None else SpmdType()
        if name in RANK_GETTERS:
            return rank_index([self.session.options.library_axis(RANK_GETTERS[name])])
        if name in RANK_FUNCTIONS:
            return self._rank_in_group(call)
        if name in NUMBERS and len(call.args) == 1:  # float(t), int(n)
            tensor = self._tensor(call.args[0])
            return read_out(tensor) if tensor is not None else self._type(call.args[0])
        # Any other function of rank-dependent numbers (math.exp, round, max, a helper): not linear.
        return self._combined("function", call.args, call, spelled=spell(callee))

    def _index(self, expr: IndexExpr) -> SpmdType | None:
        return self._type(expr.base)  # an element of t.tolist(), or of a list of such numbers

    def _rank_in_group(self, call: CallExpr) -> SpmdType:
        """``get_rank(group)``: ``V`` on the group's axis; without a readable group, unknown everywhere."""
        group_type = expression_type(self.api, call.args[0]) if call.args else None
        axis = Encoder.read_axis(group_type) if group_type is not None else None
        return rank_index([axis]) if axis is not None else SpmdType()

    def _argument(self, expr: Expression) -> tuple[Expression, Type]:
        """``expr`` with the type mypy gave it (``Any`` where it has none yet)."""
        return expr, expression_type(self.api, expr) or AnyType(TypeOfAny.special_form)

    def _combined(self, symbol: str, operands: list[Expression], at: Expression,
                  spelled: str | None = None) -> SpmdType | None:
        """Operator or function ``symbol`` of ``operands``; ``None`` when none of them is rank-dependent."""
        types = [self._type(e) for e in operands]
        if all(t is None or _constant(t) for t in types):
            return None
        known = [t if t is not None else _WEAK for t in types]
        if symbol in ("function", "compare", "if"):
            outcome = through_function(known)
        else:
            outcome = arithmetic(symbol, known)
        if outcome.violations:
            self.problems.append(Problem(outcome.violations, at, spelled or _spelled(symbol)))
        return outcome.result

    def _variable(self, name: NameExpr, var: Var) -> SpmdType | None:
        """The join of every number assigned to the local variable ``name`` in its function."""
        if var in self._visiting:
            return None  # n = n + 1 in a loop: the other assignments decide
        self._visiting.add(var)
        try:
            found = [self._type(value) for value in files.values_assigned(self.session, self.api, name.name, name)]
        finally:
            self._visiting.discard(var)
        varying = list(dict.fromkeys(t for t in found if t is not None and not _constant(t)))
        if len(varying) <= 1:
            return varying[0] if varying else None
        # Assigned different rank-dependent numbers on different paths: V where one varies,
        # unknown where a pending sum meets anything else (no one type holds on every path).
        joined = through_function(varying)
        return joined.result if not joined.violations else SpmdType()

    def _tensor(self, expr: Expression) -> SpmdType | None:
        """The SPMD type of ``expr`` if it is a tensor that has one."""
        typ = expression_type(self.api, expr)
        if typ is None or not is_tensor(get_proper_type(typ)):
            return None
        found = Encoder.read(typ)
        return found if isinstance(found, SpmdType) else None


def _constant(t: SpmdType) -> bool:
    """Whether ``t`` is the same number on every rank: constant on every axis, and by default."""
    return isinstance(t.default, Constant) and all(isinstance(kind, Constant) for _, kind in t.items())


def _spelled(symbol: str) -> str:
    return {"compare": "a comparison", "if": "a conditional expression"}.get(symbol, symbol)
