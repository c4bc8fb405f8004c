"""The router's answers to mypy's hook questions about user callables: remembered while what they were read from stays.

mypy asks at every call site and attribute access; the router looks a user
name up once and then answers from its memo, until the class's MRO or the
node's signature is replaced (the daemon re-analyzing a function) or a module
is parsed (:meth:`~spmd_mypy.hooks.Router.forget_declared`).  The nodes here
are built by hand, as mypy's semantic analyzer leaves them.
"""

from __future__ import annotations

from mypy.nodes import (
    ARG_POS,
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


# -- torch functions' signature hook: only where there is a list of tensors to widen ------------------

_TENSOR = _class("torch._tensor.Tensor")
_LIST = _class("builtins.list")


def _torch_function(name: str, parameter: Instance) -> FuncDef:
    function = FuncDef(name, [], Block([]))
    function.type = CallableType([parameter], [ARG_POS], ["x"], Instance(_TENSOR, []), Instance(_FUNCTION, []))
    return function


def _torch_router() -> tuple[Router, _Lookups, FuncDef]:
    router, _, lookups = _router()
    exp = _torch_function("exp", Instance(_TENSOR, []))
    lookups.names["torch._C._VariableFunctions.exp"] = SymbolTableNode(GDEF, exp)
    cat = _torch_function("cat", Instance(_LIST, [Instance(_TENSOR, [])]))
    lookups.names["torch._C._VariableFunctions.cat"] = SymbolTableNode(GDEF, cat)
    return router, lookups, exp


def test_a_torch_function_gets_the_widening_hook_only_if_it_takes_a_list_of_tensors() -> None:
    router, lookups, _ = _torch_router()
    for _ in range(3):
        assert router.function_signature_hook("torch._C._VariableFunctions.exp") is None
        assert router.function_signature_hook("torch._C._VariableFunctions.cat") is not None
    assert lookups.count == 2  # decided once per function


def test_a_torch_function_whose_signature_is_replaced_is_decided_again() -> None:
    router, _, exp = _torch_router()
    assert router.function_signature_hook("torch._C._VariableFunctions.exp") is None
    assert exp.type is not None
    exp.type = exp.type.copy_modified(arg_types=[Instance(_LIST, [Instance(_TENSOR, [])])])  # the daemon, again
    assert router.function_signature_hook("torch._C._VariableFunctions.exp") is not None


def _torch_class(fullname: str, init: Instance, new: Instance) -> TypeInfo:
    info = _class(fullname)
    for name, parameter in (("__init__", init), ("__new__", new)):
        method = _torch_function(name, parameter)
        method.info = info
        info.names[name] = SymbolTableNode(MDEF, method)
    return info


def test_a_torch_class_gets_the_widening_hook_only_if_its_constructor_takes_a_list_of_tensors() -> None:
    router, lookups, _ = _torch_router()
    tensor, tensors = Instance(_TENSOR, []), Instance(_LIST, [Instance(_TENSOR, [])])
    parameter = _torch_class("torch.nn.parameter.Parameter", tensor, tensor)
    buffers = _torch_class("torch.distributed.Buffers", tensor, tensors)
    for info in (parameter, buffers):
        lookups.names[info.fullname] = SymbolTableNode(GDEF, info)
    assert router.function_signature_hook("torch.nn.parameter.Parameter") is None
    assert router.function_signature_hook("torch.distributed.Buffers") is not None  # by its __new__
    new = parameter.names["__new__"].node
    assert isinstance(new, FuncDef) and new.type is not None
    new.type = new.type.copy_modified(arg_types=[tensors])  # a constructor's signature replaced: decided again
    assert router.function_signature_hook("torch.nn.parameter.Parameter") is not None


def test_a_torch_callable_without_a_declared_signature_keeps_the_widening_hook() -> None:
    router, lookups, _ = _torch_router()
    lookups.names["torch.nn.parameter.Parameter"] = SymbolTableNode(GDEF, _class("torch.nn.parameter.Parameter"))
    assert router.function_signature_hook("torch.nn.parameter.Parameter") is not None  # no __init__ found
    assert router.function_signature_hook("torch.distributed.not_found") is not None
