"""A call's arguments as core operands, and an op's result type as a mypy type.

mypy hands a hook the formal parameter names of the callee and, for each, the
types and expressions of the actual arguments.  Tensors become operands with
their SPMD type; Python numbers passed where the op rule expects a tensor
become constants (``weak``, or ``zero`` for a literal 0); a list or tuple of
tensors (``cat([a, b])``) gives one operand per element.  A number read out
of a tensor or computed from the rank's index (:mod:`spmd_mypy.numbers`) is an
operand of its own type instead, also where the op takes it as a position
(a slice bound, ``narrow``'s ``start``, ``arange``'s ``end``: :data:`POSITIONS`).
Everything else is recorded as *passed* (``rounding_mode=...`` can make an op
non-linear), with its value where it is a literal (``transpose(0, 1)``,
``x[:, None]``), which says where the dim of a shard ``S(i)`` goes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Final

from mypy.nodes import (
    CallExpr,
    EllipsisExpr,
    Expression,
    FloatExpr,
    IntExpr,
    ListExpr,
    NameExpr,
    OpExpr,
    RefExpr,
    SliceExpr,
    StrExpr,
    TupleExpr,
    UnaryExpr,
    Var,
)
from mypy.plugin import CheckerPluginInterface
from mypy.types import (
    AnyType,
    ExtraAttrs,
    Instance,
    LiteralType,
    NoneType,
    ProperType,
    TupleType,
    Type,
    UnionType,
    get_proper_type,
)

from spmd_mypy.axes import int_literal
from spmd_mypy.compat import expression_type, side_channel
from spmd_mypy.encoding import Divergent, Encoder, is_tensor
from spmd_mypy.files import FileFacts
from spmd_mypy.fullnames import CONSTANTS, FLOAT, INFINITIES, NUMBERS, SEQUENCES, SPMD_TENSORS, STR
from spmd_mypy.identity import IdentityMemo
from spmd_mypy.numbers import NumberReader
from spmd_mypy.session import Session
from spmd_mypy.size_one import settle
from spmd_mypy.source import source
from spmd_types.typesystem import (
    NOT_KNOWN,
    UNKNOWN,
    WEAK,
    ZERO,
    EntryOrders,
    Operand,
    OpRule,
    Shard,
    SpmdType,
    absorbed,
    bounded_put,
    canonical_param,
    passed_literal,
)

__all__ = [
    "POSITIONS",
    "Arguments",
    "arguments_key",
    "contains_tensor",
    "literal_kinds",
    "literal_value",
    "plain_literal",
    "read_arguments",
    "typed_result",
    "with_result",
]

POSITIONS: Final = frozenset({"start", "end", "step", "length", "index", "fill_value", "shifts", "split_size"})
"""Number parameters that place or fill values (``narrow(dim, start, length)``, ``arange(end)``,
``full(size, fill_value)``): a rank-dependent number there makes the result differ by rank.  Sizes
and dims are not among them: a shard's local size in ``view(n, -1)`` describes its own layout."""


class Arguments:
    """The operands of one call, parallel to how to spell each in a message; empty when made.

    A plain class, not a dataclass, whose ``__init__`` would run as Python even in the compiled build (one per
    call checked).
    """

    def __init__(self) -> None:
        self.operands: list[Operand] = []
        # How each operand is written: its expression, spelled only if a report needs it (see ``spelled``).
        self.written: list[Expression | str | None] = []
        self.passed: set[str] = set()
        self.divergent: list[tuple[Expression, Divergent]] = []
        self.expressions: dict[str, Expression] = {}
        self.literals: dict[str, object] = {}
        self.typed = False  # whether some operand has an SPMD type
        self.lengths: set[int] = set()  # the operands that are a shard's length (x.shape[0])
        self.orders: list[EntryOrders] = []  # each operand's entry orders, where a spec says them

    def add(self, param: str, spmd: SpmdType, written: Expression | str | None, ndim: int | None = None,
            orders: EntryOrders = ()) -> None:
        self.operands.append(Operand(param, spmd, ndim))
        self.written.append(written)
        self.orders.append(orders)

    @property
    def spelled(self) -> list[str | None]:
        """The operands as source text; ``None`` where no spelling could be used by a fix."""
        return [source(w) if isinstance(w, Expression) else w for w in self.written]

    @property
    def sharded(self) -> bool:
        """Whether some operand is a shard ``S(i)`` on some axis (its dim then follows the op)."""
        return any(isinstance(kind, Shard) for operand in self.operands for _, kind in operand.type.items())


