"""Configuration flags of a module generic in its SPMD types: ``self.flag`` read as its configuration's value.

A layer whose contract depends on a flag is written generic in the types
that change, with a type variable restricted to one type per configuration,
and constructor overloads that say which flag value gives which types::

    Out = TypeVar("Out", Gathered, Sharded)

    class ColumnParallelLinear(nn.Module, Generic[Out]):
        @overload
        def __init__(self: ColumnParallelLinear[Gathered], *, gather_output: Literal[True]) -> None: ...
        @overload
        def __init__(self: ColumnParallelLinear[Sharded], *, gather_output: Literal[False] = ...) -> None: ...

mypy itself binds each instance's type arguments at its construction, types
each call by them, and checks every method once per value of the restricted
variables.  What it cannot know is that, in the copy checked with
``Out = Gathered``, ``self.gather_output`` is ``True``.  This module says so:
an attribute named like a parameter that some of those overloads type with a
literal or ``None`` (a flag), read on an instance whose type arguments match
some overloads' ``self`` types and not others, has the union of those
overloads' types for it; mypy then narrows ``if self.gather_output:`` (or
``self.tok_embeddings(tokens) if self.tok_embeddings is not None else
tokens``, a submodule that only some configurations have) and leaves the
other configuration's branch to the copy where it runs.  Elsewhere the
attribute keeps its declared type.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

from mypy.nodes import ARG_STAR, ARG_STAR2, OverloadedFuncDef, TypeInfo
from mypy.plugin import AttributeContext
from mypy.types import (
    AnyType,
    Instance,
    LiteralType,
    NoneType,
    Type,
    TypeVarType,
    UninhabitedType,
    UnionType,
    get_proper_type,
)

from spmd_mypy.boundaries import has_spmd, signature_of
from spmd_mypy.compat import is_subtype, simplified_union
from spmd_mypy.session import Session
from spmd_mypy.verdict import Verdict

__all__ = ["FlagTable", "flag_table", "read_flag"]


@dataclass(frozen=True)
class FlagTable:
    """The constructor overloads of one class: per overload, its ``self`` type and its named parameters' types.

    A flag is a parameter that some overload types with a literal or with
    ``None``: ``gather_output: Literal[True]``, or a submodule that one
    configuration has and another does not (torchtitan's pipeline stages:
    ``tok_embeddings: None`` but on the first).  ``init`` is the constructor
    the table was read from, so that a table never outlives a re-analysed
    class (the daemon).
    """

    init: builtins.object  # spelled so for mypyc: a compiled dataclass looks a field's type up in the module
    rows: tuple[tuple[Instance, dict[str, Type]], ...]

    def flags(self) -> frozenset[str]:
        return frozenset(name for _, parameters in self.rows for name, typ in parameters.items() if _is_literal(typ))

    def value(self, receiver: Instance, flag: str) -> Type | None:
        """The flag's type on an instance typed ``receiver``; ``None`` when the overloads do not narrow it.

        Type arguments that no overload gives (``RowParallelLinear[Whole,
        Scattered]`` where sequence parallelism needs a parallel input) are a
        configuration that cannot be built: there the flag is ``Never``, and
        mypy stops checking that copy of the method where it reads the flag.
        """
        matching = [parameters[flag] for self_type, parameters in self.rows
                    if flag in parameters and is_subtype(receiver, self_type)]
        if not matching:
            return UninhabitedType() if _concrete(receiver) else None
        if len(matching) == len(self.rows):
            return None
        return simplified_union(matching)


def flag_table(session: Session, info: TypeInfo) -> FlagTable | None:
    """The flag table of class ``info``, if its constructor is overloaded on SPMD type arguments."""
    found = info.get("__init__")
    init = found.node if found is not None else None
    if not isinstance(init, OverloadedFuncDef) or not info.type_vars:
        return None
    known = session.flag_tables.get(info.fullname)
    if known is not None and known.init is init:
        return known
    table = FlagTable(init, tuple(_rows(init)))
    if not table.rows:
        # Not remembered: an attribute read during semantic analysis (a class-level declaration such
        # as ``weight: Annotated[nn.Parameter, S["tp", 0]]``) sees the overloads' ``self`` types
        # before they are analysed, and a table remembered then would have no rows for good.
        return None
    session.flag_tables[info.fullname] = table
    return table


def read_flag(session: Session, ctx: AttributeContext, owner: TypeInfo, flag: str) -> Verdict:
    """``self.flag`` (or ``layer.flag``): the configuration's literal where the receiver's type fixes it."""
    receiver = get_proper_type(ctx.type)
    table = flag_table(session, owner)
    if ctx.is_lvalue or table is None or not isinstance(receiver, Instance):
        return Verdict()
    value = table.value(receiver, flag)
    return Verdict(returns=value) if value is not None else Verdict()


def _rows(init: OverloadedFuncDef) -> list[tuple[Instance, dict[str, Type]]]:
    rows = []
    for item in init.items:
        signature = signature_of(item)
        if signature is None or not signature.arg_types:
            continue
        self_type = get_proper_type(signature.arg_types[0])
        if not isinstance(self_type, Instance) or not has_spmd(self_type):
            continue
        parameters = {
            name: typ
            for name, kind, typ in zip(signature.arg_names[1:], signature.arg_kinds[1:], signature.arg_types[1:])
            if name is not None and kind not in (ARG_STAR, ARG_STAR2)
        }
        rows.append((self_type, parameters))
    return rows


def _concrete(receiver: Instance) -> bool:
    """Whether every type argument of ``receiver`` is a known type (neither a type variable nor ``Any``)."""
    return all(not isinstance(get_proper_type(arg), (AnyType, TypeVarType)) for arg in receiver.args)


def _is_literal(typ: Type) -> bool:
    """Whether ``typ`` has one value, or a few listed ones: literals and ``None``."""
    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        return all(_is_literal(item) for item in proper.items)
    return isinstance(proper, (LiteralType, NoneType))
