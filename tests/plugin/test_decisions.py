"""The router's answers to mypy's hook questions about user callables: remembered while what they were read from stays.

mypy asks at every call site and attribute access; the router looks a user
name up once and then answers from its memo, until the class's MRO or the
node's signature is replaced (the daemon re-analyzing a function) or a module
is parsed (:meth:`~spmd_mypy.hooks.Router.forget_declared`).  The nodes here
are built by hand, as mypy's semantic analyzer leaves them.
"""

from __future__ import annotations

from mypy.nodes import (
    GDEF,
    MDEF,
    Block,
    ClassDef,
    Decorator,
    FuncDef,
    MypyFile,
    SymbolTable,
    SymbolTableNode,
    TypeInfo,
    Var,
)
from mypy.types import AnyType, CallableType, Instance, TypeOfAny

from spmd_mypy.callables import Answer
from spmd_mypy.config import PluginOptions
from spmd_mypy.hooks import Router
from spmd_mypy.session import Session


def _class(fullname: str) -> TypeInfo:
    module, _, name = fullname.rpartition(".")
    definition = ClassDef(name, Block([]))
    definition.fullname = fullname
    info = TypeInfo(SymbolTable(), definition, module)
    info.mro = [info]
    return info


_FUNCTION = _class("builtins.function")


def _signature() -> CallableType:
    return CallableType([], [], [], AnyType(TypeOfAny.explicit), Instance(_FUNCTION, []))


def _function(name: str) -> FuncDef:
    function = FuncDef(name, [], Block([]))
    function.type = _signature()
    return function


def test_an_answer_is_current_while_its_signature_and_mro_stay() -> None:
    info = _class("m.Layer")
    method = _function("forward")
    answer = Answer.of(info, method)
    assert answer.is_current()
    info.mro = [info]  # the daemon re-analyzed the class: a new MRO
    assert not answer.is_current()
    answer = Answer.of(info, method)
    method.type = _signature()  # ... or the method: a new signature
    assert not answer.is_current()


def test_a_decorated_function_is_current_while_its_variable_keeps_its_type() -> None:
    variable = Var("helper", _signature())
    answer = Answer.of(None, Decorator(_function("helper"), [], variable))
    assert answer.is_current()
    variable.type = _signature()
    assert not answer.is_current()


def test_a_class_member_that_is_not_a_plain_function_is_current_while_unchanged() -> None:
    info = _class("m.Layer")
    attribute = Var("activation", _signature())  # an attribute holding a callable: no signature of its own
    answer = Answer.of(info, attribute)
    assert answer.read is None and answer.is_current()
    attribute.type = _signature()
    assert not answer.is_current()


class _Lookups:
    """A session's lookup of full names among hand-built modules, counting the look-ups."""

    def __init__(self) -> None:
        self.info = _class("m.Layer")
        self.info.names["scale"] = SymbolTableNode(MDEF, _function("scale"))
        self.helper = _function("helper")
        self.names = {"m.Layer": SymbolTableNode(GDEF, self.info), "m.helper": SymbolTableNode(GDEF, self.helper)}
        self.count = 0

    def __call__(self, fullname: str) -> SymbolTableNode | None:
        self.count += 1
        return self.names.get(fullname)


def _router() -> tuple[Router, Session, _Lookups]:
    lookups = _Lookups()
    session = Session(PluginOptions(), lookups)
    session.modules = {"m": MypyFile([], [])}
    return Router(session), session, lookups


def test_a_user_name_is_looked_up_once_while_current() -> None:
    router, _, lookups = _router()
    for _ in range(3):
        assert router.method_hook("m.Layer.scale") is None
        assert router.method_signature_hook("m.Layer.scale") is None
        assert router.function_hook("m.helper") is None
    assert lookups.count == 2  # the class (shared by both method questions) and the function


def test_a_replaced_signature_or_a_parsed_module_is_looked_up_again() -> None:
    router, session, lookups = _router()
    router.function_hook("m.helper")
    lookups.helper.type = _signature()
    router.function_hook("m.helper")
    assert lookups.count == 2
    router.forget_declared()
    session.forget_callables()  # as the plugin does when mypy parses a module
    router.function_hook("m.helper")
    assert lookups.count == 3