def read_arguments(
    session: Session,
    api: CheckerPluginInterface,
    rule: OpRule,
    formal_names: Sequence[str | None],
    arg_types: Sequence[Sequence[Type]],
    args: Sequence[Sequence[Expression]],
    receiver: tuple[Type, Expression | None] | None = None,
    numbers: NumberReader | None = None,
) -> Arguments:
    """Read a call's arguments (and a method's receiver, as ``input``); ``numbers`` reads rank-dependent numbers.

    A variable typed by branch is read as one type where its branches that
    run with one rank set aside (:func:`spmd_mypy.size_one.settle`) merge.
    """
    out = Arguments()
    if receiver is not None:
        typ, expr = receiver
        if expr is not None:
            out.expressions["input"] = expr
        _read_value(session, api, out, "input", typ, expr, rule, numbers)
    for name, types, exprs in zip(formal_names, arg_types, args):
        param = canonical_param(name or "")
        for typ, expr in zip(types, exprs):
            out.expressions.setdefault(param, expr)
            # A parameter given several values is variadic: ``permute(2, 0, 1)``.
            value = literal_value(expr)
            out.literals[param] = (*_as_tuple(out.literals[param]), value) if param in out.literals else value
            if isinstance(expr, StrExpr) and rule.sequence_product:
                out.literals["equation"] = expr.value  # einsum(equation, *operands) passes it among the operands
                continue
            if param != "out":  # the tensor written to, not an operand
                _read_value(session, api, out, param, typ, expr, rule, numbers)
    return out


def arguments_key(
    formal_names: list[str | None],
    arg_types: list[list[Type]],
    args: list[list[Expression]],
    receiver: tuple[Type, Expression | None] | None = None,
    facts: FileFacts | None = None,
) -> tuple[object, ...] | None:
    """A key that decides all that :func:`read_arguments` reads from these arguments, where one is cheap to
    tell; else ``None``.

    That is where every argument is a tensor of one type (no union), which
    reads as its SPMD type and rank, or a literal (``2``, ``-1``, ``0.5``,
    ``"sum"``, ``True``), a declared variable or parameter, or arithmetic on
    them, which no number computed from ranks can be, or, where ``facts`` (the
    checked file's, :func:`~spmd_mypy.files.file_facts`) are given, a variable
    that its function assigns only literals (``eps = 1e-6``), which the number
    reader finds constant; and no argument is an ``out=`` tensor.  A tensor's key is its SPMD type, rank and
    entry orders.  Together with the op's rule, such a key
    decides the operands, what is passed and the literal values, everything but
    how each operand is spelled.  It follows :func:`_read_value`'s cases:
    a change there must be reflected here.

    Each argument stands in the key as the number of what it reads as (see
    :func:`_numbered`): the key is a flat tuple of numbers and parameter names,
    cheap to hash and compare where it is looked up.
    """
    parts: list[object] = []
    if receiver is not None:
        part = _value_key(receiver[0], receiver[1], facts)
        if part is None:
            return None
        parts.append(part)
    # Index loops over lists rather than zip(): they compile to plain list indexing.
    count = len(formal_names)
    if len(arg_types) < count:
        count = len(arg_types)
    if len(args) < count:
        count = len(args)
    for k in range(count):
        name = formal_names[k]
        types = arg_types[k]
        exprs = args[k]
        param = canonical_param(name or "")
        if param == "out" and exprs:
            return None
        parts.append(param)
        values = len(types) if len(types) < len(exprs) else len(exprs)
        for j in range(values):
            part = _value_key(types[j], exprs[j], facts)
            if part is None:
                return None
            parts.append(part)
        parts.append(len(types))  # after the parameter's values: the numbers between two names stay apart
    return tuple(parts)


_TENSOR: Final = "tensor"
_LITERAL: Final = "literal"

_NUMBERS: Final[dict[tuple[object, ...], int]] = {}
"""What an argument reads as (see :func:`_value_key`), numbered in the order first met.  A number is never
given again, also after the table is emptied, so a key built before that never stands for another reading."""
_NUMBERS_MAX: Final = 8192
_NEXT: Final = itertools.count()


