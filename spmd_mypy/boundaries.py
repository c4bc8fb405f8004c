"""Declared boundaries: parameters of annotated callables, return values, annotated variables.

At a call of a function, method, ``nn.Module`` (typed by its ``forward``) or
``torch.autograd.Function.apply`` whose parameters have SPMD types, the
signature hook (:func:`relax_function`, :func:`relax_method`) first replaces
those types by their plain tensor class, so that mypy's own check accepts any
tensor (an unannotated tensor is accepted like ``Any``, and an axis the
parameter does not mention is unknown), and leaves the declared signature with
the session for the call.  The return hook of the same call
(:func:`check_call`) then compares every argument with the declared type
exactly, per axis, and reports ``spmd-boundary`` errors with the fix.

A computed value that is returned, or assigned to a variable with an SPMD
annotation, is compared with the declaration by :func:`fit_declared`, which
the dispatcher applies to the result of every call checked
(:func:`spmd_mypy.hooks.finish`); a ``return name`` is left to mypy's own check
of the encoded types.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from mypy.nodes import ARG_POS, Context, Decorator, Expression, FuncDef, OverloadedFuncDef, TypeInfo
from mypy.plugin import CheckerPluginInterface, FunctionContext, FunctionSigContext, MethodContext, MethodSigContext
from mypy.types import (
    AnyType,
    CallableType,
    FunctionLike,
    Instance,
    NoneType,
    Overloaded,
    ProperType,
    TupleType,
    Type,
    TypeAliasType,
    TypeOfAny,
    TypeType,
    TypeVarType,
    UnionType,
    get_proper_type,
)

from spmd_mypy import files, global_mode
from spmd_mypy.compat import (
    bind_method,
    checks_a_value_of_a_type_variable,
    declared_return_type,
    is_declaration,
    is_subtype,
    replace_type_variables,
)
from spmd_mypy.encoding import Divergent, Encoder, is_tensor
from spmd_mypy.fullnames import AXIS_GROUP, SPMD_TENSORS, SPMD_TYPED
from spmd_mypy.identity import IdentityMemo
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_mypy.size_one import settle
from spmd_mypy.source import source
from spmd_mypy.verdict import Report, Verdict, add_report
from spmd_types.typesystem import (
    RETURN_VALUE,
    SpmdType,
    Violation,
    argument_site,
    check_fits,
    check_fits_one_of,
    check_group,
    paths_disagree,
)

__all__ = [
    "check_call",
    "fit_declared",
    "has_spmd",
    "relax_function",
    "relax_method",
    "report_divergent",
    "signature_of",
]

_RELAXED_LIMIT: Final = 10_000  # call sites awaiting their return hook; a safety bound for the daemon


def has_spmd(typ: Type, seen: frozenset[TypeAliasType] = frozenset()) -> bool:
    """Whether ``typ`` mentions an SPMD-typed tensor or an axis process group.

    Type aliases are expanded once each, so recursive ones (``T = int | tuple[T, ...]``) end.
    """
    if isinstance(typ, TypeAliasType):
        if typ in seen:
            return False
        seen = seen | {typ}
    proper = get_proper_type(typ)
    if isinstance(proper, Instance):
        return proper.type.fullname in SPMD_TYPED or any(has_spmd(a, seen) for a in proper.args)
    if isinstance(proper, (UnionType, TupleType)):
        return any(has_spmd(t, seen) for t in proper.items)
    return False


def signature_of(node: object) -> CallableType | None:
    """The plain (not overloaded) signature of a function or decorated function node."""
    if isinstance(node, Decorator):
        node = node.var
    typ = getattr(node, "type", None)
    proper = get_proper_type(typ) if typ is not None else None
    return proper if isinstance(proper, CallableType) else None


def report_divergent(verdict: Verdict, expr: Expression, found: Divergent, *, speculative: bool = False) -> None:
    """A value whose SPMD type depends on the branch taken: an error unless declared."""
    verdict.report([paths_disagree(found.types)], expr, f'"{spell(expr)}"', speculative=speculative)


# -- calls of declared callables ---------------------------------------------------------


def relax_function(session: Session, ctx: FunctionSigContext) -> FunctionLike:
    """The signature mypy checks a call of a declared function with: its SPMD parameters relaxed."""
    return _relaxed(session, ctx.context, ctx.default_signature)


def relax_method(session: Session, ctx: MethodSigContext, method: str) -> FunctionLike:
    """The signature mypy checks a call of a declared method with: its SPMD parameters relaxed.

    Calling an ``nn.Module`` calls its ``forward`` (with ``self`` bound to the
    module), and ``Function.apply`` calls the autograd Function's ``forward``
    (without its ``ctx``).
    """
    signature: FunctionLike | None = ctx.default_signature
    receiver = get_proper_type(ctx.type)
    if method == "__call__" and isinstance(receiver, Instance):
        forward = _forward_signature(receiver.type)
        owner = _forward_owner(receiver.type)
        signature = bind_method(forward, receiver, owner) if forward is not None else None
    elif method == "apply":
        info = _class_of(receiver)
        forward = _forward_signature(info) if info is not None else None
        signature = _drop_first(forward) if forward is not None else None
    if signature is None:
        return ctx.default_signature
    return _relaxed(session, ctx.context, signature)


def _relaxed(session: Session, call: Context, signature: FunctionLike) -> FunctionLike:
    """``signature`` relaxed; the call remembers it, for :func:`check_call` to check the arguments exactly.

    An overloaded ``forward`` (a flag of each call, ``runtime_gather_output:
    Literal[True]``) is relaxed item by item; mypy picks the item.
    """
    relaxed = session.relaxed
    if len(relaxed) > _RELAXED_LIMIT:
        relaxed.clear()
    if call in relaxed and relaxed[call] != signature:  # the call expression: hashable by identity
        relaxed[call] = None  # several overloads were tried: do not guess which one matched
    else:
        relaxed[call] = signature
    if isinstance(signature, Overloaded):
        return Overloaded([_relax(item) for item in signature.items])
    assert isinstance(signature, CallableType)
    return _relax(signature)


def check_call(session: Session, ctx: FunctionContext | MethodContext, callee: str) -> Verdict:
    """A call of a declared callable: each argument fits its parameter; the result is a value like any other."""
    declared = session.relaxed.get(ctx.context)
    overloaded = isinstance(declared, Overloaded)
    verdict = Verdict(returns=_as_computed(session, ctx.api, ctx.default_return_type), fit=True,
                      speculative=overloaded)
    if isinstance(declared, Overloaded):
        # mypy tries the items one by one, each time calling this hook: keep the overloads for the next try,
        # and report past mypy's filter of the tries, so that an SPMD error does not make it try another item.
        declared = _matched_item(declared, ctx)
    else:
        session.relaxed.pop(ctx.context, None)
    if isinstance(declared, CallableType):
        _check_arguments(session, verdict, declared, ctx, callee, speculative=overloaded)
    entering = global_mode.call_result_violations(session, ctx.api, ctx.context, callee, ctx.default_return_type)
    verdict.report(entering, ctx.context, f'call of "{callee}"', speculative=overloaded)
    return verdict


def _matched_item(overloaded: Overloaded, ctx: FunctionContext | MethodContext) -> CallableType | None:
    """The item of ``overloaded`` that mypy picks for the call: the first whose relaxed parameters take the arguments.

    ``None`` when none does (the call is wrong, and mypy says so) or the items'
    parameters do not line up with the arguments as mypy mapped them.
    """
    for item in overloaded.items:
        relaxed = _relax(item)
        if len(relaxed.arg_types) == len(ctx.arg_types) and all(
            is_subtype(actual, formal)
            for formal, actuals in zip(relaxed.arg_types, ctx.arg_types)
            for actual in actuals
        ):
            return item
    return None


def _relax(signature: CallableType) -> CallableType:
    """``signature`` with SPMD parameter types replaced by their plain classes.

    Inside a container (``list[...]``, invariant in mypy) they become ``Any``,
    so that a list of SPMD-typed tensors still matches.  A type variable
    restricted to SPMD types (``TypeVar("T", Spmd[Tensor, "tp:R"], ...)``)
    becomes one bound to the plain class, so that mypy binds it to the
    argument's own type, every axis included; :func:`check_call` checks the
    restriction.
    """
    restricted = {
        v.id: v.copy_modified(values=[], upper_bound=plain)
        for v in signature.variables
        if isinstance(v, TypeVarType) and (plain := _restricted_to(v)) is not None
    }
    if restricted:
        signature = replace_type_variables(signature, restricted)
    return signature.copy_modified(arg_types=[_plain(t, nested=False) for t in signature.arg_types])


def _restricted_to(variable: TypeVarType) -> Type | None:
    """The plain tensor class of a type variable restricted to SPMD-typed tensors; ``None`` for another variable."""
    values = [get_proper_type(v) for v in variable.values]
    if not values or not all(isinstance(v, Instance) and v.type.fullname in SPMD_TENSORS for v in values):
        return None
    first = values[0]
    return first.type.bases[0] if isinstance(first, Instance) and first.type.bases else None


def _plain(typ: Type, nested: bool) -> Type:
    proper = get_proper_type(typ)
    if isinstance(proper, Instance):
        if proper.type.fullname in SPMD_TYPED:
            return AnyType(TypeOfAny.special_form) if nested else proper.type.bases[0]
        if proper.args:
            return proper.copy_modified(args=[_plain(a, nested=True) for a in proper.args])
    if isinstance(proper, UnionType):
        return UnionType([_plain(t, nested) for t in proper.items])
    if isinstance(proper, TupleType):
        return proper.copy_modified(items=[_plain(t, nested=True) for t in proper.items])
    return typ


def _forward_signature(info: TypeInfo) -> FunctionLike | None:
    """The signature of ``forward`` of a module or autograd Function class, if annotated; its overloads, if any."""
    method = info.get_method("forward")
    if isinstance(method, OverloadedFuncDef):
        overloads = get_proper_type(method.type) if method.type is not None else None
        return overloads if isinstance(overloads, Overloaded) else None
    if not isinstance(method, (FuncDef, Decorator)):
        return None
    return signature_of(method)


def _forward_owner(info: TypeInfo) -> TypeInfo | None:
    """The class that defines ``forward`` (generic classes bind its type variables from the receiver)."""
    method = info.get_method("forward")
    return method.info if isinstance(method, (FuncDef, Decorator, OverloadedFuncDef)) else None


def _drop_first(signature: FunctionLike) -> CallableType | None:
    """``signature`` without its first parameter (``self`` or an autograd ``ctx``)."""
    if not isinstance(signature, CallableType) or not signature.arg_types:
        return None
    if signature.arg_kinds[0] != ARG_POS:
        return None
    return signature.copy_modified(
        arg_types=signature.arg_types[1:], arg_kinds=signature.arg_kinds[1:], arg_names=signature.arg_names[1:]
    )


def _class_of(typ: object) -> TypeInfo | None:
    """The class a class object (``MyFunction`` in ``MyFunction.apply``) stands for."""
    if isinstance(typ, CallableType) and typ.is_type_obj():
        return typ.type_object()
    if isinstance(typ, TypeType) and isinstance(typ.item, Instance):
        return typ.item.type
    return None


def _as_computed(session: Session, api: CheckerPluginInterface, typ: Type) -> Type:
    """A call's declared result type, as the value it is at the call site.

    The declaration belongs to the callee; in the caller the result is a value
    like any other, so ``a = f(x)`` does not make ``a`` declared, and without
    ``allow_redefinition`` ``a`` can still be re-bound (see
    :mod:`spmd_mypy.encoding`); nor does ``a, b = f(x)`` for a tuple result.
    """
    proper = get_proper_type(typ)
    if isinstance(proper, TupleType):
        return proper.copy_modified(items=[_as_computed(session, api, item) for item in proper.items])
    if not isinstance(proper, Instance) or proper.type.fullname not in SPMD_TENSORS or not is_declaration(proper):
        return typ
    spmd = Encoder.read(proper)
    if not isinstance(spmd, SpmdType) or not proper.type.bases:
        return typ
    return Encoder.for_checker(session, api).tensor(spmd, proper.type.bases[0], inferred=True) or typ


def _check_arguments(
    session: Session, verdict: Verdict, declared: CallableType, ctx: FunctionContext | MethodContext, callee: str,
    *, speculative: bool = False,
) -> None:
    """Report each argument whose SPMD type does not fit its declared parameter."""
    for formal, name, actual_types, exprs in zip(declared.arg_types, declared.arg_names, ctx.arg_types, ctx.args):
        if not has_spmd(formal) and not _is_restricted(formal):
            continue
        for actual, expr in zip(actual_types, exprs):
            where = argument_site(name, callee)
            violations = _compare(session, ctx.api, verdict, actual, formal, expr)
            verdict.report(violations, expr, where, value=source(expr), speculative=speculative)


def _is_restricted(formal: Type) -> bool:
    proper = get_proper_type(formal)
    return isinstance(proper, TypeVarType) and _restricted_to(proper) is not None


def _compare(session: Session, api: CheckerPluginInterface, verdict: Verdict, actual: Type, formal: Type,
             expr: Expression) -> list[Violation]:
    want, have = get_proper_type(formal), get_proper_type(actual)
    if isinstance(want, TypeVarType) and _restricted_to(want) is not None:
        value = Encoder.read(have)
        allowed = [t for t in (Encoder.read(v) for v in want.values) if isinstance(t, SpmdType)]
        return list(check_fits_one_of(value, allowed)) if isinstance(value, SpmdType) else []
    if isinstance(want, Instance) and want.type.fullname == AXIS_GROUP:
        return _compare_groups(have, want)
    declared = Encoder.read(want)
    if isinstance(declared, SpmdType):
        value = Encoder.read(have)
        if isinstance(value, Divergent):
            value = settle(session, api, expr, value)
        if isinstance(value, Divergent):
            report_divergent(verdict, expr, value)
            return []
        if value is None:
            return []
        return list(check_fits(value, declared) or global_mode.order_violations(session, api, expr, want, have))
    if isinstance(want, UnionType):  # Optional[...]: compare with the one SPMD member
        members = [t for t in want.items if has_spmd(t)]
        if len(members) == 1:
            return _compare(session, api, verdict, actual, members[0], expr)
    if isinstance(want, Instance) and isinstance(have, Instance) and want.type == have.type:
        return [_in_elements(v) for a, f in zip(have.args, want.args)
                for v in _compare(session, api, verdict, a, f, expr)]
    if isinstance(want, TupleType) and isinstance(have, TupleType) and len(want.items) == len(have.items):
        return [_in_elements(v) for a, f in zip(have.items, want.items)
                for v in _compare(session, api, verdict, a, f, expr)]
    return []


def _in_elements(violation: Violation) -> Violation:
    """A violation of a container's elements: a call on the container would not fix it; say what does in words."""
    if not violation.fixes:
        return violation
    calls = " or ".join(fix.call.format(x="element") for fix in violation.fixes)
    return replace(violation, reason=f"{violation.reason} in its elements (each element needs {calls})", fixes=())


