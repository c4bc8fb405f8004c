"""Which of mypy's hooks are ours, and what each does: the dispatch of the plugin.

Each ``*_hook`` method answers one of mypy's ``get_*_hook`` questions from the
full name alone: ``None`` when the name is not ours (other plugins and plain
code are untouched), otherwise a hook into the rule core, guarded so that an
internal failure degrades to "unknown" instead of crashing mypy.
:class:`~spmd_mypy.plugin.SpmdPlugin` loads this module when mypy first asks
for a hook, which a run whose every module is cached never does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from mypy.nodes import Context, Decorator, FuncDef, MypyFile, TypeInfo, Var
from mypy.plugin import (
    AnalyzeTypeContext,
    AttributeContext,
    FunctionContext,
    FunctionSigContext,
    MethodContext,
    MethodSigContext,
    Plugin,
)
from mypy.types import CallableType, FunctionLike, Instance, Type, TypeType, TypeVarType, get_proper_type

from spmd_mypy import boundaries, collectives, ecosystem, gradients, gradual, ops
from spmd_mypy.annotations import analyze
from spmd_mypy.compat import bind_method
from spmd_mypy.config import PluginOptions
from spmd_mypy.encoding import Encoder, is_tensor
from spmd_mypy.fullnames import (
    ANNOTATED,
    ASSERT_TYPE,
    AUTOGRAD_FUNCTION,
    BUILTIN_SUM,
    MODULE,
    SPMD_ALIAS,
    STR,
    TENSOR_PROPERTY_OWNERS,
    TENSOR_RECEIVERS,
    TORCH_DISTRIBUTED,
    method_of,
    public_function_name,
)
from spmd_mypy.report import Reporter
from spmd_mypy.session import Session
from spmd_types.typesystem import TENSOR_PROPERTIES

__all__ = ["Hooks"]

C = TypeVar("C")  # the context a hook receives
R = TypeVar("R")  # what it returns

_RELAXED_LIMIT: Final = 10_000  # call sites awaiting their return hook; a safety bound for the daemon


class Hooks:
    """The plugin's answers to mypy's ``get_*_hook`` questions, and the state the hooks share."""

    def __init__(self, plugin: Plugin, options: PluginOptions, modules: dict[str, MypyFile] | None) -> None:
        self._plugin = plugin  # for its lookup of names among the loaded modules
        self._options = options
        self._session = Session(options, Reporter(options.debug), modules)
        # mypy asks for hooks at every call site; whether a callable has an SPMD
        # signature is answered once per name, and asked again when the answer's
        # sources were replaced (see _Answer) or a module was (re)parsed.
        self._callables: dict[tuple[str, str], _Answer] = {}

    def set_modules(self, modules: dict[str, MypyFile]) -> None:
        self._session.modules = modules

    # -- annotations -----------------------------------------------------------------

    def type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        if fullname in ANNOTATED or fullname == SPMD_ALIAS:
            alias_form = fullname == SPMD_ALIAS
            return self._guard(lambda ctx: self._annotation(ctx, alias_form),
                               lambda ctx: ctx.api.analyze_type(ctx.type.args[0]) if ctx.type.args else ctx.type)
        return None

    def _annotation(self, ctx: AnalyzeTypeContext, alias_form: bool) -> Type:
        encoder = Encoder(self._session.modules, ctx.api.named_type(STR, []))
        return analyze(ctx, encoder, self._options, alias_form, self._session.stubs_warned)

    # -- calls -----------------------------------------------------------------------

    def function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        session = self._session
        call = collectives.COLLECTIVES.get(fullname)
        if call is not None:
            return self._guard(lambda ctx: collectives.check_collective(session, ctx, call), _default_return)
        library = ecosystem.call_handler(fullname)
        if library is not None:
            return self._guard(lambda ctx: library(session, ctx), _default_return)
        if fullname == BUILTIN_SUM:
            return self._guard(lambda ctx: ops.check_builtin_sum(session, ctx), _default_return)
        if fullname in gradients.AUTOGRAD_FUNCTIONS:
            return self._guard(lambda ctx: gradients.check_autograd_call(session, ctx, fullname), _default_return)
        if fullname == ASSERT_TYPE:
            return self._guard(lambda ctx: collectives.check_assert_type(session, ctx), _default_return)
        public = public_function_name(fullname)
        if public is not None:
            return self._guard(lambda ctx: ops.check_function(session, ctx, public), _default_return)
        answer = self._declared(fullname)
        if answer.signature is not None:
            short = fullname.rpartition(".")[2]
            return self._guard(lambda ctx: self._check_call(ctx, short), _default_return)
        if answer.plain_result:
            return self._guard(lambda ctx: gradual.unknown_result(session, ctx), _default_return)
        return None

    def function_signature_hook(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        # torch.distributed's functions take tensor lists too (``dist.gather(x, bufs)``).
        if public_function_name(fullname) is not None or fullname.startswith(TORCH_DISTRIBUTED):
            session = self._session
            return self._guard(lambda ctx: ops.widen_tensor_lists(session, ctx), lambda ctx: ctx.default_signature)
        if self._declared_signature(fullname) is None:
            return None
        return self._guard(self._relax, lambda ctx: ctx.default_signature)

    def method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        owner, method = method_of(fullname)
        session = self._session
        if owner in TENSOR_RECEIVERS and method == "backward":
            return self._guard(lambda ctx: gradients.check_backward_method(session, ctx), _default_return)
        if owner in TENSOR_RECEIVERS:
            return self._guard(lambda ctx: ops.check_method(session, ctx, method), _default_return)
        module_op = ops.torch_module_op(owner) if method == "__call__" else None
        if module_op is not None:
            return self._guard(lambda ctx: ops.check_module_call(session, ctx, module_op), _default_return)
        answer = self._method(owner, method)
        if answer.signature is not None:
            callee = f"{owner.rpartition('.')[2]}.{'forward' if method in ('__call__', 'apply') else method}"
            return self._guard(lambda ctx: self._check_call(ctx, callee), _default_return)
        if answer.plain_result:
            return self._guard(lambda ctx: gradual.unknown_result(session, ctx), _default_return)
        return None

    def method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        owner, _, method = fullname.rpartition(".")
        if owner in TENSOR_RECEIVERS or self._method_signature(owner, method) is None:
            return None
        return self._guard(lambda ctx: self._relax_method(ctx, method), lambda ctx: ctx.default_signature)

    def attribute_hook(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        owner, _, attribute = fullname.rpartition(".")
        session = self._session
        if owner in TENSOR_PROPERTY_OWNERS and attribute in TENSOR_PROPERTIES:
            return self._guard(lambda ctx: ops.check_property(session, ctx, attribute),
                               lambda ctx: ctx.default_attr_type)
        if owner and self._attribute(owner, attribute).plain_result:
            return self._guard(lambda ctx: gradual.unknown_attribute(session, ctx), lambda ctx: ctx.default_attr_type)
        return None

    # -- boundaries of user-defined callables ----------------------------------------

    def forget_callables(self) -> None:
        """Drop what is known about callables: a module was (re)parsed, and may have changed them."""
        self._callables.clear()

    def _declared_signature(self, fullname: str) -> CallableType | None:
        """The signature of function ``fullname`` if it has SPMD-typed parameters or result."""
        return self._declared(fullname).signature

    def _declared(self, fullname: str) -> _Answer:
        return self._remembered(("", fullname), lambda: self._lookup_declared(fullname))

    def _lookup_declared(self, fullname: str) -> _Answer:
        if self._session.modules is None or "." not in fullname:
            return _UNKNOWN
        symbol = self._plugin.lookup_fully_qualified(fullname)
        return _Answer.of(None, symbol.node if symbol is not None else None)

    def _method_signature(self, owner: str, method: str) -> CallableType | None:
        """The declared signature behind ``owner.method``, if it has SPMD-typed parameters or result.

        For an ``nn.Module``'s ``__call__`` and an autograd Function's ``apply``
        that is the signature of ``forward``.
        """
        return self._method(owner, method).signature

    def _method(self, owner: str, method: str) -> _Answer:
        return self._remembered((owner, method), lambda: self._lookup_method(owner, method))

    def _remembered(self, key: tuple[str, str], lookup: Callable[[], _Answer]) -> _Answer:
        known = self._callables.get(key)
        if known is not None and known.is_current():
            return known
        try:
            found = lookup()
        except Exception:
            found = _UNKNOWN  # a lookup that fails means: not a callable with an SPMD signature
        if self._session.modules is not None:  # before mypy hands over the modules, nothing is known yet
            self._callables[key] = found
        return found

    def _lookup_method(self, owner: str, method: str) -> _Answer:
        if self._session.modules is None or not owner:
            return _UNKNOWN
        symbol = self._plugin.lookup_fully_qualified(owner)
        info = symbol.node if symbol is not None else None
        if not isinstance(info, TypeInfo):
            return _UNKNOWN
        if (method == "__call__" and info.has_base(MODULE)) or (
            method == "apply" and info.has_base(AUTOGRAD_FUNCTION)
        ):
            # A forward generic in its tensors (``def forward(self, x: T) -> T``) is typed too: mypy
            # binds T at each call, so a norm or dropout module keeps its input's SPMD type.
            return _Answer.of(info, info.get_method("forward"), generic_in_tensors=True)
        return _Answer.of(info, info.get_method(method))

    def _attribute(self, owner: str, attribute: str) -> _Answer:
        """What the attribute ``owner.attribute`` holds (remembered under ``.attribute``, apart from methods)."""
        return self._remembered((owner, f".{attribute}"), lambda: self._lookup_attribute(owner, attribute))

    def _lookup_attribute(self, owner: str, attribute: str) -> _Answer:
        if self._session.modules is None:
            return _UNKNOWN
        symbol = self._plugin.lookup_fully_qualified(owner)
        info = symbol.node if symbol is not None else None
        if not isinstance(info, TypeInfo):
            return _UNKNOWN
        found = info.get(attribute)
        return _Answer.of(info, found.node if found is not None else None)

    def _relax(self, ctx: FunctionSigContext) -> FunctionLike:
        self._remember(ctx.context, ctx.default_signature)
        return boundaries.relax(ctx.default_signature)

    def _relax_method(self, ctx: MethodSigContext, method: str) -> FunctionLike:
        signature: CallableType | None = ctx.default_signature
        receiver = get_proper_type(ctx.type)
        if method == "__call__" and isinstance(receiver, Instance):
            forward = boundaries.forward_signature(receiver.type)
            bound = bind_method(forward, receiver) if forward is not None else None
            signature = bound if isinstance(bound, CallableType) else None
        elif method == "apply":
            info = _class_of(receiver)
            forward = boundaries.forward_signature(info) if info is not None else None
            signature = boundaries.drop_first(forward) if forward is not None else None
        if signature is None:
            return ctx.default_signature
        self._remember(ctx.context, signature)
        return boundaries.relax(signature)

    def _remember(self, context: Context, signature: CallableType) -> None:
        relaxed = self._session.relaxed
        if len(relaxed) > _RELAXED_LIMIT:
            relaxed.clear()
        key = context  # the call expression: hashable by identity
        if key in relaxed and relaxed[key] != signature:
            relaxed[key] = None  # several overloads were tried: do not guess which one matched
        else:
            relaxed[key] = signature

    def _check_call(self, ctx: FunctionContext | MethodContext, callee: str) -> Type:
        declared = self._session.relaxed.pop(ctx.context, None)
        if declared is not None:
            boundaries.check_arguments(self._session, ctx.api, declared, ctx.arg_types, ctx.args, ctx.context,
                                       callee)
        result = boundaries.as_computed(self._session, ctx.api, ctx.default_return_type)
        return boundaries.fit_declared(self._session, ctx.api, result, ctx.context)

    # -- plumbing --------------------------------------------------------------------

    def _guard(self, hook: Callable[[C], R], fallback: Callable[[C], R]) -> Callable[[C], R]:
        return self._session.reporter.guard(hook, fallback)


@dataclass(frozen=True)
class _Answer:
    """Whether a callable has an SPMD signature, and what that answer was read from.

    The mypy daemon re-analyzes a function whose annotations depend on a changed
    module (an alias, a base class) without re-parsing the function's own
    module: the node stays, its signature and its class's MRO are replaced.  An
    answer is current while the objects it was read from are still in place, so
    that it never outlives them, whatever order mypy checks modules in.
    """

    class_mro: list[TypeInfo] | None  # the MRO of the class the method was resolved in
    info: TypeInfo | None
    node: object  # the function, method or variable the signature was read from
    read: CallableType | None  # its signature when read
    signature: CallableType | None  # ``read`` when it has SPMD types
    plain_result: bool = False  # a call gives plain tensors (see spmd_mypy.gradual)

    @staticmethod
    def of(info: TypeInfo | None, node: object, *, generic_in_tensors: bool = False) -> _Answer:
        """The answer for ``node``; ``generic_in_tensors`` also admits a signature generic in its tensors."""
        read = boundaries.signature_of(node)
        if info is not None and not isinstance(node, (FuncDef, Decorator)):
            read = None  # a method that is not a plain function (overloaded, a property...)
        typed = read is not None and (_has_spmd_signature(read) or (generic_in_tensors and _generic_in_tensors(read)))
        spmd = read if typed else None
        if isinstance(node, TypeInfo):
            plain = gradual.returns_plain_tensor(node)  # a constructor: nn.Parameter(...)
        elif isinstance(node, Var):
            plain = node.type is not None and gradual.returns_plain_tensor(node.type)  # an attribute
        else:
            plain = spmd is None and read is not None and gradual.returns_plain_tensor(read.ret_type)
        return _Answer(info.mro if info is not None else None, info, node, read, spmd, plain)

    def is_current(self) -> bool:
        if self.info is not None and self.info.mro is not self.class_mro:
            return False
        return self.node is None or boundaries.signature_of(self.node) is self.read


_UNKNOWN: Final = _Answer(None, None, None, None, None)


def _default_return(ctx: FunctionContext | MethodContext) -> Type:
    return ctx.default_return_type


def _has_spmd_signature(signature: CallableType) -> bool:
    return any(boundaries.has_spmd(t) for t in (*signature.arg_types, signature.ret_type))


def _generic_in_tensors(signature: CallableType) -> bool:
    """Whether ``signature`` has a type variable bound to ``torch.Tensor`` among its parameters."""
    return any(
        isinstance(variable, TypeVarType) and is_tensor(variable.upper_bound)
        for variable in signature.variables
    )


def _class_of(typ: object) -> TypeInfo | None:
    """The class a class object (``MyFunction`` in ``MyFunction.apply``) stands for."""
    if isinstance(typ, CallableType) and typ.is_type_obj():
        return typ.type_object()
    if isinstance(typ, TypeType) and isinstance(typ.item, Instance):
        return typ.item.type
    return None