def _numbered(reading: tuple[object, ...]) -> int:
    """The number of ``reading``, one argument's part of a key."""
    number = _NUMBERS.get(reading)
    return number if number is not None else bounded_put(_NUMBERS, reading, next(_NEXT), _NUMBERS_MAX)


_TENSOR_KEYS: Final[IdentityMemo[Type, int]] = IdentityMemo(8192)
"""Each tensor type's part of a key, by the type (:mod:`spmd_mypy.identity`): mypy gives every expression a
value flows to the same type object (a parameter's at each use, an op's result, built once by
:class:`Encoder`)."""


_CARRIED_KEYS: Final[IdentityMemo[ExtraAttrs, int]] = IdentityMemo(8192)
"""An SPMD-typed tensor's part of a key, by its side channel (:func:`~spmd_mypy.compat.side_channel`), from which
the SPMD type, rank and entry orders are all read: mypy copies a variable's type at each assignment (a new
Instance, not in :data:`_TENSOR_KEYS`) and the copy shares the side channel."""


def _value_key(typ: Type, expr: Expression | None, file: FileFacts | None) -> int | None:
    """The number of what one argument reads as, for :func:`arguments_key`; ``None`` where that takes the
    full reading."""
    known = _TENSOR_KEYS.get(typ)
    if known is not None:
        return known[1]
    proper = get_proper_type(typ)
    facts = _literal_facts(proper, expr, file)
    if facts is not None:
        number = _LITERAL_KEYS.get(facts)
        if number is None:
            number = _read_key(typ, proper, expr, constant=True)
            if number is not None:
                bounded_put(_LITERAL_KEYS, facts, number, _LITERAL_KEYS_MAX)
        return number
    return _read_key(typ, proper, expr)


def _read_key(typ: Type, proper: ProperType, expr: Expression | None, constant: bool = False) -> int | None:
    """:func:`_value_key` read in full, for an argument of type ``typ`` (``proper``, expanded); ``constant``
    where the number reader is known to read ``expr`` as a constant (see :func:`_literal_facts`)."""
    if isinstance(proper, Instance) and is_tensor(proper):
        # No literal types as a tensor: literal_value() is NOT_KNOWN for every tensor expression.
        carrier = side_channel(proper) if proper.type.fullname in SPMD_TENSORS else None
        carried = _CARRIED_KEYS.get(carrier) if carrier is not None else None
        if carried is not None:
            return _TENSOR_KEYS.put(typ, carried[1])
        number = _numbered((_TENSOR, Encoder.read(proper), Encoder.rank(proper), Encoder.orders(proper)))
        if carrier is not None:
            _CARRIED_KEYS.put(carrier, number)
        return _TENSOR_KEYS.put(typ, number)
    if not (constant or _read_as_constant(expr)) or isinstance(proper, TupleType) or (
            isinstance(proper, Instance) and proper.type.fullname in SEQUENCES):
        return None
    literal = literal_value(expr) if expr is not None else NOT_KNOWN
    return _numbered((_LITERAL, isinstance(proper, NoneType), _is_number(proper), isinstance(proper, AnyType),
                      _is_zero(proper, expr), _infinity(expr), literal, literal_kinds(literal)))


_LITERAL_KEYS: Final[dict[tuple[object, ...], int]] = {}
"""The number of what a number or string argument reads as, by :func:`_literal_facts`: the same few literals
(``-1``, ``2``, ``0.5``) and declared sizes (``dim``, ``3 * hidden``) are passed at thousands of calls."""
_LITERAL_KEYS_MAX: Final = 4096
_LITERAL_TYPES: Final = NUMBERS | {STR}


