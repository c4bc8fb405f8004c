"""Ordinary torch ops: functions, ``torch.nn.functional``, tensor methods, operators, properties.

Each handler names the op by its public name (``torch.matmul``,
``torch.Tensor.__matmul__``), reads the operands (:mod:`spmd_mypy.values`),
applies the op table's rule from the core (:func:`~spmd_types.typesystem.lookup`,
:func:`~spmd_types.typesystem.apply_op`) and returns the
:class:`~spmd_mypy.verdict.Verdict`: the violations, worded in the op's own
spelling (``+``, ``@``, ``torch.exp``), and the result's SPMD type.  Calls on
tensors without SPMD types keep mypy's own result: the plugin is inert on code
that does not use SPMD annotations.
"""

from __future__ import annotations

import functools
from typing import Final, TypeAlias, TypeGuard

from mypy.nodes import (
    CallExpr,
    ComparisonExpr,
    Context,
    Expression,
    IndexExpr,
    MemberExpr,
    NameExpr,
    OperatorAssignmentStmt,
    OpExpr,
    RefExpr,
    TupleExpr,
    UnaryExpr,
)
from mypy.plugin import AttributeContext, CheckerPluginInterface, FunctionContext, FunctionSigContext, MethodContext
from mypy.types import AnyType, FunctionLike, Instance, ProperType, TupleType, Type, UnionType, get_proper_type

from spmd_mypy import files, global_mode
from spmd_mypy.axes import axis_name
from spmd_mypy.boundaries import has_spmd, report_divergent
from spmd_mypy.compat import container_elements, expression_type
from spmd_mypy.encoding import Divergent, Encoder, plain_tensor
from spmd_mypy.fullnames import LIST, TYPING_SEQUENCE, public_module_name, spmd_function
from spmd_mypy.identity import IdentityMemo
from spmd_mypy.numbers import NumberReader
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.size_one import settle
from spmd_mypy.source import source
from spmd_mypy.values import Arguments, arguments_key, contains_tensor, literal_kinds, read_arguments
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import (
    BUILTIN_SUM,
    MODULE_OPS,
    MODULE_PARAMETERS,
    OPERATOR_SYMBOLS,
    OPS,
    PARTIAL_OUTPUT_FUNCTIONS,
    UNKNOWN,
    Code,
    EntryOrders,
    Operand,
    OpOutcome,
    OpRule,
    PartialOutputFunction,
    Result,
    SpmdType,
    Violation,
    apply_op,
    bounded_put,
    check_fits,
    check_partial_output,
    display_name,
    lookup,
    method_name,
    on_a_length,
    partial_axes,
    writes_through,
    written_buffer,
)

__all__ = [
    "PARTIAL_OUTPUTS",
    "check_builtin_sum",
    "check_function",
    "check_method",
    "check_module_call",
    "check_partial_output_call",
    "check_property",
    "remember",
    "remembered",
    "torch_module_op",
    "widen_tensor_lists",
    "widens",
]

# Parameter names of operators whose arguments are not all called ``other``.
_OPERATOR_PARAMS: Final = {"__getitem__": ("indices",), "__setitem__": ("indices", "value")}


def widen_tensor_lists(session: Session, ctx: FunctionSigContext) -> FunctionLike:
    """A torch function's signature with its ``list[Tensor]`` parameters taking ``Sequence[Tensor]``.

    ``list`` is invariant, so a list built from SPMD-typed tensors
    (``outs.append(h)``, then ``torch.cat(outs)``), or from constants such as
    ``torch.zeros(4)`` in a module that uses SPMD types, is not a
    ``list[Tensor]`` to mypy.  Torch's ops only read these lists; the
    collectives of ``torch.distributed`` also write tensors into some of them,
    which the widened type does not change either.
    """
    signature = ctx.default_signature
    if not files.uses_spmd(session, ctx.api):
        return signature
    known = _WIDENED.get(signature)
    if known is not None:
        return known[1]
    widened = [_widen(ctx, t) for t in signature.arg_types]
    return _WIDENED.put(signature, signature if all(new is old for new, old in zip(widened, signature.arg_types))
                        else signature.copy_modified(arg_types=widened))


