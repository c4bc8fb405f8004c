"""The SPMD type of a Python number that a tensor op is given, from the expression that computes it.

mypy types ``loss.item()`` ``float`` and ``x.shape[0]`` ``int``: nothing in
the type says where the number came from.  So when a number reaches a tensor
op, :class:`NumberReader` reads its expression: a number read out of a typed
tensor (``.item()``, ``float(t)``, ``int(t)``, ``t.tolist()[k]``), the rank's
index (``axis_index("tp")``, ``torch.distributed.get_rank(group)``, Megatron's
rank getters), a shard's length (``x.shape[0]``, ``x.size(0)``, ``len(x)``,
``x.numel()``, the names of ``b, t, d = x.shape``) and that length times its
axis's size (``x.shape[0] * axis_size("tp")``), arithmetic on them, Python
functions of them (``math.sqrt``, ``round``, ``max``), local variables
assigned any of these in the same function, and attributes ``self.name`` that
a method of the same class assigns them (``self.start = rank * n`` in
``__init__``).  The rules are the core's (:mod:`spmd_types.typesystem.numbers`).
Anything else, a literal, a parameter, another object's attribute, is the
constant it always was.  A mistake inside the number's own computation (a
pending sum through ``math.exp``) is reported where the number meets the
tensor op.
"""

from __future__ import annotations

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
from spmd_mypy.axes import axis_name, int_literal
from spmd_mypy.compat import expression_type
from spmd_mypy.encoding import Encoder, is_tensor
from spmd_mypy.fullnames import AXIS_INDEX, LEN, NUMBERS, RANK_FUNCTIONS
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.size_one import axis_counted
from spmd_types.typesystem import (
    RANK_GETTERS,
    WEAK,
    Constant,
    SpmdType,
    Violation,
    arithmetic,
    element_count,
    global_length,
    length,
    rank_index,
    read_out,
    through_function,
)

__all__ = ["NumberReader", "Problem"]

_READ_OUT: Final = frozenset({"item", "tolist"})
"""Tensor methods that return the tensor's data as Python numbers."""

_COUNTS: Final = frozenset({"numel", "nelement"})
"""Tensor methods that return how many elements the tensor holds."""

_WEAK: Final = SpmdType(default=WEAK)


class Problem:
    """Violations found in a number's own computation: at ``at``, in the operation spelled ``where``.

    A plain class, as :class:`NumberReader` is: a dataclass costs an ``exec`` of each generated method at import.
    """

    def __init__(self, violations: tuple[Violation, ...], at: Context, where: str) -> None:
        self.violations = violations
        self.at = at
        self.where = where