def _literal_facts(proper: ProperType, expr: Expression | None, file: FileFacts | None) -> tuple[object, ...] | None:
    """What decides how an argument of a plain number or str type reads, where that is cheap to tell and the
    number reader reads it as a constant, all that :func:`_read_key` reads from it; ``None`` for any other
    argument.

    The name of the type (for :func:`_is_number`) and, by the argument's form:

    * a literal (``2``, ``-1``, ``0.5``, ``"sum"``): its class and value, and a sign before it;
    * a builtin constant (``True``): its name, and whether mypy knows it as 0 (for :func:`_is_zero`);
    * a declared variable or parameter (``dim``): whether mypy knows it as 0, and whether it names an
      infinity (``inf``, which a fill absorbs, see :func:`_infinity`); the reader never follows it, and
      its value is not known (see :func:`_read_as_constant`);
    * an inferred variable to which its function assigns only literals (``eps = 1e-6``), where the facts
      of the checked ``file`` are given: the same as a declared one, since the reader, which follows it
      to those values (:meth:`~spmd_mypy.numbers.NumberReader.read`), finds a constant;
    * arithmetic on declared variables and literals (``3 * hidden``): the infinity it spells (``-inf``),
      if any; it is never known as 0 nor has a literal value.

    ``self``, any other inferred variable, or any other expression gets ``None``: the reader may find a
    number that depends on the rank.
    """
    if not isinstance(proper, Instance):
        return None
    fullname = proper.type.fullname
    if fullname not in _LITERAL_TYPES:
        return None
    if isinstance(expr, (IntExpr, FloatExpr, StrExpr)):
        return (type(expr), expr.value, fullname)
    if isinstance(expr, NameExpr):
        node = expr.node
        if not isinstance(node, Var):
            return None
        zero = _is_zero(proper, expr)
        if node.is_inferred:
            return (_DECLARED, fullname, zero, False) if file is not None and _assigned_literals(file, expr) else None
        name = expr.fullname
        if name in CONSTANTS:
            return (NameExpr, name, fullname, zero)
        return None if node.is_self else (_DECLARED, fullname, zero, name in INFINITIES)
    if isinstance(expr, UnaryExpr):
        operand = expr.expr
        if expr.op in ("-", "+") and isinstance(operand, (IntExpr, FloatExpr)):
            return (expr.op, type(operand), operand.value, fullname)
    return (_ARITHMETIC, fullname, _infinity(expr)) if _read_as_constant(expr) else None


def _assigned_literals(file: FileFacts, name: NameExpr) -> bool:
    """Whether every value that the function of ``name`` assigns to it is a literal."""
    for value in file.values_assigned(name.name, name):
        if not plain_literal(value):
            return False
    return True


_DECLARED: Final = "declared"
_ARITHMETIC: Final = "arithmetic"


def plain_literal(expr: Expression | None) -> bool:
    """Whether ``expr`` is a literal that :class:`~spmd_mypy.numbers.NumberReader` never reads a type from."""
    if isinstance(expr, (IntExpr, FloatExpr, StrExpr)):
        return True
    if isinstance(expr, UnaryExpr):
        return expr.op in ("-", "+") and isinstance(expr.expr, (IntExpr, FloatExpr))
    return (isinstance(expr, NameExpr) and expr.fullname in CONSTANTS
            and not (isinstance(expr.node, Var) and expr.node.is_inferred))


def _read_as_constant(expr: Expression | None) -> bool:
    """Whether :class:`~spmd_mypy.numbers.NumberReader` reads ``expr`` as a constant without reading another
    expression or a type: a literal, a declared variable or parameter (``dim`` in ``torch.ones(dim)``; the
    reader follows only inferred variables), or arithmetic on them (``3 * hidden``)."""
    if plain_literal(expr):
        return True
    if isinstance(expr, NameExpr):
        return isinstance(expr.node, Var) and not expr.node.is_inferred and not expr.node.is_self
    if isinstance(expr, OpExpr):
        return _read_as_constant(expr.left) and _read_as_constant(expr.right)
    if isinstance(expr, UnaryExpr):
        return expr.op in ("-", "+") and _read_as_constant(expr.expr)
    return False


def literal_kinds(value: object) -> object:
    """The type of literal ``value``, and of each of its parts for a tuple or a slice.

    Keys hold it beside the value, so that ``keepdim=True`` and ``keepdim=1`` (equal in Python) stay apart.
    """
    if isinstance(value, tuple):
        return tuple(literal_kinds(item) for item in value)
    if isinstance(value, slice):
        return (slice, literal_kinds(value.start), literal_kinds(value.stop), literal_kinds(value.step))
    return type(value)


