"""Which of mypy's hooks are the plugin's: its routing table, and how every route ends.

mypy asks the plugin, for each full name it meets, whether it has a hook for it
(``get_function_hook("torch._C._VariableFunctions.matmul")``).  The ``*_hook``
methods of :class:`Router` answer from the name alone, trying the routes in the
order they are written: ``None`` when the name is not the plugin's (other
plugins and plain code are untouched), otherwise the handler that checks it,
such as :func:`spmd_mypy.ops.check_function` for a torch function.  What the
routing tables answer depends on the name alone; a user callable's hook
depends on what it declares (:mod:`spmd_mypy.callables`), and so does whether
a torch callable needs its signature widened.  Either is remembered per
question and name, the latter with the answer it was built from, and holds
while that answer is current: a known name costs a dict lookup and two
identity tests, at every call site.

A handler of a call or an attribute reads the expression, applies the rule
core and returns a :class:`~spmd_mypy.verdict.Verdict`; :func:`finish` does
what every route ends with.  Every hook is guarded: an internal failure
degrades to mypy's own type ("unknown"), never crashes mypy, and with the
``debug`` option is reported as a note.  :class:`~spmd_mypy.plugin.SpmdPlugin`
loads this module when mypy first asks for a hook, which a run whose every
module is cached never does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final, TypeAlias, TypeGuard, TypeVar

from mypy.nodes import Context, TypeInfo
from mypy.plugin import (
    AnalyzeTypeContext,
    AttributeContext,
    CheckerPluginInterface,
    FunctionContext,
    FunctionSigContext,
    MethodContext,
    MethodSigContext,
)
from mypy.types import FunctionLike, Type

from spmd_mypy import (
    boundaries,
    collectives,
    dtensor,
    ecosystem,
    flags,
    global_mode,
    gradients,
    gradual,
    local_map,
    mismatches,
    ops,
    redistribute_spec,
    regions,
    size_one,
)
from spmd_mypy.annotations import analyze
from spmd_mypy.boundaries import fit_declared
from spmd_mypy.callables import Answer, class_info, declared_attribute, declared_function, declared_method
from spmd_mypy.collectives import COLLECTIVES
from spmd_mypy.compat import note
from spmd_mypy.error_codes import INTERNAL
from spmd_mypy.fullnames import (
    ANNOTATED,
    ASSERT_TYPE,
    AXIS_SIZE,
    BUILTIN_SUM,
    DTENSOR_RECEIVERS,
    GLOBAL_SPMD,
    GROUP_RECEIVERS,
    INIT_DEVICE_MESH,
    LOCAL_MAP,
    LOCAL_MAP_DECORATOR,
    LOCAL_REGION,
    LOCAL_REGION_DECORATOR,
    MESH_RECEIVERS,
    REDISTRIBUTE_SPEC,
    SPMD_ALIAS,
    TENSOR_PROPERTY_OWNERS,
    TENSOR_RECEIVERS,
    TORCH_DISTRIBUTED,
    method_of,
    public_function_name,
)
from spmd_mypy.repeats import Repeats
from spmd_mypy.report import emit
from spmd_mypy.session import Session
from spmd_mypy.values import typed_result
from spmd_mypy.verdict import Report, Verdict
from spmd_types.typesystem import (
    AUTOGRAD_FUNCTIONS,
    EQUIVALENTS,
    GROUP_GETTERS,
    IN_PLACE,
    SIZE_GETTERS,
    TENSOR_PROPERTIES,
)

__all__ = ["Router", "finish"]

HookContext = TypeVar("HookContext")  # what mypy passes a hook
HookResult = TypeVar("HookResult")  # what the hook gives back
CallContext = TypeVar("CallContext", FunctionContext, MethodContext)
SignatureContext = TypeVar("SignatureContext", FunctionSigContext, MethodSigContext)
RoutedHook = TypeVar("RoutedHook", bound=Callable[..., object])

_FUNCTION: Final = 0
_METHOD: Final = 1
_ATTRIBUTE: Final = 2
"""The kinds of hook :class:`_Checks` runs: of a function's call, a method's call, an attribute."""

Handler: TypeAlias = Callable[[Session, HookContext], Verdict]
"""A handler of a call or an attribute: what it found, for :func:`finish` to apply."""


class Bound:
    """A handler that takes a third argument, with that argument: what the routing tables give a name whose
    handler needs more than the call (an op's name, a collective's), for :class:`_Checks` to pass.

    Not a ``functools.partial`` with a keyword: calling one builds the keyword arguments anew at every call.
    """

    def __init__(self, function: Callable[[Session, Any, Any], Verdict], argument: object) -> None:
        self.function = function
        self.argument = argument


Route: TypeAlias = Handler[HookContext] | Bound
"""What the routing tables give a name: a handler, or one bound to its third argument."""

Decision: TypeAlias = tuple[Answer | None, RoutedHook | None]
"""A remembered answer to a hook question: the hook, and the user callable's answer it holds while
current (``None``: the routing tables', or one that lasts until a module is re-parsed)."""


def _holds(known: Decision[RoutedHook] | None) -> TypeGuard[Decision[RoutedHook]]:
    """Whether a remembered decision still holds: a routing table's always does, a user callable's while the
    answer it was built from is current."""
    return known is not None and (known[0] is None or known[0].is_current())


_DTENSOR_METHODS: dict[str, Handler[MethodContext]] = {
    "from_local": dtensor.check_from_local_call,
    "to_local": dtensor.check_to_local,
    "redistribute": dtensor.check_redistribute,
}
"""DTensor's methods that cross between local and global code, or change placements."""


class Router:
    """The plugin's answers to mypy's ``get_*_hook`` questions: the handler of each full name that is its."""

    def __init__(self, session: Session) -> None:
        self._session = session
        # The hooks that the routing tables give a full name, remembered per question, keyed by the name
        # alone (mypy asks at every call site, about 200,000 times on a large model, mostly for names that
        # are not the plugin's: a hit is one dict lookup, with no key tuple or closure built).
        self._annotations: dict[str, Callable[[AnalyzeTypeContext], Type] | None] = {}
        # The other questions' answers also depend on what a user callable declares: each is remembered
        # with the :class:`~spmd_mypy.callables.Answer` it was built from, and holds while that answer is
        # current (``None``: for as long as no module is re-parsed, see :meth:`forget_declared`).
        self._functions: dict[str, Decision[Callable[[FunctionContext], Type]]] = {}
        self._function_signatures: dict[str, Decision[Callable[[FunctionSigContext], FunctionLike]]] = {}
        self._methods: dict[str, Decision[Callable[[MethodContext], Type]]] = {}
        self._method_signatures: dict[str, Decision[Callable[[MethodSigContext], FunctionLike]]] = {}
        self._attributes: dict[str, Decision[Callable[[AttributeContext], Type]]] = {}

    def forget_declared(self) -> None:
        """Forget the answers that depend on user callables: a module was (re)parsed (see
        :meth:`~spmd_mypy.session.Session.forget_callables`); the routing tables' answers go too, and
        come back at the next question."""
        for memo in (self._functions, self._function_signatures, self._methods, self._method_signatures,
                     self._attributes):
            memo.clear()

    def _decided(self, memo: dict[str, Decision[RoutedHook]], fullname: str, answer: Answer | None,
                 hook: RoutedHook | None) -> RoutedHook | None:
        """``hook``, remembered as the answer to ``fullname`` while ``answer`` is current (``None``: fixed).

        Nothing is remembered before mypy hands over the modules, when no user
        callable can be looked up yet.
        """
        if self._session.modules is not None:
            memo[fullname] = (None if answer is None or answer.lasting else answer, hook)
        return hook

    # -- annotations -----------------------------------------------------------------

    def type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        try:
            hook = self._annotations[fullname]
        except KeyError:
            hook = self._annotations[fullname] = self._annotation_hook(fullname)
        return hook

    def _annotation_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        if fullname not in ANNOTATED and fullname not in SPMD_ALIAS:
            return None
        alias_form = fullname in SPMD_ALIAS
        session = self._session

        def annotation(ctx: AnalyzeTypeContext) -> Type:
            mismatches.watch(session, ctx.api)  # before any module with SPMD types is checked
            return analyze(session, ctx, alias_form)

        return self._guarded(annotation, _unannotated)

    # -- calls of functions ----------------------------------------------------------

    def function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        known = self._functions.get(fullname)
        if _holds(known):
            return known[1]
        if known is None:  # first asked: the routing tables', if they have one
            routed = self._calls_or_none(self._function_handler(fullname), _FUNCTION)
            if routed is not None:
                return self._decided(self._functions, fullname, None, routed)
        return self._declared_function_hook(fullname)

    def _function_handler(self, fullname: str) -> Route[FunctionContext] | None:
        """The handler the routing tables give function ``fullname``: a function of the name alone."""
        if (call := COLLECTIVES.get(fullname)) is not None:
            return Bound(collectives.check_collective, call)
        if (function := ops.PARTIAL_OUTPUTS.get(fullname)) is not None:
            return Bound(ops.check_partial_output_call, function)
        if (equivalent := EQUIVALENTS.get(fullname)) is not None:
            return Bound(ecosystem.check_library_call, equivalent)
        if (in_place := IN_PLACE.get(fullname)) is not None:
            return Bound(ecosystem.check_in_place_call, in_place)
        if (role := GROUP_GETTERS.get(fullname)) is not None:
            return Bound(ecosystem.group_of_role, role)
        if fullname in SIZE_GETTERS or fullname == AXIS_SIZE:
            return size_one.size_getter
        if fullname == INIT_DEVICE_MESH:
            return dtensor.check_init_device_mesh
        if fullname == LOCAL_MAP:
            return local_map.check_local_map
        if fullname in GLOBAL_SPMD:
            return global_mode.check_decorated
        if fullname in LOCAL_REGION:
            return regions.check_local_region
        if fullname == REDISTRIBUTE_SPEC:
            return redistribute_spec.check_redistribute_spec
        if fullname == BUILTIN_SUM:
            return ops.check_builtin_sum
        if fullname in AUTOGRAD_FUNCTIONS:
            return Bound(gradients.check_autograd_call, fullname)
        if fullname == ASSERT_TYPE:
            return collectives.check_assert_type
        if (public := public_function_name(fullname)) is not None:
            return Bound(ops.check_function, public)
        return None

    def _declared_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        """The hook of a user function, by what it declares now (see :mod:`spmd_mypy.callables`)."""
        declared = declared_function(self._session, fullname)
        hook = self._calls_or_none(_boundary_handler(declared, fullname.rpartition(".")[2]), _FUNCTION)
        return self._decided(self._functions, fullname, declared, hook)

    def function_signature_hook(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        known = self._function_signatures.get(fullname)
        if _holds(known):
            return known[1]
        declared = declared_function(self._session, fullname)
        # torch.distributed's functions take tensor lists too (``dist.gather(x, bufs)``).
        if public_function_name(fullname) is not None or fullname.startswith(TORCH_DISTRIBUTED):
            return self._torch_signature_hook(fullname, declared)
        hook = self._signatures(boundaries.relax_function) if declared.signature is not None else None
        return self._decided(self._function_signatures, fullname, declared, hook)

    def _torch_signature_hook(self, fullname: str, declared: Answer
                              ) -> Callable[[FunctionSigContext], FunctionLike] | None:
        """:func:`~spmd_mypy.ops.widen_tensor_lists`, for a torch callable that takes a list of tensors.

        mypy applies a signature hook at every call, copying the signature's
        parameters each time, though most torch callables take no list.  One
        whose declared signatures take none gets no hook, for as long as they
        are in place: a function's type, which mypy hands the hook, or a
        class's ``__init__`` and ``__new__``, from which mypy builds its
        constructor's.  Anything else (a name not found, a signature not read)
        gets the hook, which widens what needs it.
        """
        basis = declared
        if isinstance(declared.node, TypeInfo):
            constructor = tuple(declared_method(self._session, fullname, method) for method in ("__init__", "__new__"))
            basis = Answer.joint(constructor)
        else:
            constructor = (declared,)
        signatures = [part.typed.type if part.typed is not None else None for part in constructor]
        try:
            takes_no_list = all(isinstance(signature, FunctionLike) and not ops.widens(signature)
                                for signature in signatures)
        except Exception:  # the plugin must never crash mypy: the hook then decides at each call
            takes_no_list = False
        if takes_no_list:
            return self._decided(self._function_signatures, fullname, basis, None)
        return self._decided(self._function_signatures, fullname, None, self._signatures(ops.widen_tensor_lists))

    # -- calls of methods ------------------------------------------------------------

    def method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        known = self._methods.get(fullname)
        if _holds(known):
            return known[1]
        if known is None:
            routed = self._calls_or_none(self._method_handler(fullname), _METHOD)
            if routed is not None:
                return self._decided(self._methods, fullname, None, routed)
        return self._declared_method_hook(fullname)

    def _method_handler(self, fullname: str) -> Route[MethodContext] | None:
        """The handler the routing tables give method ``fullname``: a function of the name alone."""
        if (equivalent := EQUIVALENTS.get(fullname)) is not None:  # DeepSpeed's _SeqAllToAll.apply
            return Bound(ecosystem.check_library_call, equivalent)
        owner, method = method_of(fullname)
        if owner in TENSOR_RECEIVERS:
            return gradients.check_backward_method if method == "backward" else Bound(ops.check_method, method)
        if owner in DTENSOR_RECEIVERS and method in _DTENSOR_METHODS:
            return _DTENSOR_METHODS[method]
        if owner in GROUP_RECEIVERS and method == "size":
            return size_one.size_getter
        if owner in MESH_RECEIVERS and method == "__getitem__":
            return dtensor.check_submesh
        if owner == LOCAL_MAP_DECORATOR and method == "__call__":
            return local_map.check_decorated
        if owner == LOCAL_REGION_DECORATOR and method == "__call__":
            return regions.check_decorated
        if method == "__call__" and (module_op := ops.torch_module_op(owner)) is not None:
            return Bound(ops.check_module_call, module_op)
        return None

    def _declared_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        """The hook of a user method, by what it declares now (see :mod:`spmd_mypy.callables`)."""
        owner, method = method_of(fullname)
        declared = declared_method(self._session, owner, method)
        callee = f"{owner.rpartition('.')[2]}.{'forward' if method in ('__call__', 'apply') else method}"
        handler: Route[MethodContext] | None = _boundary_handler(declared, callee)
        return self._decided(self._methods, fullname, declared, self._calls_or_none(handler, _METHOD))

    def method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        known = self._method_signatures.get(fullname)
        if _holds(known):
            return known[1]
        owner, method = method_of(fullname)
        if owner in TENSOR_RECEIVERS:
            return self._decided(self._method_signatures, fullname, None, None)
        declared = declared_method(self._session, owner, method)
        hook = (self._signatures(partial(boundaries.relax_method, method=method))
                if declared.signature is not None else None)
        return self._decided(self._method_signatures, fullname, declared, hook)

    # -- attributes ------------------------------------------------------------------

    def attribute_hook(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        known = self._attributes.get(fullname)
        if _holds(known):
            return known[1]
        owner, _, attribute = fullname.rpartition(".")
        if known is None:
            routed = self._attribute_hook_or_none(self._property_handler(owner, attribute))
            if routed is not None or not owner:
                return self._decided(self._attributes, fullname, None, routed)
        return self._declared_attribute_hook(fullname, owner, attribute)

    def _property_handler(self, owner: str, attribute: str) -> Route[AttributeContext] | None:
        """The handler the routing tables give attribute ``owner.attribute``: a tensor property, by the name alone."""
        if owner in TENSOR_PROPERTY_OWNERS and attribute in TENSOR_PROPERTIES:
            return Bound(ops.check_property, attribute)
        return None

    def _declared_attribute_hook(self, fullname: str, owner: str, attribute: str
                                 ) -> Callable[[AttributeContext], Type] | None:
        """The hook of an attribute of a user class: one that holds plain tensors, or a configuration flag.

        The hook is remembered while the answer is current, except on a generic
        class (the only kind with configuration flags, see :mod:`spmd_mypy.flags`):
        its flag table is asked each time, as it may not be complete the first.
        """
        declared = declared_attribute(self._session, owner, attribute)
        if declared.plain_result:
            return self._decided(self._attributes, fullname, declared,
                                 self._attribute_hook_or_none(gradual.unknown_attribute))
        # The class the answer was read from, while it is current; looked up again only where none was.
        info = declared.info if declared.info is not None else class_info(self._session, owner)
        if info is None or not info.type_vars:
            return self._decided(self._attributes, fullname, declared, None)
        table = flags.flag_table(self._session, info)
        if table is not None and attribute in table.flags():
            return self._attribute_hook_or_none(partial(flags.read_flag, owner=info, flag=attribute))
        return None

    def _attribute_hook_or_none(self, route: Route[AttributeContext] | None
                                ) -> Callable[[AttributeContext], Type] | None:
        return _Checks(self._session, route, _ATTRIBUTE) if route is not None else None

    # -- how each kind of hook runs its handler --------------------------------------

    def _calls_or_none(self, route: Route[CallContext] | None, kind: int) -> Callable[[CallContext], Type] | None:
        return _Checks(self._session, route, kind) if route is not None else None

    def _signatures(
        self, handler: Callable[[Session, SignatureContext], FunctionLike]
    ) -> Callable[[SignatureContext], FunctionLike]:
        session = self._session
        return self._guarded(lambda ctx: handler(session, ctx), lambda ctx: ctx.default_signature)

    def _guarded(
        self, hook: Callable[[HookContext], HookResult], fallback: Callable[[HookContext], HookResult]
    ) -> Callable[[HookContext], HookResult]:
        """``hook``, except that an internal failure falls back instead of crashing mypy.

        With the ``debug`` option the failure is also reported as a note
        (code ``spmd-internal``) at the expression being checked.
        """
        debug = self._session.options.debug

        def guarded(ctx: HookContext) -> HookResult:
            try:
                return hook(ctx)
            except Exception as error:  # the plugin must never crash mypy
                if debug:
                    _note_failure(ctx, error)
                return fallback(ctx)

        return guarded


def _boundary_handler(declared: Answer, callee: str) -> Route[CallContext] | None:
    """The handler of a call of a user callable spelled ``callee``, by what it ``declared``."""
    if declared.signature is not None:
        return Bound(boundaries.check_call, callee)
    if declared.plain_result:
        return gradual.unknown_result
    return None


class _Checks:
    """How a call or attribute hook runs its route: the handler, then :func:`finish`; an internal failure
    falls back to mypy's own type instead of crashing mypy (with the ``debug`` option, also a note).

    One class with its own ``__call__`` (mypyc gives such a class a vectorcall slot; a subclass adding
    ``__call__`` to a base without one crashed the compiled build).  One compiled object per hook, called
    by mypy for every checked expression: it reads each field of
    mypy's context once and calls the handler with positional arguments, where a closure around a
    closure around a ``functools.partial`` made three calls and a keyword dictionary.  A call that mypy
    checks a second time gets the verdict of the first (:mod:`spmd_mypy.repeats`).
    """

    def __init__(self, session: Session, route: Route[Any], kind: int) -> None:
        self._session = session
        self._kind = kind  # _FUNCTION, _METHOD or _ATTRIBUTE: the kind of context mypy passes
        self._repeats = Repeats()  # a call's verdict, for when mypy checks the call again (not an attribute's)
        self._debug = session.options.debug
        if isinstance(route, Bound):
            self._function: Callable[..., Verdict] = route.function
            self._argument = route.argument
            self._bound = True
        else:
            self._function = route
            self._argument = None
            self._bound = False

    def __call__(self, ctx: Any) -> Type:  # FunctionContext, MethodContext or AttributeContext
        """The type of the expression of ``ctx``."""
        kind = self._kind
        default: Type = ctx.default_attr_type if kind == _ATTRIBUTE else ctx.default_return_type
        try:
            context = ctx.context
            if kind == _ATTRIBUTE:
                verdict = self._handled(ctx)
            else:
                verdict = self._call_verdict(ctx, context, ctx.type if kind == _METHOD else None, default)
            return finish(self._session, ctx.api, context, default, verdict)
        except Exception as error:  # the plugin must never crash mypy
            if self._debug:
                _note_failure(ctx, error)
            return default

    def _call_verdict(self, ctx: Any, context: Context, receiver: Type | None, default: Type) -> Verdict:
        """The handler's verdict on a call (``receiver``: the type of a method's object), or the one it gave
        when mypy checked the same call before."""
        repeats = self._repeats
        verdict = repeats.find(ctx, context, receiver, default)
        return verdict if verdict is not None else repeats.keep(ctx, context, receiver, default, self._handled(ctx))

    def _handled(self, ctx: Any) -> Verdict:
        return self._function(self._session, ctx, self._argument) if self._bound else self._function(self._session, ctx)


def finish(session: Session, api: CheckerPluginInterface, context: Context, default: Type, verdict: Verdict) -> Type:
    """What every check of a call or attribute ends with; the type mypy gives the expression.

    The result type: mypy's own ``default`` or the handler's replacement, with
    the verdict's SPMD type given to every tensor in it and, for a call,
    fitted to the declaration the value goes into; then every violation found
    (the declaration's last) is reported.
    """
    returns = verdict.returns
    typed = returns if returns is not None else default
    result = verdict.result
    if result is not None:
        typed = typed_result(session, api, typed, result, verdict.rank, verdict.orders)
    reports = verdict.reports
    if verdict.fit:
        fitted: list[Report] = []
        typed = fit_declared(session, api, typed, context, verdict, fitted)
        if fitted:
            reports = [*reports, *fitted]
    if reports:  # most checks find nothing to report
        emit(api, size_one.remaining(session, api, reports))
    return typed


def _unannotated(ctx: AnalyzeTypeContext) -> Type:
    """What mypy makes of an annotation without the plugin: its first argument, analyzed."""
    return ctx.api.analyze_type(ctx.type.args[0]) if ctx.type.args else ctx.type


def _note_failure(ctx: object, error: Exception) -> None:
    api = getattr(ctx, "api", None)
    context = getattr(ctx, "context", None)
    if api is not None and isinstance(context, Context):
        note(api, f"spmd plugin: {type(error).__name__}: {error}; treated as unknown", context, INTERNAL)