_WIDENED: Final[IdentityMemo[FunctionLike, FunctionLike]] = IdentityMemo(4096)
"""Each torch function's signature as widened, by the signature mypy hands the hook: the same object at
every call of a function that is not generic."""


def _widen(ctx: FunctionSigContext, typ: Type) -> Type:
    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        items = [_widen(ctx, item) for item in proper.items]
        if all(new is old for new, old in zip(items, proper.items)):
            return typ
        return UnionType.make_union(items, proper.line, proper.column)
    if _is_tensor_list(proper):
        return ctx.api.named_generic_type(TYPING_SEQUENCE, list(proper.args))
    return typ


def widens(signature: FunctionLike) -> bool:
    """Whether :func:`widen_tensor_lists` can change ``signature``: a parameter of one of its items takes a
    list of tensors (or a union with one).

    The router asks this once per torch callable, so that mypy applies no
    signature hook, at any call, to the many that take no such list.
    """
    return any(_takes_tensor_list(t) for item in signature.items for t in item.arg_types)


def _takes_tensor_list(typ: Type) -> bool:
    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        return any(_takes_tensor_list(item) for item in proper.items)
    return _is_tensor_list(proper)


def _is_tensor_list(proper: ProperType) -> TypeGuard[Instance]:
    return (isinstance(proper, Instance) and proper.type.fullname == LIST and bool(proper.args)
            and contains_tensor(proper.args[0]))


def check_function(session: Session, ctx: FunctionContext, name: str) -> Verdict:
    """A call of torch function ``name``."""
    # Each field of the context read once: from compiled code every read of a mypy object's attribute is generic.
    api, arg_types = ctx.api, ctx.arg_types
    facts = files.file_facts(session, api)
    if not _involves_spmd(facts, arg_types):
        return Verdict()
    rule = lookup(name)
    default = ctx.default_return_type
    if _is_any(default):  # the first tensor argument is looked for only where mypy's result is Any
        first_tensor = next((t for types in arg_types for t in types if plain_tensor(t) is not None), None)
        if first_tensor is not None:
            default = _untyped_returns_tensor(default, name, rule, first_tensor)
    names, args, context = ctx.callee_arg_names, ctx.args, ctx.context
    key = _op_key(facts, context, name, rule, default, arguments_key(names, arg_types, args, facts=facts))
    known = _OPS.get(key) if key is not None else None
    if known is not None:
        return known.verdict(default)
    numbers = NumberReader(session, api, context)
    arguments = read_arguments(session, api, rule, names, arg_types, args, numbers=numbers)
    return remember(key, _apply(session, ctx, default, name, rule, arguments, numbers=numbers))


def _untyped_returns_tensor(default: Type, name: str, rule: OpRule, like: Type) -> Type:
    """A plain tensor, where torch defines table op ``name`` without annotations; else mypy's ``default``.

    mypy types the result of such a function (``torch.norm``, ``Tensor.unflatten``) ``Any``,
    which would end all checking of what follows; a table op returns a tensor.
    """
    if not (_is_any(default) and name in OPS and rule.result in (Result.JOIN, Result.DETACH)):
        return default  # asked first: a plain tensor is built only where it is returned
    tensor = plain_tensor(like)
    return tensor if tensor is not None else default


def check_builtin_sum(session: Session, ctx: FunctionContext) -> Verdict:
    """Python's ``sum(tensors)`` or ``sum(tensors, start)``: the sum of the elements."""
    if not _involves_spmd(files.file_facts(session, ctx.api), ctx.arg_types):
        return Verdict()
    names = ("iterable", "start")[: len(ctx.arg_types)]
    args = [list(exprs) for exprs in ctx.args]
    literal = _container_summed(session, ctx, args[0][0]) if args and args[0] else None
    if literal is not None:
        args[0][0] = literal
    arguments = read_arguments(session, ctx.api, BUILTIN_SUM, names, ctx.arg_types, args)
    if literal is not None:  # the elements are written on another line: no fix here can name them
        arguments.written = [None if operand.param == "iterable" else written
                             for operand, written in zip(arguments.operands, arguments.written)]
    # mypy tries sum's overloads under an error filter: an SPMD error must not reject one.
    return _apply(session, ctx, ctx.default_return_type, "sum", BUILTIN_SUM, arguments, speculative=True)