def _read_value(
    session: Session,
    api: CheckerPluginInterface,
    out: Arguments,
    param: str,
    typ: Type,
    expr: Expression | None,
    rule: OpRule,
    numbers: NumberReader | None,
) -> None:
    mentioned = rule.params
    proper = get_proper_type(typ)
    if isinstance(proper, NoneType):
        return
    if _is_tensor_like(proper):
        found = Encoder.read(proper)
        if isinstance(found, Divergent):
            found = settle(session, api, expr, found)
        if isinstance(found, Divergent):
            if expr is not None:
                out.divergent.append((expr, found))
            found = UNKNOWN
        out.typed = out.typed or found is not None
        out.add(param, found if found is not None else UNKNOWN, expr, ndim=Encoder.rank(proper),
                orders=Encoder.orders(proper))
        return
    elements = _elements(api, proper, expr)
    if elements is not None:
        for element_type, element_expr in elements:
            _read_value(session, api, out, param, element_type, element_expr, rule, numbers)
        return
    number = _is_number(proper) or isinstance(proper, AnyType)  # t.tolist()[0] is Any
    if isinstance(expr, SliceExpr):
        bounds = [e for e in (expr.begin_index, expr.end_index, expr.stride) if e is not None]
        dependent = [(e, t) for e in bounds if (t := numbers.read(e) if numbers is not None else None) is not None]
    else:
        found = numbers.read(expr) if numbers is not None and number else None
        dependent = [(expr, found)] if expr is not None and found is not None else []
    for value, spmd in dependent:  # a number that depends on the rank: an operand, also as a position
        if param in mentioned or param in POSITIONS:
            out.typed = True
            if numbers is not None and numbers.involves_length(value):
                out.lengths.add(len(out.operands))
            out.add(param, spmd, value, ndim=0)
    infinity = _infinity(expr)
    if param in mentioned and number and not (infinity is not None and absorbed(rule, param, infinity)):
        if not dependent:
            # Any may be a tensor of any type: what it makes is unknown, never a known type.
            constant = UNKNOWN if isinstance(proper, AnyType) else SpmdType(
                default=ZERO if _is_zero(proper, expr) else WEAK)
            out.add(param, constant, expr, ndim=0)
        return
    out.passed.add(param)
    literal = literal_value(expr) if expr is not None else NOT_KNOWN
    if isinstance(literal, (str, bool)):  # reduce="sum", training=True
        out.passed.add(passed_literal(param, literal))


def literal_value(expr: Expression) -> object:
    """The Python value of a literal argument (ints, ``None``, ``...``, slices, tuples of them); else ``NOT_KNOWN``."""
    number = int_literal(expr)
    if number is not None:
        return number
    if isinstance(expr, NameExpr) and expr.fullname in CONSTANTS:
        return CONSTANTS[expr.fullname]
    if isinstance(expr, EllipsisExpr):
        return Ellipsis
    if isinstance(expr, StrExpr):
        return expr.value
    if isinstance(expr, SliceExpr):
        bounds = [literal_value(e) if e is not None else None for e in (expr.begin_index, expr.end_index, expr.stride)]
        return slice(*bounds) if NOT_KNOWN not in bounds else slice(0, NOT_KNOWN)
    if isinstance(expr, (TupleExpr, ListExpr)):
        return tuple(literal_value(item) for item in expr.items)
    return NOT_KNOWN


def _as_tuple(value: object) -> tuple[object, ...]:
    return value if isinstance(value, tuple) else (value,)


def _is_tensor_like(typ: ProperType) -> bool:
    if isinstance(typ, UnionType):
        members = [get_proper_type(t) for t in typ.items]
        return bool(members) and all(is_tensor(m) or isinstance(m, NoneType) for m in members) and any(
            is_tensor(m) for m in members)
    return is_tensor(typ)


def _elements(
    api: CheckerPluginInterface, typ: ProperType, expr: Expression | None
) -> list[tuple[Type, Expression | None]] | None:
    """The elements of a list or tuple of tensors, or ``None`` if ``typ`` is not one."""
    if isinstance(expr, (ListExpr, TupleExpr)):
        found = [(expression_type(api, item), item) for item in expr.items]
        if found and all(t is not None for t, _ in found):
            return [(t, item) for t, item in found if t is not None]
    if isinstance(typ, TupleType):
        return [(item, None) for item in typ.items]
    if isinstance(typ, Instance) and typ.type.fullname in SEQUENCES and typ.args:
        item = get_proper_type(typ.args[0])
        if _is_tensor_like(item):
            return [(item, None)]
    return None