def _compare_groups(have: ProperType, want: Instance) -> list[Violation]:
    want_axis, have_axis = Encoder.read_axis(want), Encoder.read_axis(have)
    if want_axis is None or have_axis is None:
        return []
    return list(check_group(have_axis, want_axis))


# -- values that go into a declaration ---------------------------------------------------


def fit_declared(
    session: Session, api: CheckerPluginInterface, result: Type, context: Context, verdict: Verdict,
    reports: list[Report],
) -> Type:
    """Check a computed value against the declared type it goes into; the type to give it.

    That is the case when the expression is returned (its type context is the
    declared return type) or assigned to a variable or parameter with an SPMD
    annotation (its type context is that declaration).  A variable whose type
    was inferred is not a declaration: it may be re-bound to any type.  The
    declared type is given back, so that mypy's own check (which knows
    neither unknown axes nor shards) agrees.  A mismatch is added to
    ``reports``; ``verdict``, the call's, is read, not changed (see
    :mod:`spmd_mypy.repeats`): it says whether mypy is only trying the expression
    and, when a collective (its ``producer``) computed the value, that the fix
    offered on its axis is that call with the declared type as its ``dst``.
    """
    contexts = api.type_context
    context_type = contexts[-1] if contexts else None
    if context_type is None:
        # mypy's second try of a return, without context, is still the return; a value of any other expression
        # without context goes into no declaration.
        declared_result = declared_return_type(api)
        if declared_result is None:
            return result
        expected = _declared_in(declared_result)
        if expected is None or not files.is_returned(session, api, context):
            return result
        where = RETURN_VALUE
    else:
        expected = _declared_in(context_type)
        if expected is None:
            return result  # what every branch below comes to; most checked ops are operands of another op
        declared_result = declared_return_type(api)
        if context_type is declared_result or (
                declared_result is not None and files.is_returned(session, api, context)):
            where = RETURN_VALUE  # the second: a copy of a method for a value of its class's type variable
        elif not _is_declaration(expected):
            return result
        elif files.assigned_to_inferred(session, api, context):
            return _kept(session, api, result)  # a parameter that allow_redefinition lets be re-bound
        else:
            where = "value of a declared type"
    declared, value = Encoder.read(expected), Encoder.read(result)
    if not isinstance(declared, SpmdType):
        return result
    if value is None:
        # A tensor without an SPMD type is accepted wherever one is declared, like Any.
        return expected if is_tensor(result) else result
    if not isinstance(value, SpmdType):
        return result
    violations = check_fits(value, declared) or global_mode.order_violations(session, api, context, expected, result)
    operands: tuple[str | None, ...] = ()
    producer = verdict.producer
    if producer is not None:
        violations = tuple(producer.retarget(v, declared.get(v.axis or "")) for v in violations)
        operands = (producer.x,)
    if checks_a_value_of_a_type_variable(api):
        # The declaration holds for one value of the function's type variable, and the code runs for every
        # value: a fix for this one breaks the others.
        violations = tuple(replace(v, fixes=()) for v in violations)
    value_name = source(context) if violations and isinstance(context, Expression) else None
    add_report(reports, violations, context, where, operands, value_name, verdict.speculative)
    # A value that fits and that mypy accepts as it is keeps its own type, so that a declared
    # variable re-bound to it is narrowed to it.
    return _kept(session, api, result) if not violations and _any_argument(result) else expected