class NumberReader:
    """Reads the SPMD types of the numbers of one call, in the module and function being checked.

    A plain class, not a dataclass, whose ``__init__`` would run as Python even in the compiled build (one per
    call checked).
    """

    def __init__(self, session: Session, api: CheckerPluginInterface, context: Context) -> None:
        self.session = session
        self.api = api
        self.context = context
        self.problems: list[Problem] = []
        self._visiting: set[Var | str] = set()  # variables, and attributes by name

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
            scaled = self._global_length(expr) if expr.op == "*" else None
            return scaled if scaled is not None else self._combined(expr.op, [expr.left, expr.right], expr)
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
        if isinstance(expr, MemberExpr) and isinstance(expr.expr, NameExpr) and isinstance(expr.expr.node, Var) \
                and expr.expr.node.is_self:
            return self._attribute(expr)
        return None

    def _call(self, call: CallExpr) -> SpmdType | None:
        callee = call.callee
        if isinstance(callee, MemberExpr):
            tensor = self._tensor(callee.expr)
            if tensor is not None and callee.name in _READ_OUT:
                return read_out(tensor)
            if tensor is not None and callee.name in _COUNTS:
                return element_count(tensor)
            if tensor is not None and callee.name == "size" and len(call.args) == 1:
                return length(tensor, int_literal(call.args[0]))
        name = callee.fullname if isinstance(callee, RefExpr) else None
        if name == AXIS_INDEX:
            axis = axis_name(self._argument(call.args[0])) if call.args else None
            return rank_index([axis]) if axis is not None else SpmdType()
        if name in RANK_GETTERS:
            return rank_index([self.session.options.library_axis(RANK_GETTERS[name])])
        if name in RANK_FUNCTIONS:
            return self._rank_in_group(call)
        if name == LEN and len(call.args) == 1 and (tensor := self._tensor(call.args[0])) is not None:
            return length(tensor, 0)
        if name in NUMBERS and len(call.args) == 1:  # float(t), int(n)
            tensor = self._tensor(call.args[0])
            return read_out(tensor) if tensor is not None else self._type(call.args[0])
        # Any other function of rank-dependent numbers (math.exp, round, max, a helper): not linear.
        return self._combined("function", call.args, call, spelled=spell(callee))

    def _index(self, expr: IndexExpr) -> SpmdType | None:
        shape = self._shape_of(expr.base)
        if shape is not None:
            return length(shape, int_literal(expr.index))
        return self._type(expr.base)  # an element of t.tolist(), or of a list of such numbers

    def _shape_of(self, expr: Expression) -> SpmdType | None:
        """The SPMD type of ``t`` where ``expr`` is ``t.shape`` or ``t.size()`` of a typed tensor."""
        if isinstance(expr, CallExpr) and not expr.args:
            expr = expr.callee
            if not (isinstance(expr, MemberExpr) and expr.name == "size"):
                return None
        elif not (isinstance(expr, MemberExpr) and expr.name == "shape"):
            return None
        return self._tensor(expr.expr)

    def _global_length(self, product: OpExpr) -> SpmdType | None:
        """``n * axis_size(a)`` (either way round) where ``n`` is a tensor's length: the global length."""
        for factor, size in ((product.left, product.right), (product.right, product.left)):
            axis = self._counted_axis(size)
            if axis is not None and self.is_length(factor):
                found = self._type(factor)
                return global_length(found, [axis]) if found is not None else None
        return None

    def _counted_axis(self, expr: Expression) -> str | None:
        """The axis whose number of ranks ``expr`` is, also through a name assigned one."""
        if isinstance(expr, NameExpr):
            values = files.values_assigned(self.session, self.api, expr.name, expr)
            return axis_counted(self.session, values[0], {}) if len(values) == 1 else None
        return axis_counted(self.session, expr, {})

    def involves_length(self, expr: Expression) -> bool:
        """Whether computing number ``expr`` reads a tensor's length (``math.sqrt(x.shape[-1])``, a name of one)."""
        if self.is_length(expr):
            return True
        if isinstance(expr, NameExpr) and isinstance(expr.node, Var) and expr.node.is_inferred:
            if expr.node in self._visiting:
                return False
            self._visiting.add(expr.node)
            try:
                return any(self.involves_length(value)
                           for value in files.values_assigned(self.session, self.api, expr.name, expr))
            finally:
                self._visiting.discard(expr.node)
        parts = ([expr.left, expr.right] if isinstance(expr, OpExpr) else [expr.expr] if isinstance(expr, UnaryExpr)
                 else expr.args if isinstance(expr, CallExpr) else [])
        return any(self.involves_length(part) for part in parts)

    def is_length(self, expr: Expression) -> bool:
        """Whether ``expr`` is a tensor's length (see the module docstring), also through a name assigned one."""
        if isinstance(expr, NameExpr) and isinstance(expr.node, Var) and expr.node.is_inferred:
            values = files.values_assigned(self.session, self.api, expr.name, expr)
            return len(values) == 1 and self.is_length(values[0])
        if isinstance(expr, IndexExpr):
            return self._shape_of(expr.base) is not None
        if isinstance(expr, CallExpr) and isinstance(expr.callee, MemberExpr):
            return expr.callee.name in _COUNTS or (expr.callee.name == "size" and len(expr.args) == 1)
        return isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname == LEN

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
        return self._assigned(var, files.values_assigned(self.session, self.api, name.name, name))

    def _attribute(self, member: MemberExpr) -> SpmdType | None:
        """The join of every number the class's methods assign to ``self.<name>`` (``self.start = rank * n``)."""
        return self._assigned(member.name, files.attribute_values(self.session, self.api, member.name, member))

    def _assigned(self, key: Var | str, values: list[Expression]) -> SpmdType | None:
        """The join of the numbers ``values``, assigned to one variable or attribute ``key``."""
        if key in self._visiting:
            return None  # n = n + 1 in a loop: the other assignments decide
        self._visiting.add(key)
        try:
            found = [self._type(value) for value in values]
        finally:
            self._visiting.discard(key)
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
