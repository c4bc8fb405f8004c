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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final, TypeAlias

from spmd_types.typesystem.collectives import Endpoint, fix
from spmd_types.typesystem.join import Operand, OpOutcome, apply_op
from spmd_types.typesystem.local_types import WEAK, AxisType, I, P, R, Shard, V
from spmd_types.typesystem.ops import canonical_param, lookup
from spmd_types.typesystem.partial_outputs import PARTIAL_OUTPUT_FUNCTIONS, check_partial_output
from spmd_types.typesystem.partition_spec import Factor, PartitionSpec, spec_type
from spmd_types.typesystem.shard_dims import POINTWISE_OPS, SPLITTING_OPS, LayoutCall, layout_rank, result_dim
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Code, Violation

__all__ = [
    "GLOBAL_VALUE_TYPES",
    "EntryOrders",
    "check_global_op",
    "einsum_terms",
    "global_annotation_violation",
    "global_call_violation",
    "global_cast_violation",
    "order_violation",
    "propagate",
    "result_orders",
    "result_rank",
    "spec_orders",
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

EntryOrders: TypeAlias = tuple[tuple[str, ...], ...]
"""The axes of each entry of two or more axes, in the entry's order (major first): what per-axis types forget."""

_RANKS_TRIED: Final = 4
"""Ranks tried for an operand whose rank is not known, where a rule depends on it."""

_FIXED_RANKS: Final = {"torch.mm": (2, 2), "torch.Tensor.mm": (2, 2), "torch.bmm": (3, 3), "torch.Tensor.bmm": (3, 3)}


def global_annotation_violation(declared: SpmdType) -> Violation | None:
    """Why a declared type has no global meaning (``V`` on an axis), or ``None``."""
    axis = _varying_axis(declared)
    if axis is None:
        return None
    reason = (f"V has no meaning in global SPMD (it does not say how the ranks' data assemble into one "
              f"tensor); declare {GLOBAL_VALUE_TYPES} on {axis!r} (S[\"{axis}\", dim] or a PartitionSpec), "
              f"or check this function in local SPMD")
    return Violation(Code.GLOBAL, axis, reason, ("V",))


def _varying_axis(t: SpmdType) -> str | None:
    return next((axis for axis, kind in t.items() if kind is V), None)


def global_call_violation(callee: str, returned: SpmdType) -> Violation | None:
    """Why the value a call of ``callee`` returns cannot enter a global function (``V`` on an axis), or ``None``.

    ``returned`` is the callee's declared return type: a local function may
    return per-rank data, which has no global meaning; the value must be
    declared global where the local function hands it over.
    """
    axis = _varying_axis(returned)
    if axis is None:
        return None
    reason = (f"it returns V on {axis!r}, per-rank data with no meaning in a global function (V does not say how "
              f"the ranks' data assemble into one tensor); declare {callee}'s return value {GLOBAL_VALUE_TYPES} on "
              f"{axis!r}: S[\"{axis}\", dim] where its ranks hold pieces of one tensor, P[\"{axis}\"] where they "
              f"hold summands (reinterpret(..., \"{axis}\", src=V, dst=P) in it), R[\"{axis}\"] after a collective "
              f"in it that replicates the value")
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


def result_rank(op: str, operands: Sequence[Operand], args: Mapping[str, object]) -> int | None:
    """The rank of op ``op``'s result, where the operands' ranks and the literal arguments decide it; else ``None``.

    Contractions, sums and broadcasting ops: the output of their einsum
    reading (:func:`einsum_terms`); layout ops (transposes, ``unsqueeze``,
    reductions, ``view`` with literal sizes, indexing with literal basic
    indices, ...): :func:`~spmd_types.typesystem.shard_dims.layout_rank` on
    the first operand.  This is how global mode knows the ranks of values
    computed from spec-declared ones, which its einsum reading of later ops needs.
    """
    terms = einsum_terms(op, operands, args)
    if terms is not None:
        return len(terms[1])
    ranks = tuple(o.ndim if o.ndim is not None else len(o.shape) if o.shape is not None else None for o in operands)
    if not ranks or None in ranks:
        return None
    return layout_rank(op, LayoutCall(args, tuple(o.param for o in operands), ranks,
                                      tuple(o.shape for o in operands)))


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
    number) and rank; ``out_ndim`` is the result's rank.  The result is the
    local rules' result, checked by :func:`check_global_op`, with each output
    dim cut as the operand entry it comes from, factors and block counts
    alike: an op that carries a dim index by index (pointwise ops, moves of
    dims, ops along other dims, a contraction's batch and free dims, the
    outer dim of a ``flatten``) carries a strided entry with it.  A sum over
    a strided dim is a pending sum as over a plain one (each rank sums its
    own indices).  An op that may split a cut dim, strided or not, into
    several (:data:`~spmd_types.typesystem.shard_dims.SPLITTING_OPS`) is an
    error: which result dims its pieces land on depends on the sizes of the
    axes, which a spec does not know.
    """
    args = dict(args or {})
    named = [axis for _, spec, _ in operands if spec is not None for axis in (*spec.axes, *spec.partial)]
    typed = [Operand(param, spec_type(spec, named) if spec is not None else SpmdType({}, WEAK), ndim)
             for param, spec, ndim in operands]
    split = _split_cut_dim(op, operands, args)
    if split is not None:
        return (split,)
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
        sources = {spec.factors(d) for _, spec, _ in operands if spec is not None
                   for d in range(len(spec)) if set(axes) & set(spec.factors(d))}
        if len(sources) != 1 or {f for f in next(iter(sources)) if isinstance(f, str)} != set(axes):
            reason = (f"the operands cut dim {dim} of the result with the axes {axes} in different groupings, "
                      f"orders or block counts")
            return (Violation(Code.GLOBAL, None, reason),)
        ordered[dim] = sources.pop()
    partial = tuple(axis for axis in dict.fromkeys(named) if result.get(axis) is P)
    return PartitionSpec(*(ordered.get(d) or None for d in range(out_ndim)), partial=partial)


def _split_cut_dim(
    op: str, operands: Sequence[tuple[str, PartitionSpec | None, int]], args: Mapping[str, object]
) -> Violation | None:
    """An op that may split a cut dim into several dims (see :func:`propagate`)."""
    if op not in SPLITTING_OPS:
        return None
    split = args.get("dim") if op.endswith(".unflatten") else None
    for _, spec, ndim in operands:
        if spec is None:
            continue
        for dim in range(len(spec)):
            factors = spec.factors(dim)
            if not factors or (isinstance(split, int) and not isinstance(split, bool) and split % max(ndim, 1) != dim):
                continue
            strided = any(isinstance(f, int) for f in factors)
            what = (f"has the strided entry {factors} (each rank holds one piece of each block)" if strided
                    else f"is cut by {spec[dim]!r}")
            reason = (f"dim {dim} {what}, and {op} may split it into several dims: which of them the pieces "
                      f"land on depends on the sizes of the axes and blocks; gather the dim first, or "
                      f"redistribute_spec the tensor to a spec that does not cut it")
            axis = next(f for f in factors if isinstance(f, str))
            return Violation(Code.GLOBAL, axis, reason)
    return None


def _label_orders(
    op: str, typed: Sequence[Operand], operands: Sequence[tuple[str, PartitionSpec | None, int]],
    args: Mapping[str, object],
) -> Violation | None:
    """Operands that cut one einsum label with the same axes in different orders or block counts (the per-axis
    types agree)."""
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
            return _different_orders(f"dim {label!r}", orders, "orders or block counts", "spec")
    return None


def _different_orders(
    what: str, orders: Iterable[tuple[Factor, ...]], differ: str = "orders", target: str = "order"
) -> Violation:
    """Operands that cut ``what`` with the same axes in different ``differ`` (orders, or block counts too)."""
    shown = " and ".join(sorted(map(str, orders)))
    reason = (f"the operands cut {what} over the same axes in different {differ} ({shown}), so the ranks' pieces "
              f"do not meet; redistribute_spec one of them to the other's {target}")
    return Violation(Code.GLOBAL, None, reason)


def spec_orders(spec: PartitionSpec) -> EntryOrders:
    """The axes of each of ``spec``'s entries that has two or more, in order (``(("tp", "dp"),)`` for
    ``PartitionSpec(("tp", "dp"), None)``)."""
    found = (tuple(f for f in spec.factors(dim) if isinstance(f, str)) for dim in range(len(spec)))
    return tuple(axes for axes in found if len(axes) > 1)


def result_orders(operands: Sequence[EntryOrders], result: SpmdType) -> EntryOrders | Violation:
    """The entry orders of an op's result from its operands' (``operands``), given the result's per-axis types.

    An op moves a dim whole, so an entry keeps its order wherever its axes
    still cut one dim of the result (every one ``S`` of the same dim); it is
    forgotten where they do not.  Operands whose entries order the same axes
    differently meet only where one dim is cut by both (any other meeting is
    a violation of the per-axis rules), and there the ranks' pieces are
    different parts of it: a violation.
    """
    kept: dict[frozenset[str], tuple[str, ...]] = {}
    for orders in operands:
        for axes in orders:
            for other in kept.values():
                common = [axis for axis in axes if axis in other]
                if len(common) > 1 and common != [axis for axis in other if axis in axes]:
                    return _different_orders("a dim", (axes, other))
            kept.setdefault(frozenset(axes), axes)
    return tuple(axes for axes in kept.values() if _cut_together(result, axes))


def _cut_together(result: SpmdType, axes: tuple[str, ...]) -> bool:
    kinds = {result.get(axis) for axis in axes}
    return len(kinds) == 1 and isinstance(next(iter(kinds)), Shard)


def order_violation(declared: EntryOrders, have: EntryOrders, src: bool = False) -> Violation | None:
    """Why a value whose entries are ordered ``have`` does not fit a declaration ordered ``declared``, or ``None``.

    The per-axis types of ``("dp", "tp")`` and ``("tp", "dp")`` agree, but each
    rank holds a different piece of the dim: the value must be moved
    (``redistribute_spec``, one ppermute) or the declaration must say its order.
    With ``src``, the declaration is the ``src`` spec of a ``redistribute_spec``,
    which must say how the value is laid out.
    """
    for want in declared:
        for axes in have:
            common = [axis for axis in axes if axis in want]
            if len(common) > 1 and common != [axis for axis in want if axis in axes]:
                fix = ("write src with the order the value has: the planner moves the pieces from there" if src
                       else "redistribute_spec the value to the declared order (a ppermute), or declare the order "
                            "it has")
                reason = (f"the value's dim is cut over {axes} in this order, and "
                          f"{'src' if src else 'the declaration'} says {want}: the same per-axis types, but each "
                          f"rank holds a different piece of the dim; {fix}")
                return Violation(Code.GLOBAL, common[0], reason, (str(axes), str(want)))
    return None
