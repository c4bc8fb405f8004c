"""Global SPMD: the rules that a function checked in global mode obeys on top of local SPMD.

In global SPMD a program means the single-device program run on the whole
(global) tensors, followed by a partition.  Every value has a
:class:`~spmd_types.typesystem.partition_spec.PartitionSpec`; per mesh axis
that spec is a local SPMD type (:func:`~spmd_types.typesystem.partition_spec.spec_type`): ``S(i)`` on every axis
that cuts dim ``i`` (each axis of a multi-axis entry such as ``("tp", "cp")``
too: its ranks hold different pieces of dim ``i``), ``P`` on a partial axis,
``R`` elsewhere.  ``V`` has no global meaning: it says that the ranks hold
different data, not how the data assemble into one tensor.

A global program is a local program that keeps every value global, so the
rules here come on top of the local ones (:func:`~spmd_types.typesystem.join.apply_op`):

* **An op keeps the shards** (:func:`check_global_op`).  On a mesh axis
  on which some operand is ``S(i)``, the result must be a shard again, at the
  dim the layout rules of :mod:`~spmd_types.typesystem.shard_dims` say.  A
  result that varies in no known way (an op along the sharded dim, a merge
  that scrambles it) is an error.
* **Contractions** (``einsum``, ``matmul``, ``linear`` and their kin, and
  broadcasting pointwise ops, read as einsum equations where the operands'
  ranks are known): on each mesh axis the sharded operands agree on one
  label, and every operand that uses the label is cut on that axis along it;
  no mesh axis cuts two labels.  When the label is in the output, the result
  is sharded there; when it is summed over, each rank holds a summand of the
  result, and that pending sum is never implicit: the op must be called as
  ``spmd_types.matmul(..., out_partial_axes=axis)`` (and the same for
  ``einsum``, ``linear``, ``sum``), whose result is ``P`` on the axis.
* **No repeated mesh axis**: an axis cuts one dim, which a per-axis type says
  by construction and :class:`PartitionSpec` checks.
* **Collectives and casts** (:func:`global_cast_violation`): only their
  shard-preserving variants, whose ``src`` and ``dst`` are ``R``, ``I``,
  ``P`` or ``S(i)``; a ``V`` variant adds or drops the rank in a way the spec
  cannot say (drop to local SPMD for it).  ``convert`` is the identity on the
  global value; ``reinterpret`` changes it, except between ``R`` and ``I``.

:func:`propagate` applies these rules to partition specs: the spec of an op's
result from its operands' specs, or the violations.  ``tests/typesystem``
checks it against the denotation (run the op on the global tensors and
partition, against running it on every rank's pieces).
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from spmd_types.typesystem.collectives import Endpoint, fix
from spmd_types.typesystem.join import Operand, OpOutcome, apply_op
from spmd_types.typesystem.local_types import WEAK, AxisType, I, P, R, Shard, V
from spmd_types.typesystem.ops import canonical_param, lookup
from spmd_types.typesystem.partial_outputs import PARTIAL_OUTPUT_FUNCTIONS, check_partial_output
from spmd_types.typesystem.partition_spec import Factor, PartitionSpec, spec_type
from spmd_types.typesystem.shard_dims import POINTWISE_OPS, LayoutCall, result_dim
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Code, Violation

__all__ = [
    "GLOBAL_VALUE_TYPES",
    "check_global_op",
    "einsum_terms",
    "global_annotation_violation",
    "global_cast_violation",
    "propagate",
]

GLOBAL_VALUE_TYPES: Final = "R, I, P or S(i)"
"""The per-axis types a value may have in global SPMD, as messages list them."""

_PARTIAL_FUNCTION: Final = {
    "torch.einsum": "einsum",
    **dict.fromkeys(("torch.matmul", "torch.Tensor.matmul", "torch.Tensor.__matmul__", "torch.Tensor.__rmatmul__",
                     "torch.mm", "torch.Tensor.mm", "torch.bmm", "torch.Tensor.bmm"), "matmul"),
    "torch.nn.functional.linear": "linear",
    **dict.fromkeys(("torch.sum", "torch.Tensor.sum"), "sum"),
}
"""Ops whose sum over a sharded dim ``spmd_types.<function>(..., out_partial_axes=...)`` declares pending."""

_RANKS_TRIED: Final = 4
"""Ranks tried for an operand whose rank is not known, where a rule depends on it."""

_FIXED_RANKS: Final = {"torch.mm": (2, 2), "torch.Tensor.mm": (2, 2), "torch.bmm": (3, 3), "torch.Tensor.bmm": (3, 3)}


def global_annotation_violation(declared: SpmdType) -> Violation | None:
    """Why a declared type has no global meaning (``V`` on an axis), or ``None``."""
    varying = [axis for axis, kind in declared.items() if kind is V]
    if not varying:
        return None
    axis = varying[0]
    reason = (f"V has no meaning in global SPMD (it does not say how the ranks' data assemble into one "
              f"tensor); declare {GLOBAL_VALUE_TYPES} on {axis!r} (S[\"{axis}\", dim] or a PartitionSpec), "
              f"or check this function in local SPMD")
    return Violation(Code.GLOBAL, axis, reason, ("V",))


def global_cast_violation(
    name: str, axis: str, src: Endpoint | None, dst: Endpoint | None, have: AxisType | None = None
) -> Violation | None:
    """Why collective or cast ``name`` with ``src`` and ``dst`` on ``axis`` is not global, or ``None``.

    ``have`` is the input's type on ``axis``: where ``src=V`` is given for an
    input that is ``S(i)``, the fix is the call with ``src=S(i)``.
    """
    if src is V or dst is V:
        reason = (f"in global SPMD only the shard-preserving variants of {name} are defined (src and dst "
                  f"among {GLOBAL_VALUE_TYPES}): with V the spec cannot say how the ranks' pieces assemble; "
                  f"write src=S(i) or dst=S(i) for the dim the pieces are cut along")
        offered = fix(name, have, dst, axis) if src is V and isinstance(have, Shard) and dst is not V \
            and dst is not None else None
        fixes = (replace(offered, replaces=name),) if offered is not None else ()
        return Violation(Code.GLOBAL, axis, reason, tuple(t.code for t in (src, dst) if t is not None), (), fixes)
    if name == "reinterpret" and src is not None and dst is not None and not {src, dst} <= {R, I}:
        reason = (f"reinterpret from {src.code} to {dst.code} changes the global value (it keeps each rank's data "
                  f"and changes what the ranks' data mean); in global SPMD use convert, which keeps the value, "
                  f"or a collective")
        return Violation(Code.GLOBAL, axis, reason, (src.code, dst.code))
    return None


def einsum_terms(op: str, operands: Sequence[Operand], args: Mapping[str, object]) -> tuple[list[str], str] | None:
    """The op as an einsum equation over its tensor operands (one term each, Python numbers ``""``), or ``None``.

    einsum with a literal equation without ``...``; ``matmul``, ``mm``,
    ``bmm``, ``linear`` (with its bias) and ``sum`` over literal dims at known ranks; broadcasting
    pointwise ops at known ranks (dims aligned from the last).  An operand's
    rank is its ``ndim``, else the length of its ``shape``.
    """
    ranks = [o.ndim if o.ndim is not None else len(o.shape) if o.shape is not None else None for o in operands]
    if op == "torch.einsum":
        equation = args.get("equation")
        if not isinstance(equation, str) or "->" not in equation or "." in equation:
            return None
        inputs, output = equation.replace(" ", "").split("->")
        terms = inputs.split(",")
        if len(terms) != len(operands) or any(r is not None and len(t) != r for t, r in zip(terms, ranks)):
            return None
        return terms, output
    if None in ranks:
        return None
    known = [r for r in ranks if r is not None]
    if op in _FIXED_RANKS and tuple(known) != _FIXED_RANKS[op]:
        return None
    if op == "torch.Tensor.__rmatmul__" and len(known) == 2:  # other @ input
        found = _matmul_terms(known[1], known[0])
        return ([found[0][1], found[0][0]], found[1]) if found is not None else None
    if _PARTIAL_FUNCTION.get(op) == "matmul" and len(known) == 2:
        return _matmul_terms(known[0], known[1])
    if op == "torch.nn.functional.linear":
        return _linear_terms([canonical_param(o.param) for o in operands], known)
    if _PARTIAL_FUNCTION.get(op) == "sum" and len(known) == 1:
        return _sum_terms(known[0], args)
    if op in POINTWISE_OPS:
        out = string.ascii_lowercase[: max(known, default=0)]
        return [out[len(out) - r:] if r else "" for r in known], out
    return None


def _matmul_terms(a: int, b: int) -> tuple[list[str], str] | None:
    if a == 0 or b == 0:
        return None
    batch = string.ascii_lowercase[: max(a, b) - 2] if max(a, b) > 2 else ""
    left = batch[len(batch) - max(a - 2, 0):] + ("mk" if a >= 2 else "k")
    right = batch[len(batch) - max(b - 2, 0):] + ("kn" if b >= 2 else "k")
    return [left, right], batch + ("m" if a >= 2 else "") + ("n" if b >= 2 else "")


def _sum_terms(rank: int, args: Mapping[str, object]) -> tuple[list[str], str] | None:
    """``sum(x, dim)`` of a rank-``rank`` tensor: the summed dims leave the output (with ``keepdim``: unread)."""
    term = string.ascii_lowercase[:rank]
    dim = args.get("dim")
    dims = (dim,) if isinstance(dim, int) else dim if isinstance(dim, tuple) else tuple(range(rank)) \
        if dim is None else None
    if dims is None or args.get("keepdim") or not all(isinstance(d, int) and -rank <= d < rank for d in dims):
        return None
    summed = {d % rank for d in dims if isinstance(d, int)}
    return [term], "".join(label for k, label in enumerate(term) if k not in summed)


def _linear_terms(params: Sequence[str], ranks: Sequence[int]) -> tuple[list[str], str] | None:
    terms = []
    batch = string.ascii_lowercase[: max(ranks[0] - 1, 0)] if ranks else ""
    for param, rank in zip(params, ranks):
        term = {"input": batch + "k", "weight": "nk", "bias": "n"}.get(param)
        if term is None or len(term) != rank:
            return None
        terms.append(term)
    return terms, batch + "n"


def check_global_op(
    op: str,
    operands: Sequence[Operand],
    result: SpmdType,
    args: Mapping[str, object] | None = None,
    out_partial_axes: tuple[str, ...] = (),
    local_axes: frozenset[str] = frozenset(),
) -> OpOutcome:
    """What makes op ``op`` on ``operands`` not global, given its local ``result`` (see the module docstring).

    The outcome's result is ``result``, unknown on each axis with a violation
    (so that the mistake is reported once).  ``out_partial_axes`` are the axes
    the call declares pending sums on (``spmd_types.matmul(..., out_partial_axes=...)``).
    Axes on which an operand is ``V`` are left alone: the value stopped being
    global before; so are ``local_axes``, on which the op runs in a local region
    (:mod:`~spmd_types.typesystem.regions`).
    """
    found = tuple(v for v in _op_violations(op, operands, result, args or {}, out_partial_axes)
                  if v.axis not in local_axes)
    broken = {v.axis for v in found}
    if broken:
        result = SpmdType({axis: kind for axis, kind in result.items() if axis not in broken})
    return OpOutcome(result, found)


def _op_violations(
    op: str, operands: Sequence[Operand], result: SpmdType, args: Mapping[str, object],
    out_partial_axes: tuple[str, ...],
) -> tuple[Violation, ...]:
    terms = einsum_terms(op, operands, args)
    axes = dict.fromkeys(axis for o in operands for axis, kind in o.type.items() if isinstance(kind, Shard))
    found: list[Violation] = []
    for axis in axes:
        on_axis = [o.type.get(axis) for o in operands]
        if V in on_axis:
            continue
        problem = (_contraction(op, terms, operands, on_axis, axis, out_partial_axes) if terms is not None
                   else _layout(op, operands, result, axis, args, out_partial_axes))
        if problem is not None:
            found.append(problem)
    return tuple(found)


def _contraction(
    op: str,
    terms: tuple[list[str], str],
    operands: Sequence[Operand],
    on_axis: Sequence[AxisType | None],
    axis: str,
    out_partial_axes: tuple[str, ...],
) -> Violation | None:
    inputs, output = terms
    labels: dict[str, list[int]] = {}
    for k, (term, kind) in enumerate(zip(inputs, on_axis)):
        if isinstance(kind, Shard):
            dim = kind.dim + len(term) if kind.dim < 0 else kind.dim
            if not 0 <= dim < len(term):
                return None  # the local rules report a dim out of range
            labels.setdefault(term[dim], []).append(k)
    if len(labels) > 1:
        cut = ", ".join(f"{_operand(operands, k)} along {label!r}" for label, ks in labels.items() for k in ks)
        reason = (f"the operands are cut on {axis!r} along different dims ({cut}), so the ranks' pieces do not "
                  f"meet: no partition of the global result is computed; redistribute the operands so that "
                  f"one dim is cut on {axis!r}")
        return Violation(Code.GLOBAL, axis, reason, tuple(str(k) for k in on_axis if k is not None))
    ((label, cut_ones),) = labels.items()
    uncut = [k for k, term in enumerate(inputs) if label in term and k not in cut_ones and on_axis[k] is not None
             and on_axis[k] is not WEAK]
    if uncut:
        reason = (f"{_operand(operands, cut_ones[0])} is cut on {axis!r} along dim {label!r}, which "
                  f"{_operand(operands, uncut[0])} ({_code(on_axis[uncut[0]])} on {axis!r}) holds whole: the "
                  f"ranks' pieces do not line up; cut it the same way (convert(..., \"{axis}\", src=R, "
                  f"dst=S(...))), or gather the other")
        return Violation(Code.GLOBAL, axis, reason, (_code(on_axis[cut_ones[0]]), _code(on_axis[uncut[0]])))
    if label in output or axis in out_partial_axes:
        return None
    biased = any(canonical_param(o.param) == "bias" for o in operands) and op == "torch.nn.functional.linear"
    return _implicit_partial(op, axis, f"dim {label!r} is summed over and cut on {axis!r}", biased)


def _layout(
    op: str, operands: Sequence[Operand], result: SpmdType, axis: str, args: Mapping[str, object],
    out_partial_axes: tuple[str, ...],
) -> Violation | None:
    """The op's result on ``axis`` where no einsum reading applies: an error where it is no shard at any rank."""
    if result.get(axis) is not V or axis in out_partial_axes or _shard_at_some_rank(op, operands, axis, args):
        return None
    if op in _PARTIAL_FUNCTION:
        reason = (f"a dim cut on {axis!r} is summed over, so no rank holds a piece of the global result; where "
                  f"every operand is cut along that dim on {axis!r}, each rank holds a summand, and in global SPMD "
                  f"a pending sum is never implicit: write spmd_types.{_PARTIAL_FUNCTION[op]}(..., "
                  f"out_partial_axes=\"{axis}\")")
        return Violation(Code.GLOBAL, axis, reason, ("V",))
    reason = (f"the result is no longer a partition of the global result on {axis!r} (the op works along, or "
              f"scrambles, the dim cut on {axis!r}); gather that dim first "
              f"(all_gather(..., \"{axis}\", src=S(i), dst=R)), or check this function in local SPMD")
    return Violation(Code.GLOBAL, axis, reason, ("V",))


