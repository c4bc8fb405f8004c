"""Every mypy API the plugin uses beyond the documented plugin interface.

mypy's plugin API (``mypy.plugin``) covers hooks, contexts and reporting.  A
few things the plugin needs are internal to mypy: the declared return type of
the function being checked, name lookup inside type analysis, the per-instance
side channel that carries the SPMD type across the cache, binding ``self``.
They live here, each behind a small function with a fallback, so that a mypy
release that moves them breaks one module and degrades to "unknown" instead
of crashing.  Supported: mypy 2.0 to 2.4 (tested on the oldest and newest).
"""

from __future__ import annotations

from typing import Final

from mypy.checker import TypeChecker
from mypy.nodes import Context, Expression, MypyFile, RefExpr, SymbolTableNode, TypeInfo, Var
from mypy.plugin import CheckerPluginInterface, TypeAnalyzerPluginInterface
from mypy.typeops import bind_self
from mypy.types import ExtraAttrs, FunctionLike, Instance, LiteralType, Type

__all__ = [
    "analyze_base",
    "bind_method",
    "declared_return_type",
    "expression_type",
    "final_str_value",
    "lookup_type_info",
    "lookup_type_name",
    "read_side_channel",
    "with_side_channel",
]

# The attribute name under which an SPMD-typed Instance carries its full type text.
_SIDE_CHANNEL: Final = "__spmd_type__"


def lookup_type_info(modules: dict[str, MypyFile] | None, fullname: str) -> TypeInfo | None:
    """The class ``fullname`` if its module is loaded, else ``None``.

    ``Plugin.lookup_fully_qualified`` asserts when a module is missing, and
    ``named_generic_type`` crashes on a submodule that was never imported as an
    attribute; this walks the loaded modules and never raises.
    """
    if not modules:
        return None
    module, _, name = fullname.rpartition(".")
    tree = modules.get(module)
    node = tree.names.get(name) if tree is not None else None
    return node.node if node is not None and isinstance(node.node, TypeInfo) else None


def lookup_type_name(api: TypeAnalyzerPluginInterface, name: str, context: Context) -> str | None:
    """The full name of ``name`` as written in an annotation (``R``, ``spmd.R``)."""
    lookup = getattr(api, "lookup_qualified", None)
    if lookup is None:
        return None
    try:
        symbol: SymbolTableNode | None = lookup(name, context, suppress_errors=True)
    except Exception:  # noqa: BLE001 - a failed lookup means "not one of ours"
        return None
    if symbol is None or symbol.node is None:
        return None
    return symbol.node.fullname


def analyze_base(api: TypeAnalyzerPluginInterface, typ: Type) -> Type:
    """Analyze the first argument of ``Annotated`` as mypy does.

    mypy passes its TypedDict flag through, so that ``Annotated[Required[int], ...]``
    stays valid inside a TypedDict; the public ``analyze_type`` does not.
    """
    anal_type = getattr(api, "anal_type", None)
    allow = getattr(api, "allow_typed_dict_special_forms", None)
    if anal_type is not None and isinstance(allow, bool):
        result: Type = anal_type(typ, allow_typed_dict_special_forms=allow)
        return result
    return api.analyze_type(typ)


def declared_return_type(api: CheckerPluginInterface) -> Type | None:
    """The declared return type of the function being checked, if any."""
    if isinstance(api, TypeChecker) and api.return_types:
        return api.return_types[-1]
    return None


def final_str_value(expr: RefExpr) -> str | None:
    """The value of a name bound to a ``Final`` string (``TP: Final = "tp"``)."""
    node = expr.node
    if isinstance(node, Var) and node.is_final and isinstance(node.final_value, str):
        return node.final_value
    return None


def read_side_channel(instance: Instance) -> str | None:
    """The SPMD type text an Instance carries, if any.

    The side channel is ``Instance.extra_attrs``: mypy serializes it with the
    instance (incremental cache, daemon, parallel workers) and ignores it in
    subtyping and printing, which is exactly what information that must not
    change mypy's own checks needs.
    """
    extra = instance.extra_attrs
    if extra is None:
        return None
    value = extra.attrs.get(_SIDE_CHANNEL)
    if isinstance(value, LiteralType) and isinstance(value.value, str):
        return value.value
    return None


def with_side_channel(instance: Instance, text: str, str_type: Instance) -> Instance:
    """``instance`` carrying ``text`` in its side channel."""
    instance.extra_attrs = ExtraAttrs({_SIDE_CHANNEL: LiteralType(text, str_type)}, set(), None)
    return instance


def bind_method(method: FunctionLike, receiver: Instance) -> FunctionLike:
    """``method`` with its ``self`` parameter bound to ``receiver``."""
    return bind_self(method, receiver)


def expression_type(api: CheckerPluginInterface, expr: Expression) -> Type | None:
    """The type mypy already inferred for ``expr`` (an element of a list argument).

    Reads the checker's type map instead of re-checking the expression, which
    would run hooks, and report their errors, a second time.
    """
    lookup = getattr(api, "lookup_type_or_none", None)
    if lookup is None:
        return None
    found: Type | None = lookup(expr)
    return found