def _container_summed(session: Session, ctx: FunctionContext, iterable: Expression) -> Expression | None:
    """The list, tuple or dict literal whose elements ``sum`` adds, where ``iterable`` names one; else ``None``.

    mypy types a container of tensors of different SPMD types by their join,
    which has none (``losses = {"ce": partial, "aux": replicated}``); the
    literal still says what each element is.  ``sum(losses.values())`` sums the
    values of a dict.
    """
    named: Expression = iterable
    dict_values = False
    if (isinstance(iterable, CallExpr) and isinstance(iterable.callee, MemberExpr) and iterable.callee.name == "values"
            and not iterable.args):
        named, dict_values = iterable.callee.expr, True
    if not isinstance(named, NameExpr):
        return None
    value = files.value_of(session, ctx.api, named.name, ctx.context)
    return container_elements(value, dict_values) if value is not None else None


def check_method(session: Session, ctx: MethodContext, method: str) -> Verdict:
    """A call of tensor method ``method`` (operators included)."""
    api, arg_types, receiver_type, context = ctx.api, ctx.arg_types, ctx.type, ctx.context
    facts = files.file_facts(session, api)
    if not (_involves_spmd(facts, arg_types) or has_spmd(receiver_type) or _is_union(receiver_type)):
        return Verdict()
    name = method_name(method)
    rule = lookup(name)
    receiver = _receiver(context, method)
    operator = method in OPERATOR_SYMBOLS
    # mypy checks a method or operator on a union (a variable typed differently by
    # branch) one member at a time, on either side of an operator; the union itself
    # is on the operand's expression.
    args = ctx.args
    if operator and isinstance(context, OpExpr) and args and len(args[0]) == 1:
        # The other side as written: mypy hands a reflected operator (__rmatmul__) a stand-in expression.
        args = [[context.left if method.startswith("__r") else context.right], *args[1:]]
    operands = [receiver] if receiver is not None else []
    if operator and args and args[0]:
        operands.append(args[0][0])
    for operand in operands:
        whole = expression_type(api, operand)
        if whole is None or not _is_union(whole):
            continue  # only a union reads as divergent: the common operand is not read twice
        divergent = Encoder.read(whole)
        if isinstance(divergent, Divergent):
            divergent = settle(session, api, operand, divergent)
        if isinstance(divergent, Divergent):
            verdict = Verdict(result=UNKNOWN)
            report_divergent(verdict, operand, divergent, speculative=operator)
            return verdict
    names: list[str | None] = ctx.callee_arg_names
    if method.startswith("__") and not any(names):
        # mypy passes no parameter names for operators; torch's signatures name them so.
        names = [param for param in _OPERATOR_PARAMS.get(method, ("other",))[: len(arg_types)]]
    default = _untyped_returns_tensor(ctx.default_return_type, name, rule, receiver_type)
    arguments_keyed = arguments_key(names, arg_types, args, (receiver_type, receiver), facts)
    key = _op_key(facts, context, name, rule, default, arguments_keyed)
    known = _OPS.get(key) if key is not None else None
    if known is not None:
        return known.verdict(default, speculative=operator)
    numbers = NumberReader(session, api, context)
    arguments = read_arguments(session, api, rule, names, arg_types, args, (receiver_type, receiver), numbers)
    if isinstance(context, OperatorAssignmentStmt):  # p += 1: no call around the target p writes back into it
        arguments.written = [None if operand.param == "input" else written
                             for operand, written in zip(arguments.operands, arguments.written)]
    verdict = _apply(session, ctx, default, name, rule, arguments, speculative=operator, numbers=numbers)
    return remember(key, verdict)


PARTIAL_OUTPUTS: Final = {spmd_function(name): function for name, function in PARTIAL_OUTPUT_FUNCTIONS.items()}
"""The ``spmd_types`` functions that take ``out_partial_axes=``, by full name."""