def _declared_in(context_type: Type) -> Type | None:
    """The declaration a value whose type context is ``context_type`` may go into: the context without
    ``Optional`` (:func:`_optional_item`), where it carries an SPMD type (:func:`_may_be_declaration`); else ``None``.

    Remembered by the context's identity: mypy gives every argument of a callee the same parameter type
    object, call after call, and the answer depends only on the type's structure (its class and union items,
    which mypy does not change), not on the side channel, which mypy may erase (so :func:`_is_declaration`
    and :meth:`Encoder.read` are asked each time; see :mod:`spmd_mypy.identity`).
    An alias is not remembered: the daemon may give it a new target.
    """
    remembered = _DECLARED_IN.get(context_type)
    if remembered is not None:
        return remembered[1]
    expected = _optional_item(context_type)
    found = expected if _may_be_declaration(expected) else None
    if isinstance(context_type, TypeAliasType):
        return found
    return _DECLARED_IN.put(context_type, found)


_DECLARED_IN: Final[IdentityMemo[Type, Type | None]] = IdentityMemo(4096)


def _kept(session: Session, api: CheckerPluginInterface, result: Type) -> Type:
    """``result`` as it goes into a declared variable: a constant is written so that mypy narrows the
    variable to it (``x = all_reduce(x, "tp", src=V, dst=R, op="max")``; see :meth:`Encoder.tensor`)."""
    proper = get_proper_type(result)
    value = Encoder.read(proper)
    if not isinstance(proper, Instance) or not isinstance(value, SpmdType) or not proper.type.bases:
        return result
    return Encoder.for_checker(session, api).tensor(value, proper.type.bases[0], inferred=True, kept=True) or result


