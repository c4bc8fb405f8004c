"""Which user callables are SPMD boundaries: functions, methods and attributes, by full name.

mypy asks for a hook at every call site and attribute access; whether the
callee declares SPMD types (and so is checked as a boundary, see
:mod:`spmd_mypy.boundaries`), or returns plain tensors (see
:mod:`spmd_mypy.gradual`), is answered once per name and remembered in the
session, until the objects the answer was read from are replaced or a module
is (re)parsed (:meth:`~spmd_mypy.session.Session.forget_callables`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mypy.nodes import Decorator, FuncBase, FuncDef, OverloadedFuncDef, TypeInfo, Var
from mypy.types import CallableType, ProperType, TypeAliasType, TypeVarType, get_proper_type

from spmd_mypy import gradual
from spmd_mypy.boundaries import has_spmd, signature_of
from spmd_mypy.encoding import is_tensor
from spmd_mypy.fullnames import AUTOGRAD_FUNCTION, MODULE
from spmd_mypy.session import Session

__all__ = ["Answer", "class_info", "declared_attribute", "declared_function", "declared_method"]


class Answer:
    """Whether a callable has an SPMD signature, and what that answer was read from.

    The mypy daemon re-analyzes a function whose annotations depend on a changed
    module (an alias, a base class) without re-parsing the function's own
    module: the node stays, its signature and its class's MRO are replaced.  An
    answer is current while the objects it was read from are still in place, so
    that it never outlives them, whatever order mypy checks modules in.

    Never changed once made.  A plain class, not a frozen dataclass: mypyc
    compiles its constructor, where a dataclass's is generated Python that sets
    each field through ``object.__setattr__`` (some 13,000 instructions per
    answer in the compiled build, against a few hundred), and one is made for
    every distinct callable and attribute name mypy asks about.
    """

    __slots__ = ("class_mro", "info", "node", "parts", "plain_result", "raw", "read", "seen", "signature", "typed")

    def __init__(
        self,
        class_mro: list[TypeInfo] | None,
        info: TypeInfo | None,
        node: object,
        read: CallableType | None,
        signature: CallableType | None,
        plain_result: bool = False,
        typed: Var | FuncBase | None = None,
        raw: object = None,
        seen: CallableType | None = None,
        parts: tuple[Answer, ...] = (),
    ) -> None:
        self.class_mro: Final = class_mro  # the MRO of the class the method was resolved in
        self.info: Final = info
        self.node: Final = node  # the function, method or variable the signature was read from
        self.read: Final = read  # its signature when read, where it is a plain function's
        self.signature: Final = signature  # ``read`` when it has SPMD types
        self.plain_result: Final = plain_result  # a call gives plain tensors (see spmd_mypy.gradual)
        self.typed: Final = typed  # the node whose ``type`` holds the signature (a decorator's variable)
        self.raw: Final = raw  # ``typed.type`` when read; :data:`_EXPANDED` for a type alias
        self.seen: Final = seen  # the signature as read, whatever kind of method the node is
        self.parts: Final = parts  # other answers this one was read from (see :meth:`joint`)

    @staticmethod
    def of(info: TypeInfo | None, node: object, *, generic_in_tensors: bool = False) -> Answer:
        """The answer for ``node``; ``generic_in_tensors`` also admits a signature generic in its tensors."""
        typed = node.var if isinstance(node, Decorator) else node if isinstance(node, (Var, FuncBase)) else None
        raw = typed.type if typed is not None else None
        seen = read = signature_of(node)
        if info is not None and not isinstance(node, (FuncDef, Decorator)):
            read = None  # a method that is not a plain function (overloaded, a property...)
        spmd = read is not None and (_has_spmd_signature(read) or (generic_in_tensors and _generic_in_tensors(read)))
        if isinstance(node, TypeInfo):
            plain = gradual.returns_plain_tensor(node)  # a constructor: nn.Parameter(...)
        elif isinstance(node, Var):
            plain = node.type is not None and gradual.returns_plain_tensor(node.type)  # an attribute
        else:
            plain = not spmd and read is not None and gradual.returns_plain_tensor(read.ret_type)
        return Answer(info.mro if info is not None else None, info, node, read, read if spmd else None, plain,
                      typed, _EXPANDED if isinstance(raw, TypeAliasType) else raw, seen)

    @staticmethod
    def joint(parts: tuple[Answer, ...]) -> Answer:
        """An answer read from all of ``parts``, current while each of them is (it says nothing itself)."""
        return Answer(None, None, None, None, None, parts=parts)

    @property
    def lasting(self) -> bool:
        """Whether the answer is current for as long as the module is not re-parsed: read from no class or type."""
        return self.info is None and self.typed is None and all(part.lasting for part in self.parts)

    def is_current(self) -> bool:
        """Whether the class's MRO and the node's signature are the objects the answer was read from.

        mypy asks about the same names at every call site, so the usual case is
        two identity tests: the same MRO, and the same (proper) type object in
        the node, from which :func:`~spmd_mypy.boundaries.signature_of` reads
        the same signature.  A type alias is expanded again each time.
        """
        info = self.info
        if info is not None and info.mro is not self.class_mro:
            return False
        typed = self.typed
        if typed is not None and typed.type is not self.raw and signature_of(self.node) is not self.seen:
            return False
        return not self.parts or all(part.is_current() for part in self.parts)


_EXPANDED: Final = object()
"""The ``raw`` of an answer whose node's type is an alias: matches no type, so the alias is expanded again."""