_PARTIAL_AXES: Final = "out_partial_axes"
_ALIASING_CASTS: Final = frozenset({spmd_function("reinterpret")})
"""Casts whose result is their input itself (``convert`` copies)."""


def check_partial_output_call(session: Session, ctx: FunctionContext, function: PartialOutputFunction) -> Verdict:
    """``spmd_types.matmul(x, w, out_partial_axes="tp")`` and its kin: the torch op, then ``P`` on those axes."""
    if not _involves_spmd(files.file_facts(session, ctx.api), ctx.arg_types):
        return Verdict()
    names: list[str] = []
    arg_types: list[list[Type]] = []
    args: list[list[Expression]] = []
    axes_arg = None
    for name, types, exprs in zip(ctx.callee_arg_names, ctx.arg_types, ctx.args):
        if name == _PARTIAL_AXES:
            axes_arg = (exprs[0], types[0]) if exprs else None
        else:
            names.append(function.op_param(name or ""))
            arg_types.append(types)
            args.append(exprs)
    axes, problem = _partial_axes(ctx, axes_arg)
    if axes is None:
        verdict = Verdict(result=UNKNOWN, fit=True)
        verdict.report([Violation(Code.AXIS, None, problem or "")], ctx.context, function.where)
        return verdict
    rule = lookup(function.op)
    arguments = read_arguments(session, ctx.api, rule, names, arg_types, args)
    return _apply(session, ctx, ctx.default_return_type, function.op, rule, arguments, partial=(function, axes))


def _partial_axes(
    ctx: FunctionContext, arg: tuple[Expression, Type] | None
) -> tuple[tuple[str, ...] | None, str | None]:
    """The axes an ``out_partial_axes`` argument names (``()``: not passed), or why they cannot be read."""
    if arg is None:
        return (), None
    expr, typ = arg
    proper = get_proper_type(typ)
    if isinstance(expr, TupleExpr):
        items = [(item, proper.items[k] if isinstance(proper, TupleType) and k < len(proper.items) else typ)
                 for k, item in enumerate(expr.items)]
    else:
        items = [arg]
    names = [axis_name(item) for item in items]
    if not all(isinstance(name, str) for name in names):
        return None, ("cannot tell which mesh axes out_partial_axes names: write them in the call, as a string "
                      'literal, a Final str, or a tuple of them (out_partial_axes=("dp", "tp"))')
    return partial_axes(tuple(names))


def torch_module_op(owner: str) -> str | None:
    """The public name (``torch.nn.GELU``) of torch module class ``owner``, if calling one is an op."""
    public = public_module_name(owner)
    return public if public in MODULE_OPS else None


def check_module_call(session: Session, ctx: MethodContext, module: str) -> Verdict:
    """``self.norm(x)`` for a torch module: its op on ``x`` and the module's parameters.

    mypy types every module call ``Any``; without this, one dropout in a block
    would end all checking of what follows it.  The module's own parameters
    (``weight``, ``bias``) are operands of unknown type.
    """
    if not ctx.arg_types or not ctx.arg_types[0]:
        return Verdict()
    if not _involves_spmd(files.file_facts(session, ctx.api), ctx.arg_types):
        return Verdict()
    x_type, x_expr = ctx.arg_types[0][0], ctx.args[0][0]
    tensor = plain_tensor(x_type)
    if tensor is None:
        return Verdict()
    op = MODULE_OPS[module]
    rule = lookup(op)
    arguments = read_arguments(session, ctx.api, rule, ["input"], [[x_type]], [[x_expr]])
    called = spell(ctx.context.callee) if isinstance(ctx.context, CallExpr) else "module"
    for parameter in MODULE_PARAMETERS.get(module, ()):
        arguments.add(parameter, UNKNOWN, f"{called}.{parameter}")
    return _apply(session, ctx, tensor, op, rule, arguments)


