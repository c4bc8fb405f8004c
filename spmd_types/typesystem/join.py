"""The per-axis join: the result type of an ordinary op, or why there is none.

:func:`apply_op` takes an op's :class:`~spmd_types.typesystem.ops.OpRule` and
the SPMD types of its operands and computes, on every mesh axis independently:

======================================================  ======================
operands on the axis                                    result
======================================================  ======================
any operand unknown                                     unknown, no error
only R and constants                                    R
only I and constants                                    I
R, V/S(i) and constants, at least one V/S(i)            V
I together with R, V or P                               error (``spmd-mix``)
P together with V                                       error (``spmd-mix``)
P through a non-linear op or as a non-linear argument   error (``spmd-partial``)
P as a selector (index, mask, condition)                error (``spmd-partial``)
P in a sum whose every non-zero summand has one P
factor, other factors R or constants                    P
P in a sum with a summand without a P factor            error (``spmd-partial``)
two P factors in one product                            error (``spmd-partial``)
======================================================  ======================

Constants are ``weak`` (fits R, I and V) or ``zero`` (fits anything, and a
product with a zero factor is a zero summand).  Selectors carry no gradient,
so an ``R`` or ``I`` selector acts as a constant; a ``V`` one joins as ``V``.  :func:`check_fits` decides
whether a value of one type may stand where another is declared or written.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from spmd_types.typesystem.collectives import fixes_between
from spmd_types.typesystem.local_types import (
    WEAK,
    ZERO,
    AxisType,
    Constant,
    I,
    LocalType,
    P,
    R,
    Shard,
    V,
    is_varying,
)
from spmd_types.typesystem.ops import OpRule, Result, canonical_param
from spmd_types.typesystem.shard_dims import LayoutCall, result_dim, same_dim
from spmd_types.typesystem.spmd_type import UNKNOWN, SpmdType
from spmd_types.typesystem.violations import Code, Fix, Violation

__all__ = [
    "OpOutcome", "Operand", "apply_op", "check_fits", "check_fits_one_of", "check_group", "fits", "merge_paths",
    "paths_disagree", "writes_through", "written_buffer",
]


class Operand:
    """A value passed to an op: the argument it was passed as, and its SPMD type.

    A Python scalar is ``SpmdType(default=WEAK)`` (``ZERO`` for a literal 0).
    A sequence argument such as ``cat(tensors)`` gives one operand per element.
    ``ndim`` and ``shape`` are its rank (0 for a Python number) and local
    shape where known; they decide where a shard's dim goes (see
    :mod:`~spmd_types.typesystem.shard_dims`).

    Immutable, compared and hashed by its four fields.  A plain class, not a
    frozen dataclass: the plugin builds and compares operands at every checked
    call, and a dataclass's generated ``__init__``, ``__eq__`` and ``__hash__``
    run as Python even where mypyc compiles this module.
    """

    __slots__ = ("ndim", "param", "shape", "type")

    param: str
    type: SpmdType
    ndim: int | None
    shape: tuple[int, ...] | None

    def __init__(self, param: str, type: SpmdType, ndim: int | None = None,
                 shape: tuple[int, ...] | None = None) -> None:
        object.__setattr__(self, "param", param)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "ndim", ndim)
        object.__setattr__(self, "shape", shape)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("Operand is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Operand):
            return NotImplemented
        return (self.param == other.param and self.type == other.type and self.ndim == other.ndim
                and self.shape == other.shape)

    def __hash__(self) -> int:
        return hash((self.param, self.type, self.ndim, self.shape))

    def __repr__(self) -> str:
        return f"Operand(param={self.param!r}, type={self.type!r}, ndim={self.ndim!r}, shape={self.shape!r})"


@dataclass(frozen=True)
class OpOutcome:
    """The result type of an op and the violations found on its way.

    On an axis with a violation the result is unknown, so that one mistake is
    reported once and not again at every later use.
    """

    result: SpmdType
    violations: tuple[Violation, ...] = ()


@dataclass(frozen=True)
class _Roles:
    """How an op uses each operand: which products it forms, which it is not linear in."""

    products: tuple[tuple[int, ...], ...]
    nonlinear: tuple[int, ...]
    selectors: tuple[int, ...]
    linear_op: bool

    def without(self, k: int) -> _Roles:
        def drop(indices: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(i for i in indices if i != k)

        products = tuple(p for p in (drop(p) for p in self.products) if p)
        return _Roles(products, drop(self.nonlinear), drop(self.selectors), self.linear_op)

    @property
    def members(self) -> tuple[int, ...]:
        return tuple(sorted({i for p in self.products for i in p} | {*self.nonlinear, *self.selectors}))


def _roles(rule: OpRule, params: Sequence[str], passed: Collection[str]) -> _Roles:
    linear_op = bool(rule.terms) and not any(name in passed for name in rule.nonlinear_if) and (
        not rule.linear_only_with or any(name in passed for name in rule.linear_only_with))
    selectors = tuple(k for k, name in enumerate(params) if name in rule.selectors)
    active = [k for k, name in enumerate(params) if name not in rule.ignored and k not in selectors]
    if not linear_op:
        return _Roles((), tuple(active), selectors, False)
    products: list[tuple[int, ...]] = []
    placed: set[int] = set()
    for term in rule.terms:
        members = tuple(k for k in active if params[k] in term)
        placed.update(members)
        if len(term) == 1 and not rule.sequence_product:
            products.extend((k,) for k in members)  # each element of a sequence is a summand
        elif members:
            products.append(members)
    # Arguments the rule does not place in a product are taken as non-linear.
    nonlinear = tuple(k for k in active if k not in placed)
    return _Roles(tuple(products), nonlinear, selectors, True)


def apply_op(
    rule: OpRule,
    operands: Sequence[Operand],
    passed: Collection[str] = (),
    *,
    autograd: bool = True,
    op: str | None = None,
    args: Mapping[str, object] | None = None,
) -> OpOutcome:
    """The result type of an op with rule ``rule`` applied to ``operands``.

    ``passed`` names the non-tensor arguments given explicitly (``rounding_mode``),
    which can make an op non-linear.  For in-place ops the result must also fit
    the type of the ``input`` operand, which it keeps.

    Where the result varies on an axis on which operands are shards ``S(i)``,
    the op's public name ``op`` and its non-tensor arguments ``args`` (see
    :class:`~spmd_types.typesystem.shard_dims.LayoutCall`) say which dim the
    result is sharded on; without them, or where the layout rules cannot
    tell, the result is ``V``.

    Where no autograd runs (``autograd=False``: under ``torch.no_grad()``, in a
    custom autograd Function's ``forward`` and ``backward``) only the rules on
    values hold: R and I coincide (both are weak constants, as detached values
    are), so I mixes with V, while a pending sum through a non-linear op is
    still wrong.  The result carries no gradient either.
    """
    params = [canonical_param(op.param) for op in operands]
    types = [op.type for op in operands]
    joined = types if autograd else [_detached(t) for t in types]
    violations: tuple[Violation, ...] = ()
    if rule.result is Result.ZERO:
        result = SpmdType(default=ZERO)
    elif rule.result is Result.WEAK:
        result, violations = _made_from_numbers(rule, params, types)
    elif rule.result is Result.FRESH:
        result = UNKNOWN
    elif rule.result is Result.COPY and "data" not in params:
        result, violations = _made_from_numbers(rule, params, types)  # made from a Python value
    else:
        roles = _roles(rule, params, passed)
        result, violations = _join(roles, joined)
        violations += _side_effects(rule, params, types, passed, result)
        if op is not None:
            result = _follow_shards(op, args or {}, roles, operands, result)
        if rule.result in (Result.DETACH, Result.COPY) or not autograd:
            result = _detached(result)
        elif rule.result is Result.TRAINABLE:
            result = _variable(result)
    if rule.inplace and "input" in params:
        target = types[params.index("input")]
        if _constant(target):
            # A buffer of constants written in place stays what it was made as (see written_buffer): a
            # collective on what is written cannot make it fit, computing out of place can.
            violations = tuple(replace(v, fixes=(), reason=f"{v.reason}, written into a buffer of constants: "
                                                           "compute it out of place") for v in violations)
        violations += check_fits(result, target, code=Code.INPLACE)
        result = target
    return OpOutcome(result, violations)


def _side_effects(rule: OpRule, params: Sequence[str], types: Sequence[SpmdType], passed: Collection[str],
                  result: SpmdType) -> tuple[Violation, ...]:
    """What an op does besides its result: statistics it writes (``updates``), indices it counts (``counts_when``)."""
    found: list[Violation] = []
    if rule.updates and rule.updates_when in passed:
        for name, t in zip(params, types):
            if name in rule.updates:
                found += [replace(v, fixes=(), reason=f"{name} is updated in place with statistics of type "
                                                      f"{_spelled(result.get(v.axis) if v.axis else None)}, "
                                                      "this rank's own: compute them over every rank's data, or "
                                                      "keep one running statistic per rank")
                          for v in check_fits(_detached(result), t, code=Code.INPLACE)]
    if rule.counts_when and rule.counts_when in passed:
        for name, t in zip(params, types):
            if name in rule.selectors:
                found += [Violation(Code.MIX, axis, f"{rule.counts_when} counts this rank's indices ({name}), "
                                                    f"{kind!r} on this axis: each rank scales the gradient by its "
                                                    "own counts, not the whole batch's",
                                    types=(repr(kind),))
                          for axis, kind in t.items() if is_varying(kind)]
    return tuple(found)


def _spelled(kind: AxisType | None) -> str:
    return repr(kind) if kind is not None else "unknown"


def _constant(t: SpmdType) -> bool:
    return isinstance(t.default, Constant) and all(isinstance(kind, Constant) for _, kind in t.items())


def _join(roles: _Roles, types: Sequence[SpmdType]) -> tuple[SpmdType, tuple[Violation, ...]]:
    members = roles.members
    axes = sorted({axis for k in members for axis in types[k].axes})
    result: dict[str, AxisType] = {}
    violations: list[Violation] = []
    for axis in axes:
        kinds = [types[k].get(axis) for k in range(len(types))]
        joined, violation = _join_axis(axis, roles, kinds)
        if violation is not None:
            violations.append(violation)
        elif joined is not None:
            result[axis] = joined
    default = None
    if members and all(types[k].default is not None for k in members):
        defaults = [types[k].default for k in range(len(types))]
        joined_default, problem = _join_axis("*", roles, defaults)
        if problem is None and isinstance(joined_default, Constant):
            default = joined_default
    return SpmdType(result, default), tuple(violations)


def _made_from_numbers(rule: OpRule, params: Sequence[str], types: Sequence[SpmdType]) -> tuple[
        SpmdType, tuple[Violation, ...]]:
    """A constant made from Python numbers (``arange(end)``, ``full(size, value)``): weak, unless a number is not.

    A number that depends on the rank (:mod:`~spmd_types.typesystem.numbers`)
    makes the values differ by rank: ``V`` on its axes.  The op is taken as
    not linear in it: a pending sum there is an error.
    """
    sources = [t for name, t in zip(params, types) if name not in rule.ignored]
    if not sources:
        return SpmdType(default=WEAK), ()
    return _join(_Roles((), tuple(range(len(sources))), (), False), sources)


def _follow_shards(
    op: str, args: Mapping[str, object], roles: _Roles, operands: Sequence[Operand], result: SpmdType
) -> SpmdType:
    """``result`` with ``V`` made ``S(d)`` on each axis where the operands' shards say where dim ``d`` is.

    An op that scrambles the sharded dim (``flatten`` making it an inner
    factor) leaves per-rank data that is still correct to compute with (a
    per-token loss over the flattened pieces), only not a shard: ``V``.
    """
    call: LayoutCall | None = None
    for axis, kind in result.items():
        if kind is not V:
            continue
        kinds = {k: operands[k].type.get(axis) for k in roles.members}
        if any(t is V for t in kinds.values()):
            continue  # per-rank data assembled in no known way
        sharded = {k: t.dim for k, t in kinds.items() if isinstance(t, Shard)}
        if not sharded:
            continue
        if call is None:
            call = LayoutCall(args, tuple(o.param for o in operands), tuple(_rank(o) for o in operands),
                              tuple(o.shape for o in operands))
        dim = result_dim(op, sharded, call)
        if isinstance(dim, int):
            result = result.with_axis(axis, Shard(dim))
    return result


def _rank(operand: Operand) -> int | None:
    return len(operand.shape) if operand.shape is not None else operand.ndim


def _detached(t: SpmdType) -> SpmdType:
    """Without a gradient, R and I coincide: both become weak constants."""
    return SpmdType(
        {axis: WEAK if kind in (R, I) else kind for axis, kind in t.items()}, t.default
    )


def _variable(t: SpmdType) -> SpmdType:
    """``t`` as data that will change (a parameter): a constant is no longer known to stay one."""
    return SpmdType({axis: kind for axis, kind in t.items() if not isinstance(kind, Constant)})


def _join_axis(
    axis: str, roles: _Roles, kinds: Sequence[AxisType | None]
) -> tuple[AxisType | None, Violation | None]:
    """Join the operand types ``kinds`` on one axis; see the module table.

    Returns ``(type, None)``, ``(None, None)`` when the result is unknown, or
    ``(None, violation)``.
    """
    joined, violation = _join_axis_raw(axis, roles, kinds)
    if violation is None:
        return joined, None
    return None, _with_fixes(violation, axis, roles, kinds)


def _join_axis_raw(
    axis: str, roles: _Roles, kinds: Sequence[AxisType | None]
) -> tuple[AxisType | None, Violation | None]:
    members = roles.members
    if any(kinds[k] is None for k in members):
        return None, _partial_where_not_linear(axis, roles, kinds)
    present: list[AxisType] = []
    for k in members:
        kind = kinds[k]
        assert kind is not None
        if k in roles.selectors and kind in (R, I):
            kind = WEAK  # a replicated selector carries no gradient: R and I coincide
        present.append(kind)
    for k in roles.selectors:
        if kinds[k] is P:
            return None, _violation(
                Code.PARTIAL, axis, "P (a pending sum) as an index, mask, condition or comparison operand", kinds, (k,)
            )
    tensors = [kind for kind in present if not isinstance(kind, Constant)]
    has_p = P in tensors
    has_i = I in tensors
    varying = [kind for kind in tensors if is_varying(kind)]
    if has_i and (len(set(tensors)) > 1):
        others = sorted({kind.code for kind in tensors if kind is not I})
        return None, _violation(Code.MIX, axis, f"I does not mix with {', '.join(others)}", kinds, members)
    if has_p and varying:
        return None, _violation(
            Code.MIX, axis, "P (a pending sum) does not mix with V (per-rank data)", kinds, members
        )
    if has_p:
        return _join_partial(axis, roles, kinds)
    if varying:
        return V, None
    if tensors:
        return tensors[0], None  # all R, or all I
    # Zeros stay zero through a linear op only: exp(0), cos(0) and sigmoid(0) are not zero.
    return (ZERO if roles.linear_op and all(kind is ZERO for kind in present) else WEAK), None


def _partial_where_not_linear(axis: str, roles: _Roles, kinds: Sequence[AxisType | None]) -> Violation | None:
    """A P operand in an argument the op is not linear in: wrong whatever the other operands are."""
    if not roles.linear_op and P in (kinds[k] for k in roles.members):
        return _violation(Code.PARTIAL, axis, "P (a pending sum) through a non-linear op", kinds, roles.members)
    for k in roles.nonlinear:
        if kinds[k] is P:
            return _violation(
                Code.PARTIAL, axis, "P (a pending sum) as an argument the op is not linear in", kinds, (k,)
            )
    return None


def _join_partial(
    axis: str, roles: _Roles, kinds: Sequence[AxisType | None]
) -> tuple[AxisType | None, Violation | None]:
    """Join on an axis where a P operand (and no V or I) is present."""
    not_linear = _partial_where_not_linear(axis, roles, kinds)
    if not_linear is not None:
        return None, not_linear
    for product in roles.products:
        factors = [kinds[k] for k in product]
        if ZERO in factors:
            continue  # a zero summand adds nothing, whatever its type
        p_count = factors.count(P)
        if p_count > 1:
            return None, _violation(
                Code.PARTIAL, axis, "a product of two P factors (a product of sums is not the sum of products)",
                kinds, product,
            )
        if p_count == 0:
            spelled = " * ".join(kind.code for kind in factors if kind is not None)
            return None, _violation(
                Code.PARTIAL, axis,
                f"P plus a non-partial term ({spelled}), which would be added once per rank",
                kinds, roles.members,
            )
    return P, None


def _violation(
    code: Code, axis: str, reason: str, kinds: Sequence[AxisType | None], involved: Sequence[int]
) -> Violation:
    codes = tuple(kind.code for k in involved if (kind := kinds[k]) is not None)
    return Violation(code, axis, reason, codes, tuple(involved))


# Semantics-preserving casts worth suggesting on one operand, in order of preference.
# (R -> V would slice and V -> R gather: they change what the op computes, so they
# are not offered as fixes for an op; they are offered at boundaries.)
_CANDIDATE_CASTS: Final[tuple[tuple[LocalType, LocalType], ...]] = (
    (I, R), (P, R), (R, P), (P, I), (I, P),
)


def _with_fixes(
    violation: Violation, axis: str, roles: _Roles, kinds: Sequence[AxisType | None]
) -> Violation:
    """``violation`` with the casts that would make the join succeed.

    A cast of one operand is preferred; where none is enough, the same cast of
    every operand of one type (the weight and the bias of a linear layer, say).
    A cast must keep what the other operands make of the result: it may not
    turn a varying result replicated, for instance.
    """
    fixes: list[Fix] = []
    for k in roles.members:
        reduced = False
        for have, want in _CANDIDATE_CASTS:
            if kinds[k] is not have or (reduced and have is P):
                continue  # one reduction of an operand is enough to suggest
            if _cast_works(axis, roles, kinds, (k,), want):
                fixes.extend(fixes_between(have, want, axis, operands=(k,))[:1])
                reduced = reduced or have is P
    if not fixes:
        for have, want in _CANDIDATE_CASTS:
            group = tuple(k for k in roles.members if kinds[k] is have)
            if len(group) > 1 and _cast_works(axis, roles, kinds, group, want):
                fixes.extend(fixes_between(have, want, axis, operands=group)[:1])
    if not fixes:
        return violation
    # Making a non-partial term partial (mask it to one rank) comes first: it is right wherever the sum is
    # reduced, later or never.  Reducing the P operand here is right only where nothing reduces the sum later
    # (a bias added before the row-parallel all-reduce needs the bias moved after it, not a second reduction).
    fixes.sort(key=lambda f: not f.call.endswith("dst=P)"))
    return replace(violation, fixes=tuple(fixes))


def _cast_works(
    axis: str, roles: _Roles, kinds: Sequence[AxisType | None], cast: tuple[int, ...], want: AxisType
) -> bool:
    """Whether casting the operands ``cast`` to ``want`` makes the join succeed, as the others would have it."""
    rest = roles
    for k in cast:
        rest = rest.without(k)
    natural = None
    if rest.members:
        natural, problem = _join_axis_raw(axis, rest, kinds)
        if problem is not None or isinstance(natural, Constant):
            natural = None  # nothing to preserve: any successful cast will do
    trial = [want if k in cast else kind for k, kind in enumerate(kinds)]
    joined, problem = _join_axis_raw(axis, roles, trial)
    return problem is None and (natural is None or joined == natural)


# -- declarations, assignments, writes -----------------------------------------------


def fits(value: AxisType | None, declared: AxisType | None) -> bool:
    """Whether a value of type ``value`` may stand where ``declared`` is expected.

    Unknown on either side fits; so do equal types, ``V`` and ``S(i)`` either
    way, zero anywhere, and weak constants anywhere but ``P``.  ``S(i)`` and
    ``S(j)`` fit when they may name the same dim: ``i == j``, or one counts
    from the first dim and the other from the last (the rank decides).
    """
    if value is None or declared is None or value == declared or value is ZERO:
        return True
    if value is WEAK:
        return declared is not P
    if isinstance(declared, Constant):
        return False
    if isinstance(value, Shard) and isinstance(declared, Shard):
        return same_dim(value.dim, declared.dim) is not False  # S(-1) and S(2): the same dim in a 3-D tensor
    return is_varying(value) and is_varying(declared)


def check_fits(value: SpmdType, declared: SpmdType, code: Code = Code.BOUNDARY) -> tuple[Violation, ...]:
    """One violation per axis on which ``value`` does not fit ``declared``.

    Each carries the casts or collectives that would turn the value's type
    into the declared one, except ``V`` where ``R`` or ``I`` is declared: the
    ranks' data may be summands (a dropped reduction) or pieces (a dropped
    gather), and a fix for the wrong reading type-checks and computes the
    wrong value, so the message names both and offers none.
    """
    violations = []
    for axis in sorted(set(value.axes) | set(declared.axes)):
        have, want = value.get(axis), declared.get(axis)
        if fits(have, want) or have is None or want is None:
            continue
        fixes: tuple[Fix, ...] = ()
        if code is Code.INPLACE:
            # The fix is to compute out of place; a cast of the target would not help.
            reason = f"writes a value of type {have.code} into a tensor of type {want.code}; compute it out of place"
        elif have is V and want in (R, I):
            # Two readings, two different fixes: which one is right, only the code's author knows.
            reason = (f"expected {want.code}, got V (per-rank data): all_reduce it if the ranks hold summands of the "
                      f"value, all_gather it if they hold pieces of it")
        else:
            reason = f"expected {want.code}, got {have.code}"
            if isinstance(have, (LocalType, Shard)) and isinstance(want, (LocalType, Shard)):
                fixes = fixes_between(have, want, axis)
        violations.append(Violation(code, axis, reason, (have.code, want.code), (), fixes))
    return tuple(violations)


def check_fits_one_of(value: SpmdType, allowed: Sequence[SpmdType]) -> tuple[Violation, ...]:
    """Whether ``value`` may bind a type variable restricted to the types ``allowed``.

    It may when it fits one of them (:func:`check_fits`: on the axes both
    know).  Otherwise one violation per axis on which it fits none of the
    types listed there, or, when each axis alone is fine but no listed type
    fits as a whole, the first listed type's violations.
    """
    if not allowed or any(not check_fits(value, option) for option in allowed):
        return ()
    violations = []
    for axis in sorted({axis for option in allowed for axis in option.axes}):
        have = value.get(axis)
        listed = [option.get(axis) for option in allowed if option.get(axis) is not None]
        if have is None or any(fits(have, want) for want in listed):
            continue
        names = ", ".join(dict.fromkeys(want.code for want in listed if want is not None))
        reason = f"expected one of {names}, got {have.code}"
        violations.append(Violation(Code.BOUNDARY, axis, reason, (have.code, *names.split(", ")), (), ()))
    return tuple(violations) or check_fits(value, allowed[0])


def check_group(value_axis: str, declared_axis: str) -> tuple[Violation, ...]:
    """A process group of mesh axis ``value_axis`` passed where the group of ``declared_axis`` is declared."""
    if value_axis == declared_axis:
        return ()
    reason = f"expected the process group of axis {declared_axis!r}, got the one of {value_axis!r}"
    return (Violation(Code.AXIS, None, reason),)


# -- values that depend on the path taken ---------------------------------------------


def writes_through(rule: OpRule, operands: Sequence[Operand], source: SpmdType, *, autograd: bool = True
                   ) -> tuple[Violation, ...]:
    """The violations of in-place op ``rule`` whose target shares its storage with a tensor of type ``source``.

    ``y = reinterpret(x, "tp", src=R, dst=V)`` is ``x`` itself (where
    ``convert`` copies): writing into ``y`` writes into ``x`` too, so what is
    written must fit ``x``'s type as well (``y += v`` would leave ``x``
    declared ``R`` but different on every rank).  The target's own data is
    the source's, so it takes part as ``source`` (``y.mul_(2)`` writes ``2 x``).
    """
    as_source = [Operand(o.param, source, o.ndim, o.shape) if canonical_param(o.param) == "input" else o
                 for o in operands]
    written = apply_op(replace(rule, inplace=False), as_source, autograd=autograd).result
    return tuple(replace(v, reason=f"{v.reason} (it is the input of the reinterpret it came from)",
                         fixes=())
                 for v in check_fits(written, source, code=Code.INPLACE))


def written_buffer(t: SpmdType) -> SpmdType:
    """The type of a buffer made as a constant of type ``t`` that its function then writes in place.

    mypy keeps one type for the variable, whatever is written into it later.
    A buffer of zeros (``acc = torch.zeros(())``, ``acc += loss``) holds what is
    written, which may be anything a zero fits, so it is unknown.  A buffer of
    other constants (``torch.ones``, ``torch.tensor(1.0)``) keeps their type,
    which what is written must fit: a pending sum added to a one would count
    the one once per rank.
    """
    return UNKNOWN if t.default is ZERO and all(kind is ZERO for _, kind in t.items()) else t


def merge_paths(types: Collection[SpmdType]) -> SpmdType | None:
    """The type of a value that has one of ``types``, depending on the path taken.

    ``None`` if the paths disagree.  Per axis: unknown on one path is unknown;
    a constant that fits the tensor type of the other paths adds nothing (an
    accumulator that starts at ``torch.zeros(())``); ``V`` and ``S(i)`` are all
    varying and merge to ``V``; any other difference is a disagreement.
    """
    merged: dict[str, AxisType] = {}
    for axis in sorted({axis for t in types for axis in t.axes}):
        agree, kind = _merge_axis([t.get(axis) for t in types])
        if not agree:
            return None
        if kind is not None:
            merged[axis] = kind
    _, default = _merge_axis([t.default for t in types])
    return SpmdType(merged, default if isinstance(default, Constant) else None)


def _merge_axis(kinds: Sequence[AxisType | None]) -> tuple[bool, AxisType | None]:
    """Whether the paths agree on one axis, and the type they agree on (``None``: unknown)."""
    if any(kind is None for kind in kinds):
        return True, None
    tensors = {kind for kind in kinds if kind is not None and not isinstance(kind, Constant)}
    constants = [kind for kind in kinds if isinstance(kind, Constant)]
    if not tensors:
        return True, WEAK if WEAK in constants else ZERO
    if len(tensors) > 1:
        if not all(is_varying(kind) for kind in tensors):
            return False, None
        tensors = {V}
    (kind,) = tensors
    return all(fits(constant, kind) for constant in constants), kind


def paths_disagree(types: Collection[SpmdType]) -> Violation:
    """A value that has one of ``types`` depending on the path taken, where :func:`merge_paths` finds no type."""
    spelled = " or ".join(t.describe() for t in types)
    reason = (f"has SPMD type {spelled} depending on the branch taken (or the loop iteration); "
              f"make the branches agree, or declare it with one type")
    return Violation(Code.BRANCH, None, reason)
