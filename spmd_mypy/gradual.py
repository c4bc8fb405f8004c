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
An error filter (:func:`watch`) drops those of mypy's ``return-value``,
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
from spmd_mypy.compat import Mismatch, filter_mismatches, printed_axis_group, printed_spmd
from spmd_mypy.encoding import Encoder
from spmd_mypy.fullnames import PARAMETER, TENSOR
from spmd_mypy.session import Session
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import SpmdType

__all__ = ["returns_plain_tensor", "unknown_attribute", "unknown_result", "watch"]

_PLAIN: Final = frozenset({TENSOR, PARAMETER})
_NOTHING_KNOWN: Final = SpmdType()
# The plain classes as mypy prints them, by the SPMD-typed values they stand in for (see _spmd_kind).
_PLAIN_KIND: Final = {"Tensor": "tensor", "Parameter": "tensor", "ProcessGroup": "group"}


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


def watch(session: Session, api: object) -> None:
    """Have mypy drop its errors for a plain tensor where an SPMD type is declared (once per run).

    Called from every annotation the plugin reads, so that the filter is in
    place before mypy checks a module with SPMD types.
    """
    session.plain_filter = filter_mismatches(api, session.plain_filter, _plain_into_spmd)


def _plain_into_spmd(mismatch: Mismatch) -> bool:
    """Whether ``mismatch`` is a plain value (or ``None``) returned, assigned or passed where an SPMD type is declared.

    A plain value is a tensor where an SPMD-typed tensor is declared, or a
    ``ProcessGroup`` where a group of known axes (``AxisGroup``, the type of
    ``Annotated[ProcessGroup, Axis["tp"]]`` and of a group getter's result) is.
    An argument reaches mypy's check against the declared SPMD type only in a
    call that no hook relaxed (see :func:`spmd_mypy.boundaries.relax_function`):
    one through ``super()`` (``super().forward(x)``), for which mypy asks no
    plugin.
    """
    if mismatch.into not in ("return", "variable", "argument"):
        return False
    plain = {_PLAIN_KIND.get(item) for item in mismatch.value if item != "None"}
    declared = {_spmd_kind(item) for item in mismatch.declared if item != "None"}
    return (len(plain) == 1 and None not in plain and declared == plain
            and ("None" not in mismatch.value or "None" in mismatch.declared))


def _spmd_kind(printed: str) -> str | None:
    """``"tensor"`` or ``"group"``: which plain values an SPMD type printed as ``printed`` accepts."""
    if printed_spmd(printed) is not None:
        return "tensor"
    return "group" if printed_axis_group(printed) else None