def check_property(session: Session, ctx: AttributeContext, attribute: str) -> Verdict:
    """A tensor property such as ``x.T``."""
    if ctx.is_lvalue:
        return Verdict()
    spmd = Encoder.read(ctx.type)
    if not isinstance(spmd, SpmdType):
        return Verdict()
    name = method_name(attribute)
    result = apply_op(lookup(name), [Operand("input", spmd)], op=name).result
    rank, orders, _ = global_mode.result_layout(session, ctx.api, ctx.context, name,
                                                [Operand("input", spmd, Encoder.rank(ctx.type))],
                                                [Encoder.orders(ctx.type)], {}, result)
    # Where it carries entry orders (in a global function), the result is fitted to where it goes, as an op's is.
    return Verdict(result=result, rank=rank, orders=orders, fit=bool(orders))


def _involves_spmd(facts: files.FileFacts | None, arg_types: list[list[Type]]) -> bool:
    """Whether the call is in a module that uses SPMD types (``facts``: the module's, see
    :func:`~spmd_mypy.files.file_facts`), or has an SPMD-typed argument (of ``arg_types``).

    The fast path for everything else (torch's own sources on a cold run).
    """
    return (facts is not None and facts.uses_spmd) or any(has_spmd(t) for types in arg_types for t in types)


def _is_any(typ: Type) -> bool:
    return isinstance(get_proper_type(typ), AnyType)


@functools.lru_cache(maxsize=8192)
def _outcome(rule: OpRule, operands: tuple[Operand, ...], passed: frozenset[str], autograd: bool) -> OpOutcome:
    """:func:`apply_op`, remembered: a model applies the same few ops to the same few types."""
    return apply_op(rule, operands, passed, autograd=autograd)


def _sharded_outcome(rule: OpRule, name: str, arguments: Arguments, autograd: bool) -> OpOutcome:
    """:func:`apply_op` on operands among which are shards, whose dims follow op ``name``'s literal arguments.

    Remembered like :func:`_outcome` where those arguments can be a key (a
    slice cannot before Python 3.12); each value is keyed with its type, so
    that ``keepdim=True`` and ``keepdim=1`` stay apart.
    """
    literals = tuple((param, value, literal_kinds(value)) for param, value in arguments.literals.items())
    try:
        hash(literals)
    except TypeError:
        return apply_op(rule, arguments.operands, arguments.passed, autograd=autograd, op=name,
                        args=arguments.literals)
    return _sharded(rule, name, tuple(arguments.operands), frozenset(arguments.passed), autograd, literals)


@functools.lru_cache(maxsize=8192)
def _sharded(
    rule: OpRule,
    name: str,
    operands: tuple[Operand, ...],
    passed: frozenset[str],
    autograd: bool,
    literals: tuple[tuple[str, object, object], ...],
) -> OpOutcome:
    args = {param: value for param, value, _ in literals}
    return apply_op(rule, operands, passed, autograd=autograd, op=name, args=args)


OpKey: TypeAlias = tuple[object, ...]


class _Found:
    """What checking an op found where it reported nothing: the fields of its :class:`Verdict` but mypy's type.

    A plain class, as :class:`Verdict` is: a dataclass costs an ``exec`` of each generated method at import.
    """

    def __init__(self, result: SpmdType | None, rank: int | None, orders: EntryOrders, fit: bool) -> None:
        self.result = result
        self.rank = rank
        self.orders = orders
        self.fit = fit

    def verdict(self, default: Type, *, speculative: bool = False) -> Verdict:
        """The verdict of the same op at another place whose mypy result type is ``default``."""
        return Verdict(returns=default, result=self.result, rank=self.rank, orders=self.orders, fit=self.fit,
                       speculative=speculative)


_OPS: Final[dict[OpKey, _Found]] = {}
"""What checking an op found where it reported nothing, by :func:`_op_key`.  A model applies the same
few ops to the same few types, with the same literals, at thousands of call sites; a hit skips reading
the arguments into operands and the rule."""
_OPS_MAX: Final = 8192


