"""Tensors without an SPMD type, met in code that has them: unknown, and accepted like ``Any``.

A helper annotated ``-> torch.Tensor`` (in an unannotated module, in a library,
or a torch function outside the op table) returns a plain tensor, and an
attribute declared ``Tensor`` (``nn.Linear.weight``) holds one.  mypy would
reject that value where an SPMD type is declared (``SpmdTensor`` is a subclass
of ``Tensor``), even when it first goes through a variable::

    h = helper(x)  # plain Tensor
    return h       # declared Annotated[Tensor, R["tp"]]

In a module that imports ``spmd_types``, such a call's result or attribute is therefore
given the SPMD type that knows no axis, ``SpmdTensor[Any]``: a subclass of the
plain class, so it still goes everywhere the plain tensor went, and accepted
wherever an SPMD type is declared, as gradual typing promises.  Elsewhere the
plugin leaves the result alone.

Only tensors at the top of the result, in a union (``Optional[Tensor]``) or in
a tuple are given the unknown type; inside an invariant container
(``list[Tensor]``) a subclass would no longer match the plain element type.

A value that no call produced, a parameter annotated plain ``Tensor``
returned or assigned as it is, goes through no hook: there mypy alone
compares it with the declaration.  So does an argument of a call through
``super()`` (``super().forward(x)``): mypy asks no plugin about it, and the
declared signature is not relaxed as in ``layer(x)`` or ``layer.forward(x)``.
The error filter of :mod:`spmd_mypy.mismatches` drops those of mypy's ``return-value``,
``assignment`` and ``arg-type`` errors whose value is a plain tensor (or
``None`` where the declaration is optional too) and whose declaration is an
SPMD type, so that a plain tensor is accepted there as well.  Likewise a
plain ``ProcessGroup`` where a group of known axes is declared or was
inferred (``self.tp_group = get_tensor_model_parallel_group()``, later
``self.tp_group = pg``): a group whose axis nobody wrote down is unknown, as
it is as an argument.  A group of another known axis is still reported.
"""

from __future__ import annotations

from typing import Final

from mypy.nodes import TypeInfo
from mypy.plugin import AttributeContext, FunctionContext, MethodContext
from mypy.types import Instance, TupleType, Type, UnionType, get_proper_type

from spmd_mypy import files
from spmd_mypy.encoding import Encoder
from spmd_mypy.fullnames import PARAMETER, TENSOR
from spmd_mypy.session import Session
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import SpmdType

__all__ = ["returns_plain_tensor", "unknown_attribute", "unknown_result"]

_PLAIN: Final = frozenset({TENSOR, PARAMETER})
_NOTHING_KNOWN: Final = SpmdType()


def returns_plain_tensor(result: Type | TypeInfo) -> bool:
    """Whether a call's declared ``result`` (or a call of class ``result``) gives a plain tensor."""
    if isinstance(result, TypeInfo):
        return result.fullname in _PLAIN
    proper = get_proper_type(result)
    if isinstance(proper, Instance):
        return proper.type.fullname in _PLAIN
    if isinstance(proper, (UnionType, TupleType)):
        return any(returns_plain_tensor(item) for item in proper.items)
    return False


def unknown_result(session: Session, ctx: FunctionContext | MethodContext) -> Verdict:
    """The call's result, its plain tensors made tensors of unknown SPMD type in a module that uses them."""
    if not files.uses_spmd(session, ctx.api):
        return Verdict()
    return Verdict(returns=_unknown(Encoder.for_checker(session, ctx.api), ctx.default_return_type))


def unknown_attribute(session: Session, ctx: AttributeContext) -> Verdict:
    """An attribute read (``self.linear.weight``), its plain tensors made unknown in a module that uses them."""
    if ctx.is_lvalue or not files.uses_spmd(session, ctx.api):
        return Verdict()
    return Verdict(returns=_unknown(Encoder.for_checker(session, ctx.api), ctx.default_attr_type))


def _unknown(encoder: Encoder, typ: Type) -> Type:
    proper = get_proper_type(typ)
    if isinstance(proper, Instance):
        if proper.type.fullname in _PLAIN:
            return encoder.tensor(_NOTHING_KNOWN, proper, inferred=True) or typ
        return typ
    if isinstance(proper, UnionType):
        return UnionType([_unknown(encoder, item) for item in proper.items], proper.line, proper.column)
    if isinstance(proper, TupleType):
        return proper.copy_modified(items=[_unknown(encoder, item) for item in proper.items])
    return typ

