"""What an argument names: a mesh axis, as collectives, ``axis_index`` and ``out_partial_axes=`` take it, or a dim.

An argument can name an axis by a string literal, a ``Final`` str, a
device mesh indexed by a name (``mesh["tp"]``: its 1-D sub-mesh), or a process
group whose type says its axis (``Annotated[ProcessGroup, Axis["tp"]]``). A
dim is an int literal, possibly negated.
"""

from __future__ import annotations

from mypy.nodes import Expression, IndexExpr, IntExpr, RefExpr, StrExpr, UnaryExpr
from mypy.types import AnyType, Instance, LiteralType, Type, TypeOfAny, get_proper_type

from spmd_mypy.compat import final_str_value
from spmd_mypy.encoding import Encoder
from spmd_mypy.fullnames import DEVICE_MESH

__all__ = ["axis_name", "int_literal"]


def axis_name(arg: tuple[Expression, Type] | None) -> str | None:
    """The mesh axis one argument names: a string literal, a ``Final`` str, ``mesh["tp"]``, an ``Axis`` group."""
    if arg is None:
        return None
    expr, typ = arg
    if isinstance(expr, StrExpr):
        return expr.value
    if isinstance(expr, IndexExpr) and _is_device_mesh(typ):
        return axis_name((expr.index, AnyType(TypeOfAny.special_form)))  # mesh["tp"], a 1-D mesh of that axis
    if isinstance(expr, RefExpr):
        value = final_str_value(expr)
        if value is not None:
            return value
    proper = get_proper_type(typ)
    if isinstance(proper, LiteralType) and isinstance(proper.value, str):
        return proper.value
    if isinstance(proper, Instance) and proper.last_known_value is not None:
        known = proper.last_known_value.value
        if isinstance(known, str):
            return known
    return Encoder.read_axis(typ)


def _is_device_mesh(typ: Type) -> bool:
    proper = get_proper_type(typ)
    return isinstance(proper, Instance) and proper.type.has_base(DEVICE_MESH)


def int_literal(expr: Expression) -> int | None:
    """An int written as a literal, or a negated literal (``-1``); else ``None``."""
    if isinstance(expr, IntExpr):
        return expr.value
    if isinstance(expr, UnaryExpr) and expr.op == "-" and isinstance(expr.expr, IntExpr):
        return -expr.expr.value
    return None