def _op_key(
    facts: files.FileFacts | None,
    context: Context,
    name: str,
    rule: OpRule,
    default: Type,
    arguments: tuple[object, ...] | None,
) -> OpKey | None:
    """Everything that :func:`_apply` decides op ``name`` at ``context`` from, where the arguments have a key
    (see :func:`~spmd_mypy.values.arguments_key`) and the facts of the module are known (``facts``, see
    :func:`~spmd_mypy.files.file_facts`); ``None`` where the op takes the full check.  The op's
    ``rule`` is the core's for ``name`` (:func:`~spmd_types.typesystem.lookup`), so the name stands for it.

    Besides the arguments that is what mypy's result ``default`` is (a tensor or
    ``Any``), and the facts of the call's place that the rules consult
    (:class:`~spmd_mypy.files.Place`): whether it runs with autograd, in global
    code (a ``global_spmd`` function or a ``local_region``), and on which axes a
    region makes it local.  Ops that make constants also consult whether the
    module uses SPMD types and whether the constant starts a buffer that is
    written in place later, which their key holds too.  Ops that write in place
    consult what their input aliases and are never keyed.
    """
    if arguments is None or rule.inplace or facts is None:
        return None
    # Ops that make constants also ask whether the module uses SPMD types and whether the buffer is written later.
    constants = (facts.uses_spmd, facts.is_written_later(context)) if rule.makes_constants else ()
    return (name, arguments, _result_facts(default), facts.place(context), constants)


def _result_facts(default: Type) -> tuple[bool, bool]:
    """Whether mypy's result ``default`` contains a tensor, and whether it is ``Any``: what :func:`_apply`
    asks of it.  Remembered by the identity of the type, which mypy shares among the calls of a callable
    that is not generic (:mod:`spmd_mypy.identity`)."""
    known = _RESULTS.get(default)
    if known is not None:
        return known[1]
    return _RESULTS.put(default, (contains_tensor(default), _is_any(default)))


_RESULTS: Final[IdentityMemo[Type, tuple[bool, bool]]] = IdentityMemo(4096)


def remembered(key: OpKey | None) -> _Found | None:
    """What checking the op or collective (:mod:`spmd_mypy.collectives`) keyed ``key`` found, if remembered."""
    return _OPS.get(key) if key is not None else None


def remember(key: OpKey | None, verdict: Verdict) -> Verdict:
    """``verdict``, remembered under ``key`` where it reports nothing (a report is made at its own place)."""
    if key is not None and not verdict.reports:
        bounded_put(_OPS, key, _Found(verdict.result, verdict.rank, verdict.orders, verdict.fit), _OPS_MAX)
    return verdict


def _is_union(typ: Type) -> bool:
    return isinstance(get_proper_type(typ), UnionType)