def _shard_at_some_rank(op: str, operands: Sequence[Operand], axis: str, args: Mapping[str, object]) -> bool:
    """Whether, for some ranks of the operands whose rank is not known, the op's result is a shard on ``axis``.

    Where it is, the rank decides, and the value is left gradual (``V``), as
    in local SPMD; runtime checking, which knows every shape, decides there.
    """
    sharded = {k: kind.dim for k, o in enumerate(operands) if isinstance(kind := o.type.get(axis), Shard)}
    known = [o.ndim if o.ndim is not None else len(o.shape) if o.shape is not None else None for o in operands]
    unknown = [k for k, rank in enumerate(known) if rank is None]
    if not unknown:
        return False
    params = tuple(o.param for o in operands)
    for ranks in itertools.product(range(1, _RANKS_TRIED + 1), repeat=len(unknown)):
        tried = list(known)
        for k, rank in zip(unknown, ranks):
            tried[k] = rank
        if isinstance(result_dim(op, sharded, LayoutCall(args, params, tuple(tried))), int):
            return True
    return False


def _implicit_partial(op: str, axis: str, what: str, biased: bool = False) -> Violation:
    function = _PARTIAL_FUNCTION.get(op, "")
    if biased:
        hint = (f"write spmd_types.linear(..., out_partial_axes=\"{axis}\") without the bias, which would be "
                f"counted once per rank, and add the bias after the reduction")
    elif function:
        hint = (f"write spmd_types.{function}(..., out_partial_axes=\"{axis}\") to make the pending sum over "
                f"{axis!r} explicit (its result is P on {axis!r})")
    else:
        hint = f"write the contraction with spmd_types.einsum(..., out_partial_axes=\"{axis}\")"
    reason = (f"{what}: each rank holds a summand of the global result, and in global SPMD a pending sum is "
              f"never implicit; {hint}")
    return Violation(Code.GLOBAL, axis, reason, ("V",))