def _is_number(typ: ProperType) -> bool:
    """Whether ``typ`` is a Python number type (``Number``, what ``Tensor.item()`` returns, is a union of them)."""
    if isinstance(typ, UnionType):
        return all(_is_number(get_proper_type(item)) for item in typ.items)
    if isinstance(typ, LiteralType):
        return isinstance(typ.value, (int, float))
    return isinstance(typ, Instance) and typ.type.fullname in NUMBERS


def _infinity(expr: Expression | None) -> float | None:
    """The value of ``expr`` where it spells an infinity (``float("-inf")``, ``-math.inf``, ``torch.inf``)."""
    if isinstance(expr, UnaryExpr) and expr.op in ("-", "+"):
        found = _infinity(expr.expr)
        return -found if found is not None and expr.op == "-" else found
    if isinstance(expr, RefExpr) and expr.fullname in INFINITIES:
        return math.inf
    if (isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname == FLOAT
            and len(expr.args) == 1 and isinstance(expr.args[0], StrExpr)):
        try:
            value = float(expr.args[0].value)
        except ValueError:
            return None
        return value if math.isinf(value) else None
    return None


def _is_zero(typ: ProperType, expr: Expression | None) -> bool:
    if isinstance(expr, (IntExpr, FloatExpr)):
        return expr.value == 0
    if isinstance(expr, UnaryExpr) and expr.op == "-" and isinstance(expr.expr, (IntExpr, FloatExpr)):
        return expr.expr.value == 0
    if isinstance(expr, NameExpr) and isinstance(typ, Instance) and typ.last_known_value is not None:
        return typ.last_known_value.value == 0
    return isinstance(typ, LiteralType) and typ.value == 0


def typed_result(session: Session, api: CheckerPluginInterface, default: Type, spmd: SpmdType,
                 rank: int | None = None, orders: EntryOrders = ()) -> Type:
    """:func:`with_result` for the module ``api`` checks, remembered per ``default`` (by identity) and result.

    A model gives the same few SPMD types to results of the same few mypy types at
    thousands of calls; mypy shares a type among the expressions it flows to and
    never changes one, so the typed result is shared too (:mod:`spmd_mypy.identity`);
    the session drops them all when a module is (re)parsed (the stubs' SPMD
    classes among them).
    """
    known = session.typed_results.get(default)
    by_result = known[1] if known is not None else session.typed_results.put(default, {})
    key = (spmd, rank, orders, api.options.allow_redefinition)
    typed = by_result.get(key)
    if typed is None:
        typed = by_result[key] = with_result(Encoder.for_checker(session, api), default, spmd, rank, orders)
    return typed


def with_result(encoder: Encoder, default: Type, spmd: SpmdType, rank: int | None = None,
                orders: EntryOrders = ()) -> Type:
    """``default`` (an op's declared return type) with every tensor in it typed ``spmd``.

    Ops with several tensor outputs (``split``, ``unbind``) give each the
    result type; ``rank`` and ``orders`` (entry orders) are those of a result that is one tensor.
    """
    proper = get_proper_type(default)
    if is_tensor(proper):
        assert isinstance(proper, Instance)
        return encoder.tensor(spmd, proper, inferred=True, rank=rank, orders=orders) or default
    if isinstance(proper, TupleType):
        return proper.copy_modified(items=[with_result(encoder, t, spmd) for t in proper.items])
    if isinstance(proper, Instance) and proper.type.fullname in SEQUENCES and proper.args:
        return proper.copy_modified(args=[with_result(encoder, a, spmd) for a in proper.args])
    if isinstance(proper, UnionType):
        return UnionType([with_result(encoder, t, spmd) for t in proper.items])
    return default


def contains_tensor(typ: Type) -> bool:
    """Whether ``typ`` is or contains a tensor (an op's result worth typing)."""
    proper = get_proper_type(typ)
    if is_tensor(proper):
        return True
    if isinstance(proper, (TupleType, UnionType)):
        return any(contains_tensor(t) for t in proper.items)
    return isinstance(proper, Instance) and proper.type.fullname in SEQUENCES and any(
        contains_tensor(a) for a in proper.args)