def _apply(
    session: Session,
    ctx: FunctionContext | MethodContext,
    default: Type,
    name: str,
    rule: OpRule,
    arguments: Arguments,
    speculative: bool = False,
    numbers: NumberReader | None = None,
    partial: tuple[PartialOutputFunction, tuple[str, ...]] | None = None,
) -> Verdict:
    """Op ``name`` with rule ``rule`` applied to ``arguments``; ``default`` is mypy's result type.

    ``speculative`` marks an expression mypy only tries (see :class:`~spmd_mypy.verdict.Report`);
    ``numbers`` found the problems, if any, in the computation of the numbers among the arguments.
    ``partial`` is the ``spmd_types`` function that runs the op, and its
    ``out_partial_axes``: the core's :func:`~spmd_types.typesystem.check_partial_output`
    then gives the result, whose type on those axes is declared even where the
    operands have none.
    """
    verdict = Verdict(returns=default, speculative=speculative)
    # Only values that already have an SPMD type are followed, and constants in
    # modules that use SPMD types; anything else stays a plain tensor, accepted
    # like Any where it goes into an SPMD declaration (a fresh nn.Parameter).
    constant = rule.makes_constants and files.uses_spmd(session, ctx.api)
    if not (arguments.typed or constant or (partial is not None and partial[1])):
        verdict.fit = True
        return verdict
    returns_tensor = contains_tensor(default)
    untyped = _is_any(default)  # a torch method without annotations, not in the op table
    if not (rule.inplace or returns_tensor or untyped):
        return verdict  # size(), item(), and the like
    for expr, found in arguments.divergent:
        report_divergent(verdict, expr, found, speculative=speculative)
    for problem in numbers.problems if numbers is not None else ():
        verdict.report(problem.violations, problem.at, problem.where, speculative=speculative)
    autograd = not files.place(session, ctx.api, ctx.context).without_autograd
    where = display_name(name)
    sharded = arguments.sharded  # read once: it looks at every operand's every axis
    axes: tuple[str, ...] = ()
    if partial is not None:
        function, axes = partial
        where = function.where
        outcome = check_partial_output(function, arguments.operands, axes, arguments.passed, autograd=autograd,
                                       args=arguments.literals)
    elif sharded:  # the shards' dims follow the op's literal arguments
        outcome = _sharded_outcome(rule, name, arguments, autograd)
    else:
        outcome = _outcome(rule, tuple(arguments.operands), frozenset(arguments.passed), autograd)
    if outcome.violations:
        violations = tuple(_on_lengths(v, arguments) for v in outcome.violations)
        verdict.report(violations, ctx.context, where, arguments.spelled, speculative=speculative)
    aliased = _cast_input(session, ctx.api, arguments.expressions.get("input")) if rule.inplace else None
    if aliased is not None:
        through = writes_through(rule, arguments.operands, aliased, autograd=autograd)
        if through:  # the operands are spelled (source text) only for a report
            verdict.report(through, ctx.context, where, arguments.spelled, speculative=speculative)
    if sharded:
        outcome = global_mode.check_op(session, ctx.api, ctx.context, name, arguments.operands, outcome.result,
                                       arguments.literals, axes)
        if outcome.violations:
            verdict.report(outcome.violations, ctx.context, where, arguments.spelled, speculative=speculative)
    if not returns_tensor:
        return verdict
    verdict.rank, verdict.orders, unordered = global_mode.result_layout(
        session, ctx.api, ctx.context, name, arguments.operands, arguments.orders, arguments.literals, outcome.result)
    if unordered and not outcome.violations:  # operands cut along different dims are reported once, by the
        verdict.report(unordered, ctx.context, where, arguments.spelled, speculative=speculative)  # per-axis rules
    result = outcome.result
    if constant and files.is_written_later(session, ctx.api, ctx.context):
        result = written_buffer(result)  # what it holds once written into
    out = arguments.expressions.get("out")
    out_type = expression_type(ctx.api, out) if out is not None else None
    target = Encoder.read(out_type) if out_type is not None else None
    if out is not None and isinstance(target, SpmdType):
        writes = check_fits(result, target, code=Code.INPLACE)
        verdict.report(writes, out, f"{display_name(name)}(out=...)", value=source(out))
    verdict.result, verdict.fit = result, True
    return verdict


def _cast_input(session: Session, api: CheckerPluginInterface, target: Expression | None) -> SpmdType | None:
    """The type of the input of the ``reinterpret`` whose result the variable ``target`` holds.

    Such a result shares its storage with the input (see the core's ``writes_through``).
    """
    if not isinstance(target, NameExpr):
        return None
    value = files.value_of(session, api, target.name, target)
    if not (isinstance(value, CallExpr) and isinstance(value.callee, RefExpr) and value.args
            and value.callee.fullname in _ALIASING_CASTS):
        return None
    typ = expression_type(api, value.args[0])
    found = Encoder.read(typ) if typ is not None else None
    return found if isinstance(found, SpmdType) else None


def _on_lengths(violation: Violation, arguments: Arguments) -> Violation:
    """``violation``, said to involve a shard's length where one of its operands is one (see the core's numbers)."""
    lengths = [arguments.spelled[k] for k in violation.operands if k in arguments.lengths]
    return on_a_length(violation, lengths[0] or "the number") if lengths else violation


def _receiver(context: Context, method: str) -> Expression | None:
    """The expression a method was called on, for spelling fixes."""
    if isinstance(context, CallExpr) and isinstance(context.callee, MemberExpr):
        return context.callee.expr
    if isinstance(context, OpExpr):
        return context.right if method.startswith("__r") else context.left
    if isinstance(context, ComparisonExpr):
        return context.operands[0]
    if isinstance(context, OperatorAssignmentStmt):
        return context.lvalue
    if isinstance(context, IndexExpr):
        return context.base
    if isinstance(context, UnaryExpr):
        return context.expr
    return None