def _operand(operands: Sequence[Operand], k: int) -> str:
    return f"operand {k + 1} ({operands[k].param})" if operands[k].param else f"operand {k + 1}"


def _code(kind: AxisType | None) -> str:
    return "unknown" if kind is None else kind.code


def propagate(
    op: str,
    operands: Sequence[tuple[str, PartitionSpec | None, int]],
    out_ndim: int,
    args: Mapping[str, object] | None = None,
    out_partial_axes: tuple[str, ...] = (),
) -> PartitionSpec | tuple[Violation, ...]:
    """The spec of op ``op``'s result in global SPMD, or the violations that make it not global.

    ``operands`` gives each one's parameter name, spec (``None``: a Python
    number) and rank; ``out_ndim`` is the result's rank.  The result is the local rules' result, checked by
    :func:`global_op_violations`, with each output dim cut by the axes of the
    operand entry it comes from, in that entry's order.  Strided entries
    (block counts) are not propagated.
    """
    args = dict(args or {})
    named = [axis for _, spec, _ in operands if spec is not None for axis in (*spec.axes, *spec.partial)]
    typed = [Operand(param, spec_type(spec, named) if spec is not None else SpmdType({}, WEAK), ndim)
             for param, spec, ndim in operands]
    for _, spec, _ in operands:
        strided = [dim for dim in range(len(spec)) if any(isinstance(f, int) for f in spec.factors(dim))] \
            if spec is not None else []
        if strided:
            reason = "a strided entry (a block count) is not propagated through ops; redistribute_spec it first"
            return (Violation(Code.GLOBAL, None, reason),)
    function = next((f for f in PARTIAL_OUTPUT_FUNCTIONS.values() if f.op == op), None)
    if out_partial_axes and function is not None:
        outcome = check_partial_output(function, typed, out_partial_axes, args, args=args)
    else:
        outcome = apply_op(lookup(op), typed, args, op=op, args=args)
    mismatch = _label_orders(op, typed, operands, args)
    if mismatch is not None:
        return (mismatch,)
    violations = (*outcome.violations, *check_global_op(op, typed, outcome.result, args, out_partial_axes).violations)
    if violations:
        return violations
    result = outcome.result
    entries: dict[int, list[str]] = {}
    for axis in dict.fromkeys(named):
        kind = result.get(axis)
        if isinstance(kind, Shard):
            entries.setdefault(kind.dim, []).append(axis)
        elif kind not in (R, P):
            return (Violation(Code.GLOBAL, axis, f"the result is {_code(kind)} on {axis!r}, which no spec says"),)
    entries = {d + out_ndim if d < 0 else d: axes for d, axes in entries.items()}
    ordered: dict[int, tuple[Factor, ...]] = {}
    for dim, axes in entries.items():
        orders = {tuple(f for f in spec.factors(d) if f in axes) for _, spec, _ in operands if spec is not None
                  for d in range(len(spec)) if set(axes) & set(spec.factors(d))}
        if len(orders) != 1 or len(next(iter(orders))) != len(axes):
            reason = f"the operands cut dim {dim} of the result with the axes {axes} in different groupings or orders"
            return (Violation(Code.GLOBAL, None, reason),)
        ordered[dim] = orders.pop()
    partial = tuple(axis for axis in dict.fromkeys(named) if result.get(axis) is P)
    return PartitionSpec(*(ordered.get(d) or None for d in range(out_ndim)), partial=partial)



def _label_orders(
    op: str, typed: Sequence[Operand], operands: Sequence[tuple[str, PartitionSpec | None, int]],
    args: Mapping[str, object],
) -> Violation | None:
    """Operands that cut one einsum label with the same axes in different orders (the per-axis types agree)."""
    terms = einsum_terms(op, typed, args)
    if terms is None:
        return None
    cuts: dict[str, set[tuple[Factor, ...]]] = {}
    for term, (_, spec, _) in zip(terms[0], operands):
        for dim, label in enumerate(term):
            if spec is not None and spec.factors(dim):
                cuts.setdefault(label, set()).add(spec.factors(dim))
    for label, orders in cuts.items():
        if len(orders) > 1:
            shown = " and ".join(sorted(map(str, orders)))
            reason = (f"the operands cut dim {label!r} over the same axes in different orders ({shown}), so the "
                      f"ranks' pieces do not meet; redistribute_spec one of them to the other's order")
            return Violation(Code.GLOBAL, None, reason)
    return None
