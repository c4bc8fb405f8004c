"""Calls of other libraries' communication functions, and the ``spmd_types`` call each one can become.

Which functions these are, and what each one is, is the rule core's
ecosystem table (:mod:`spmd_types.typesystem.ecosystem`), the table the
checker types them with: Megatron's mapping functions each have an
:class:`~spmd_types.typesystem.ecosystem.Equivalent` that computes the same
forward and backward.  A call of one is rewritten only when its arguments say
everything the equivalent needs: which tensor, which group (a group that is
left out or ``None`` is the library's default one, fetched by the table's
getter for that role), and a literal value of any flag that decides the
backward.  Otherwise :func:`plan` says why not.

The table's other entries are recognised so that they can be reported: an
in-place collective such as ``torch.distributed.all_reduce`` and the ops of
torch's functional collectives have no ``spmd_types`` call that computes the
same (see their reasons below).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

import libcst as cst

from spmd_types.codemods.names import Resolved
from spmd_types.typesystem import (
    EQUIVALENTS,
    FUNCTIONAL_OPS,
    GROUP_GETTERS,
    IN_PLACE,
    REEXPORTS,
    Endpoint,
    Equivalent,
    FunctionalOp,
    InPlace,
)

__all__ = ["Entry", "Plan", "lookup", "plan"]

Entry: TypeAlias = Equivalent | InPlace | FunctionalOp
"""A library function or op of the core's ecosystem tables."""


def _by_name() -> dict[str, Entry]:
    """Every entry under each full name a caller can reach it by."""
    found: dict[str, Entry] = {}
    for equivalent in EQUIVALENTS.values():
        found[equivalent.function] = equivalent
        module = equivalent.function.rpartition(".")[0]
        for package, source in REEXPORTS.items():
            if source == module and not equivalent.name.startswith("_"):  # a star import leaves those out
                found[f"{package}.{equivalent.name}"] = equivalent
    for in_place in IN_PLACE.values():
        found[in_place.function] = found[in_place.name] = in_place
    for op in FUNCTIONAL_OPS.values():
        found[op.name] = op
    return found


_ENTRIES: Final[Mapping[str, Entry]] = _by_name()


def lookup(name: Resolved) -> Entry | None:
    """The table entry a resolved name refers to, if any."""
    return next((_ENTRIES[c] for c in name.candidates() if c in _ENTRIES), None)


@dataclass(frozen=True)
class Plan:
    """A call of ``equivalent`` as ``spmd_types.<call>(x, axis, src=..., dst=dst)``.

    ``tensor`` is the index of the call's argument that holds the tensor;
    ``group`` that of the argument holding the process group, or, where the
    library's default group is meant, the full name of the getter that
    returns it.
    """

    equivalent: Equivalent
    dst: Endpoint
    tensor: int
    group: int | str


def plan(entry: Entry, call: cst.Call) -> Plan | str:
    """How to rewrite ``call`` of ``entry``, or the reason it cannot be rewritten."""
    if isinstance(entry, InPlace):
        return (f"it overwrites its tensor in place, outside autograd, while spmd_types.{entry.call} returns a new "
                "tensor and has a backward: no rewrite computes the same")
    if isinstance(entry, FunctionalOp):
        return (f"the op names its process group by a string, while spmd_types.{entry.call} takes the group "
                "itself or a mesh-axis name")
    return _plan_equivalent(entry, call)


def _plan_equivalent(equivalent: Equivalent, call: cst.Call) -> Plan | str:
    if equivalent.tensor_list or equivalent.returns_tuple:
        return (f"it {'takes a list of tensors' if equivalent.tensor_list else 'returns a tuple of tensors'}, "
                f"while spmd_types.{equivalent.call} takes and returns one stacked tensor")
    bound = _bind(call, equivalent.parameters)
    if isinstance(bound, str):
        return bound
    if equivalent.tensor not in bound:
        return f"its tensor argument {equivalent.tensor} is missing"
    flag = equivalent.variant.parameter if equivalent.variant is not None else None
    for parameter in bound:
        if parameter not in (equivalent.tensor, equivalent.group, flag):
            return f"its argument {parameter}= has no counterpart in spmd_types.{equivalent.call}"
    dst = equivalent.dst
    if equivalent.variant is not None and flag in bound:
        value = _bool_literal(call.args[bound[flag]].value)
        if value is None:
            return (f"{flag}= is not literally True or False, and it decides the backward "
                    f"(dst={equivalent.dst.code} or {equivalent.variant.dst_if_false.code})")
        dst = equivalent.dst if value else equivalent.variant.dst_if_false
    group = bound.get(equivalent.group)
    if group is not None and _is_none(call.args[group].value):
        group = None
    if group is not None:
        if group < bound[equivalent.tensor] and not (
            _is_plain(call.args[group].value) or _is_plain(call.args[bound[equivalent.tensor]].value)
        ):
            return ("the group would move after the tensor, which changes the order in which the two "
                    "arguments are evaluated")
        return Plan(equivalent, dst, bound[equivalent.tensor], group)
    getter = _default_group(equivalent)
    if getter is None:
        return f"its {equivalent.group} is None or left out, and {equivalent.name} has no default group"
    return Plan(equivalent, dst, bound[equivalent.tensor], getter)


def _bind(call: cst.Call, parameters: tuple[str, ...]) -> dict[str, int] | str:
    """Each parameter a call's argument binds, with the argument's index; or why it cannot tell."""
    bound: dict[str, int] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return "its arguments are unpacked with * or **, so which argument is which is not known"
        if arg.keyword is None:
            if index >= len(parameters):
                return f"it has more positional arguments than the {len(parameters)} parameters it takes"
            parameter = parameters[index]
        else:
            parameter = arg.keyword.value
            if parameter not in parameters:
                return f"it has no parameter {parameter}"
        if parameter in bound:
            return f"{parameter} is given twice"
        bound[parameter] = index
    return bound


def _default_group(equivalent: Equivalent) -> str | None:
    """The getter of the group the library uses when none is given: its own getter for the role."""
    if equivalent.default_role is None:
        return None
    library = equivalent.function.partition(".")[0]
    getters = [getter for getter, role in GROUP_GETTERS.items()
               if role == equivalent.default_role and getter.partition(".")[0] == library]
    return getters[0] if len(getters) == 1 else None


def _bool_literal(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _is_plain(expr: cst.BaseExpression) -> bool:
    """A name, an attribute of one, or a literal: evaluating it earlier or later makes no difference."""
    if isinstance(expr, cst.Attribute):
        return _is_plain(expr.value)
    return isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.SimpleString))
