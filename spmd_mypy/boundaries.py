"""Declared boundaries: parameters of annotated callables, and return values.

At a call of a function, method, ``nn.Module`` (typed by its ``forward``) or
``torch.autograd.Function.apply`` whose parameters have SPMD types, a
signature hook first replaces those types by their plain tensor class, so that
mypy's own check accepts any tensor (an unannotated tensor is accepted like
``Any``, and an axis the parameter does not mention is unknown).  The return
hook of the same call then compares every argument with the declared type
exactly, per axis, and reports ``spmd-boundary`` errors with the fix.

A ``return <call>`` is checked the same way against the declared return type;
a ``return name`` is left to mypy's own check of the encoded types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mypy.nodes import ARG_POS, Context, Decorator, Expression, FuncDef, TypeInfo
from mypy.plugin import CheckerPluginInterface
from mypy.types import (
    AnyType,
    CallableType,
    FunctionLike,
    Instance,
    NoneType,
    ProperType,
    TupleType,
    Type,
    TypeAliasType,
    TypeOfAny,
    UnionType,
    get_proper_type,
)

from spmd_mypy.compat import declared_return_type, is_declaration
from spmd_mypy.encoding import Divergent, Encoder, is_tensor
from spmd_mypy.fullnames import AXIS_GROUP, SPMD_TENSORS, SPMD_TYPED
from spmd_mypy.report import spell
from spmd_mypy.session import Session
from spmd_types.typesystem import (
    RETURN_VALUE,
    Code,
    Endpoint,
    SpmdType,
    Violation,
    argument_site,
    check_fits,
    retargeted,
)

__all__ = [
    "Producer",
    "as_computed",
    "check_arguments",
    "fit_declared",
    "forward_signature",
    "has_spmd",
    "relax",
    "signature_of",
]


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


def relax(signature: CallableType) -> CallableType:
    """``signature`` with SPMD parameter types replaced by their plain classes.

    Inside a container (``list[...]``, invariant in mypy) they become ``Any``,
    so that a list of SPMD-typed tensors still matches.
    """
    return signature.copy_modified(arg_types=[_plain(t, nested=False) for t in signature.arg_types])


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


def signature_of(node: object) -> CallableType | None:
    """The plain (not overloaded) signature of a function or decorated function node."""
    if isinstance(node, Decorator):
        node = node.var
    typ = getattr(node, "type", None)
    proper = get_proper_type(typ) if typ is not None else None
    return proper if isinstance(proper, CallableType) else None


def forward_signature(info: TypeInfo) -> CallableType | None:
    """The signature of ``forward`` of a module or autograd Function class, if annotated."""
    method = info.get_method("forward")
    if not isinstance(method, (FuncDef, Decorator)):
        return None
    return signature_of(method)


def drop_first(signature: FunctionLike) -> CallableType | None:
    """``signature`` without its first parameter (``self`` or an autograd ``ctx``)."""
    if not isinstance(signature, CallableType) or not signature.arg_types:
        return None
    if signature.arg_kinds[0] != ARG_POS:
        return None
    return signature.copy_modified(
        arg_types=signature.arg_types[1:], arg_kinds=signature.arg_kinds[1:], arg_names=signature.arg_names[1:]
    )


def check_arguments(
    session: Session,
    api: CheckerPluginInterface,
    declared: CallableType,
    arg_types: Sequence[Sequence[Type]],
    args: Sequence[Sequence[Expression]],
    context: Context,
    callee: str,
) -> None:
    """Report each argument whose SPMD type does not fit its declared parameter."""
    for formal, name, actual_types, exprs in zip(declared.arg_types, declared.arg_names, arg_types, args):
        if not has_spmd(formal):
            continue
        for actual, expr in zip(actual_types, exprs):
            where = argument_site(name, callee)
            violations = _compare(session, api, actual, formal, expr)
            session.reporter.violations(api, violations, expr, where, value=spell(expr))


def _compare(
    session: Session, api: CheckerPluginInterface, actual: Type, formal: Type, expr: Expression
) -> list[Violation]:
    want, have = get_proper_type(formal), get_proper_type(actual)
    if isinstance(want, Instance) and want.type.fullname == AXIS_GROUP:
        return _compare_groups(have, want)
    declared = Encoder.read(want)
    if isinstance(declared, SpmdType):
        value = Encoder.read(have)
        if isinstance(value, Divergent):
            report_divergent(session, api, expr, value)
            return []
        return list(check_fits(value, declared)) if value is not None else []
    if isinstance(want, UnionType):  # Optional[...]: compare with the one SPMD member
        members = [t for t in want.items if has_spmd(t)]
        if len(members) == 1:
            return _compare(session, api, actual, members[0], expr)
    if isinstance(want, Instance) and isinstance(have, Instance) and want.type == have.type:
        return [v for a, f in zip(have.args, want.args) for v in _compare(session, api, a, f, expr)]
    if isinstance(want, TupleType) and isinstance(have, TupleType) and len(want.items) == len(have.items):
        return [v for a, f in zip(have.items, want.items) for v in _compare(session, api, a, f, expr)]
    return []


def _compare_groups(have: ProperType, want: Instance) -> list[Violation]:
    want_axis, have_axis = Encoder.read_axis(want), Encoder.read_axis(have)
    if want_axis is None or have_axis is None or want_axis == have_axis:
        return []
    reason = f"expected the process group of axis {want_axis!r}, got the one of {have_axis!r}"
    return [Violation(Code.AXIS, None, reason)]


def report_divergent(
    session: Session, api: CheckerPluginInterface, expr: Expression, found: Divergent, *, speculative: bool = False
) -> None:
    """A value whose SPMD type depends on the branch taken: an error unless declared."""
    types = " or ".join(t.describe() for t in found.types)
    reason = (f"has SPMD type {types} depending on the branch taken (or the loop iteration); "
              f"make the branches agree, or declare it with one type")
    session.reporter.violations(api, [Violation(Code.BRANCH, None, reason)], expr, f'"{spell(expr)}"',
                                speculative=speculative)


@dataclass(frozen=True)
class Producer:
    """The collective or cast call whose result is being fitted: ``call(x, axis, src=src, ...)``."""

    call: str
    axis: str
    src: Endpoint
    x: str  # how the input is spelled in the source


def fit_declared(
    session: Session,
    api: CheckerPluginInterface,
    result: Type,
    context: Context,
    *,
    speculative: bool = False,
    producer: Producer | None = None,
) -> Type:
    """Check a computed value against the declared type it goes into; the type to give it.

    That is the case when the expression is returned (its type context is the
    declared return type) or assigned to a variable or parameter with an SPMD
    annotation (its type context is that declaration).  A variable whose type
    was inferred is not a declaration: it may be re-bound to any type.  The
    declared type is given back, so that mypy's own check (which knows
    neither unknown axes nor shards) agrees.  When a collective ``producer``
    computed the value, the fix offered on its axis is that call with the
    declared type as its ``dst``.
    """
    context_type = api.type_context[-1] if api.type_context else None
    declared_result = declared_return_type(api)
    if context_type is None and declared_result is not None and session.is_returned(api, context):
        context_type = declared_result  # mypy's second try of a return, without context: still the return
    if context_type is None:
        return result
    expected = _optional_item(context_type)
    if context_type is declared_result:
        where = RETURN_VALUE
    elif _is_declaration(expected) and not session.assigned_to_inferred(api, context):
        where = "value of a declared type"
    else:
        return result
    declared, value = Encoder.read(expected), Encoder.read(result)
    if not isinstance(declared, SpmdType):
        return result
    if value is None:
        # A tensor without an SPMD type is accepted wherever one is declared, like Any.
        return expected if is_tensor(result) else result
    if not isinstance(value, SpmdType):
        return result
    violations = check_fits(value, declared)
    operands: tuple[str, ...] = ()
    if producer is not None:
        violations = tuple(retargeted(v, producer.call, producer.axis, producer.src, declared.get(v.axis or ""))
                           for v in violations)
        operands = (producer.x,)
    value_name = spell(context) if isinstance(context, Expression) else "x"
    session.reporter.violations(api, violations, context, where, operands, value=value_name, speculative=speculative)
    # A value that fits and that mypy accepts as it is keeps its own type, so that a declared
    # variable re-bound to it is narrowed to it (x = all_reduce(x, ..., op="max") is a constant).
    return result if not violations and _any_argument(result) else expected


def as_computed(session: Session, api: CheckerPluginInterface, typ: Type) -> Type:
    """A call's declared result type, as the value it is at the call site.

    The declaration belongs to the callee; in the caller the result is a value
    like any other, so ``a = f(x)`` does not make ``a`` declared, and without
    ``allow_redefinition`` ``a`` can still be re-bound (see
    :mod:`spmd_mypy.encoding`).
    """
    proper = get_proper_type(typ)
    if not isinstance(proper, Instance) or proper.type.fullname not in SPMD_TENSORS or not is_declaration(proper):
        return typ
    spmd = Encoder.read(proper)
    if not isinstance(spmd, SpmdType) or not proper.type.bases:
        return typ
    return session.encoder(api).tensor(spmd, proper.type.bases[0], inferred=True) or typ


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


def _is_declaration(typ: Type) -> bool:
    proper = get_proper_type(typ)
    return isinstance(proper, Instance) and proper.type.fullname in SPMD_TYPED and is_declaration(proper)