_UNKNOWN: Final = Answer(None, None, None, None, None)


def declared_function(session: Session, fullname: str) -> Answer:
    """What function ``fullname`` declares."""
    return _remembered(session, ("", fullname), lambda: _lookup_function(session, fullname))


def declared_method(session: Session, owner: str, method: str) -> Answer:
    """What method ``owner.method`` declares.

    For an ``nn.Module``'s ``__call__`` and an autograd Function's ``apply``
    that is the signature of ``forward``.
    """
    return _remembered(session, (owner, method), lambda: _lookup_method(session, owner, method))


def declared_attribute(session: Session, owner: str, attribute: str) -> Answer:
    """What the attribute ``owner.attribute`` holds (remembered under ``.attribute``, apart from methods)."""
    return _remembered(session, (owner, f".{attribute}"), lambda: _lookup_attribute(session, owner, attribute))


def _remembered(session: Session, key: tuple[str, str], lookup: Callable[[], Answer]) -> Answer:
    known = session.callables.get(key)
    if known is not None and known.is_current():
        return known
    try:
        found = lookup()
    except Exception:
        found = _UNKNOWN  # a lookup that fails means: not a callable with an SPMD signature
    if session.modules is not None:  # before mypy hands over the modules, nothing is known yet
        session.callables[key] = found
    return found


def _lookup_function(session: Session, fullname: str) -> Answer:
    if session.modules is None or "." not in fullname:
        return _UNKNOWN
    symbol = session.lookup(fullname)
    return Answer.of(None, symbol.node if symbol is not None else None)


def _lookup_method(session: Session, owner: str, method: str) -> Answer:
    info = class_info(session, owner) if owner else None
    if info is None:
        return _UNKNOWN
    if (method == "__call__" and info.has_base(MODULE)) or (method == "apply" and info.has_base(AUTOGRAD_FUNCTION)):
        # A forward generic in its tensors (``def forward(self, x: T) -> T``) is typed too: mypy
        # binds T at each call, so a norm or dropout module keeps its input's SPMD type.  An overloaded
        # forward (a flag of each call) is declared by its implementation; its calls take the overloads.
        forward = info.get_method("forward")
        if isinstance(forward, OverloadedFuncDef) and forward.impl is not None:
            forward = forward.impl
        return Answer.of(info, forward, generic_in_tensors=True)
    return Answer.of(info, info.get_method(method))


def _lookup_attribute(session: Session, owner: str, attribute: str) -> Answer:
    info = class_info(session, owner)
    if info is None:
        return _UNKNOWN
    found = info.get(attribute)
    return Answer.of(info, found.node if found is not None else None)


def class_info(session: Session, fullname: str) -> TypeInfo | None:
    """The class named ``fullname``, once mypy has handed over the modules."""
    if session.modules is None:
        return None
    symbol = session.lookup(fullname)
    info = symbol.node if symbol is not None else None
    return info if isinstance(info, TypeInfo) else None


def _has_spmd_signature(signature: CallableType) -> bool:
    return any(has_spmd(t) for t in (*signature.arg_types, signature.ret_type))


def _generic_in_tensors(signature: CallableType) -> bool:
    """Whether a parameter of ``signature`` is typed by a type variable over tensors.

    That is one bound to a tensor type (``TypeVar("T", bound=Tensor)``) or
    restricted to tensor types (``TypeVar("T", Spmd[Tensor, "tp:R"], ...)``),
    the function's own or its class's (``ColumnParallelLinear[ColIn, ColOut]``).
    """
    return any(_over_tensors(get_proper_type(t)) for t in signature.arg_types)


def _over_tensors(typ: ProperType) -> bool:
    if not isinstance(typ, TypeVarType):
        return False
    return all(is_tensor(t) for t in typ.values) if typ.values else is_tensor(typ.upper_bound)