def _optional_item(typ: Type) -> Type:
    """``X`` for ``Optional[X]`` (a parameter or attribute that may be unset), else ``typ``."""
    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        items = [item for item in proper.items if not isinstance(get_proper_type(item), NoneType)]
        if len(items) == 1:
            return items[0]
    return typ


def _any_argument(typ: Type) -> bool:
    """Whether ``typ`` is an SPMD-typed tensor whose mypy type lists no axis (``SpmdTensor[Any]``)."""
    proper = get_proper_type(typ)
    return (isinstance(proper, Instance) and proper.type.fullname in SPMD_TENSORS and len(proper.args) == 1
            and isinstance(get_proper_type(proper.args[0]), AnyType))


def _may_be_declaration(typ: Type) -> bool:
    """Whether ``typ`` carries an SPMD type: an instance of an SPMD-typed class, or a union with SPMD tensors.

    Any other type context (an operator's ``Tensor | Number`` parameter, a plain
    tensor) is no declaration to fit: :func:`fit_declared` then keeps the
    result, whether or not the value is returned, and need not ask.
    """
    proper = get_proper_type(typ)
    if isinstance(proper, Instance):
        return proper.type.fullname in SPMD_TYPED
    return isinstance(proper, UnionType) and any(isinstance(item, Instance) and item.type.fullname in SPMD_TENSORS
                                                 for item in map(get_proper_type, proper.items))


def _is_declaration(typ: Type) -> bool:
    proper = get_proper_type(typ)
    return isinstance(proper, Instance) and proper.type.fullname in SPMD_TYPED and is_declaration(proper)
