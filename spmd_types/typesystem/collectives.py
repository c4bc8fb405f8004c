"""Collectives and casts: which ``src``/``dst`` each call accepts, and their backwards.

Every way to change a tensor's type on one mesh axis is a *primitive
transition* ``call(src -> dst)``, listed here with the transition its backward
performs.  The backward of ``src -> dst`` always goes from the
gradient type of ``dst`` to the gradient type of ``src``, so the table only has
to say *which call* the backward is; :func:`backward` derives its types.

User-facing calls (``all_reduce(x, axis, *, src=P, dst)`` and so on) route each
allowed ``(src, dst)`` pair to a short sequence of primitives
(``all_reduce(src=V)`` is ``reinterpret(V -> P)`` then ``all_reduce(P -> dst)``).
The runtime library runs exactly these sequences, forward and backward, and
the plugin uses the same table to check calls and to suggest fixes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, TypeAlias

from spmd_types.typesystem.local_types import (
    LOCAL_TYPES,
    WEAK,
    ZERO,
    AxisType,
    I,
    LocalType,
    P,
    R,
    Shard,
    V,
    gradient_type,
    is_varying,
)
from spmd_types.typesystem.memo import bounded_put
from spmd_types.typesystem.shard_dims import same_dim
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Code, Fix, Violation

__all__ = [
    "CALLS",
    "NO_GRADIENT_REDUCTIONS",
    "CallOutcome",
    "CallSpec",
    "Endpoint",
    "Transition",
    "backward",
    "backward_route",
    "check_call",
    "check_call_on_axes",
    "cost",
    "effects",
    "endpoint_kind",
    "fix",
    "fixes_between",
    "flattened_axes",
    "kind_label",
    "primitive_transitions",
    "retargeted",
    "route",
    "type_arg",
]

Endpoint: TypeAlias = LocalType | Shard
"""A ``src`` or ``dst`` value: ``R``, ``I``, ``V``, ``P`` or ``S(i)``."""


_SHARD_KIND: Final = "S"


def endpoint_kind(t: Endpoint) -> str:
    """The kind of a ``src``/``dst`` value: its code, with every shard ``S(i)`` the one kind ``"S"``.

    The tables of calls and primitives are written by kind: what they say of
    ``"S"`` holds for every shard dim.
    """
    return _SHARD_KIND if isinstance(t, Shard) else t.code


def kind_label(kind: str) -> str:
    """How messages and tables name a kind: ``S(i)`` for the shards, the code (``R``) otherwise."""
    return "S(i)" if kind == _SHARD_KIND else kind


def type_arg(t: Endpoint) -> str:
    """How ``t`` is spelled as a ``src=``/``dst=`` argument: ``R`` or ``S(0)``."""
    return t.code


# -- primitive transitions ---------------------------------------------------------

# (call, src kind, dst kind) -> (what the forward does to local data, backward call).
# "S" stands for a shard S(i); the dims follow the types through `backward`.
_PRIMITIVES: Final[dict[tuple[str, str, str], tuple[str, str]]] = {
    ("reinterpret", "R", "I"): ("no-op", "convert"),
    ("reinterpret", "I", "R"): ("no-op", "all_reduce"),
    ("reinterpret", "R", "V"): ("no-op", "reinterpret"),
    ("reinterpret", "R", "P"): ("no-op", "reinterpret"),
    ("reinterpret", "V", "P"): ("no-op", "reinterpret"),
    ("convert", "R", "V"): ("local slice", "convert"),
    ("convert", "R", "S"): ("local slice", "convert"),
    ("convert", "R", "P"): ("mask to rank 0", "convert"),
    ("convert", "I", "V"): ("local slice", "all_gather"),
    ("convert", "I", "S"): ("local slice", "all_gather"),
    ("convert", "I", "P"): ("mask to rank 0", "reinterpret"),
    ("convert", "V", "P"): ("zero padding", "convert"),
    ("convert", "S", "P"): ("zero padding", "convert"),
    ("all_gather", "V", "R"): ("all-gather", "reduce_scatter"),
    ("all_gather", "S", "R"): ("all-gather", "reduce_scatter"),
    ("all_gather", "V", "I"): ("all-gather", "convert"),
    ("all_gather", "S", "I"): ("all-gather", "convert"),
    ("all_reduce", "P", "R"): ("all-reduce", "all_reduce"),
    ("all_reduce", "P", "I"): ("all-reduce", "reinterpret"),
    ("reduce_scatter", "P", "V"): ("reduce-scatter", "all_gather"),
    ("reduce_scatter", "P", "S"): ("reduce-scatter", "all_gather"),
    ("all_to_all", "V", "V"): ("all-to-all", "all_to_all"),
    ("all_to_all", "V", "S"): ("all-to-all", "all_to_all"),
    ("all_to_all", "S", "V"): ("all-to-all", "all_to_all"),
    ("all_to_all", "S", "S"): ("all-to-all", "all_to_all"),
    ("ppermute", "V", "V"): ("point-to-point exchange", "ppermute"),
}


@dataclass(frozen=True)
class Transition:
    """A primitive type change ``call(src -> dst)`` on one mesh axis."""

    call: str
    src: Endpoint
    dst: Endpoint

    def __post_init__(self) -> None:
        if self.key not in _PRIMITIVES:
            raise ValueError(f"{self} is not a primitive transition")

    def __str__(self) -> str:
        return f"{self.call}({self.src.code} -> {self.dst.code})"

    @property
    def key(self) -> tuple[str, str, str]:
        """The transition's row in the table of primitives: the call and the kinds of its types."""
        return (self.call, endpoint_kind(self.src), endpoint_kind(self.dst))

    @property
    def effect(self) -> str:
        """What the forward does to the local data (``all-reduce``, ``no-op``, ...)."""
        return _PRIMITIVES[self.key][0]


def backward(t: Transition) -> Transition:
    """The transition the backward of ``t`` performs on gradients."""
    call = _PRIMITIVES[t.key][1]
    return Transition(call, gradient_type(t.dst), gradient_type(t.src))


def backward_route(steps: tuple[Transition, ...]) -> tuple[Transition, ...]:
    """The transitions the backward of a route runs, in the order it runs them (the last step's first)."""
    return tuple(backward(t) for t in reversed(steps))


def primitive_transitions(shard_dims: tuple[int, ...] = (0,)) -> tuple[Transition, ...]:
    """Every primitive transition, with shards instantiated at ``shard_dims``."""
    return tuple(
        Transition(call, s, d)
        for call, src, dst in _PRIMITIVES
        for s in _endpoints(src, shard_dims)
        for d in _endpoints(dst, shard_dims)
    )


def _endpoints(kind: str, shard_dims: tuple[int, ...]) -> tuple[Endpoint, ...]:
    if kind == _SHARD_KIND:
        return tuple(Shard(d) for d in shard_dims)
    return (LOCAL_TYPES[kind],)


# -- user-facing calls -------------------------------------------------------------

_Steps = tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class CallSpec:
    """A collective or cast: its keyword defaults and the pairs it accepts.

    ``src_default``/``dst_default`` of ``None`` mean the argument is required.
    ``pairs`` maps ``(src kind, dst kind)`` to the primitive steps it runs, each
    ``(call, from, to)`` where ``from``/``to`` are ``"src"``, ``"dst"`` (the
    caller's values) or a fixed type code such as ``"P"``.
    """

    name: str
    src_default: Endpoint | None
    dst_default: Endpoint | None
    pairs: dict[tuple[str, str], _Steps]
    summary: str


def _direct(call: str, *pairs: tuple[str, str]) -> dict[tuple[str, str], _Steps]:
    """Pairs that run the single primitive ``call(src -> dst)``."""
    return {pair: ((call, "src", "dst"),) for pair in pairs}


# A varying input to a reduction is taken as its own partial sum: reinterpret(V -> P) first.
_VIA_PARTIAL: Final = ("reinterpret", "src", "P")

_CAST_PAIRS: Final = {
    **_direct("reinterpret", ("R", "I"), ("I", "R")),
    **_direct("convert", ("R", "V"), ("R", "S"), ("I", "V"), ("I", "S")),
    **_direct("convert", ("R", "P"), ("I", "P"), ("V", "P"), ("S", "P")),
}

CALLS: Final[dict[str, CallSpec]] = {
    spec.name: spec
    for spec in (
        CallSpec(
            "all_reduce",
            P,
            None,
            {
                **_direct("all_reduce", ("P", "R"), ("P", "I")),
                ("V", "R"): (_VIA_PARTIAL, ("all_reduce", "P", "dst")),
                ("V", "I"): (_VIA_PARTIAL, ("all_reduce", "P", "dst")),
            },
            "sum over the axis; every rank gets the result",
        ),
        CallSpec(
            "all_gather",
            V,
            None,
            _direct("all_gather", ("V", "R"), ("V", "I"), ("S", "R"), ("S", "I")),
            "every rank gets all ranks' tensors, stacked (V) or concatenated (S(i))",
        ),
        CallSpec(
            "reduce_scatter",
            P,
            V,
            {
                **_direct("reduce_scatter", ("P", "V"), ("P", "S")),
                ("V", "V"): (_VIA_PARTIAL, ("reduce_scatter", "P", "dst")),
                ("V", "S"): (_VIA_PARTIAL, ("reduce_scatter", "P", "dst")),
            },
            "sum over the axis; each rank keeps its own slice",
        ),
        CallSpec(
            "all_to_all",
            V,
            V,
            _direct("all_to_all", ("V", "V"), ("V", "S"), ("S", "V"), ("S", "S")),
            "each rank sends slice j of its tensor to rank j",
        ),
        CallSpec(
            "reinterpret",
            None,
            None,
            {
                **_direct("reinterpret", ("R", "I"), ("I", "R"), ("R", "V"), ("R", "P"), ("V", "P")),
                ("I", "V"): (("reinterpret", "src", "R"), ("reinterpret", "R", "dst")),
            },
            "change the type, keep the local data (the global value may change)",
        ),
        CallSpec(
            "convert",
            None,
            None,
            _CAST_PAIRS,
            "change the type, keep the global value, no communication",
        ),
        CallSpec(
            "redistribute",
            None,
            None,
            {
                **_CAST_PAIRS,
                **_direct("all_gather", ("V", "R"), ("S", "R"), ("V", "I"), ("S", "I")),
                **_direct("all_reduce", ("P", "R"), ("P", "I")),
                **_direct("reduce_scatter", ("P", "V"), ("P", "S")),
                **_direct("all_to_all", ("S", "S")),
                **{pair: () for pair in (("R", "R"), ("I", "I"), ("V", "V"), ("P", "P"), ("V", "S"), ("S", "V"))},
            },
            "change the type, keep the global value, communicating as needed",
        ),
        CallSpec(
            "ppermute",
            V,
            V,
            _direct("ppermute", ("V", "V")),
            "send each rank's tensor to another rank along a permutation",
        ),
    )
}


def route(call: str, src: Endpoint, dst: Endpoint) -> tuple[Transition, ...] | None:
    """The primitive transitions ``call(src=..., dst=...)`` runs, or ``None`` if not allowed.

    An empty tuple means the call is the identity (``redistribute`` to the same type).  Remembered: a
    program makes the same few calls, and checking one (with the fixes it may offer) asks for several.
    """
    key = (call, src, dst)
    if key in _ROUTES:
        return _ROUTES[key]
    return bounded_put(_ROUTES, key, _route(call, src, dst), _ROUTES_MAX)


_ROUTES: Final[dict[tuple[str, Endpoint, Endpoint], tuple[Transition, ...] | None]] = {}
_ROUTES_MAX: Final = 1024


def _route(call: str, src: Endpoint, dst: Endpoint) -> tuple[Transition, ...] | None:
    steps = CALLS[call].pairs.get((endpoint_kind(src), endpoint_kind(dst)))
    if steps is None:
        return None
    if call == "redistribute" and src == dst:
        return ()
    ends: dict[str, Endpoint] = {"src": src, "dst": dst, "P": P, "R": R}
    return tuple(Transition(step, ends[a], ends[b]) for step, a, b in steps)


def cost(steps: tuple[Transition, ...]) -> str:
    """``"<forward> forward, <backward> in backward"`` for a route."""
    return f"{effects(steps)} forward, {effects(backward_route(steps))} in backward"


def effects(steps: tuple[Transition, ...]) -> str:
    """What ``steps`` do to the local data, in order: ``"all-gather then reduce-scatter"``, or ``"no-op"``."""
    done = [t.effect for t in steps if t.effect != "no-op"]
    return " then ".join(done) if done else "no-op"


_FIX_CALLS: Final = ("convert", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "reinterpret")


def fix(call: str, have: Endpoint, want: Endpoint, axis: str, operands: tuple[int, ...] = ()) -> Fix | None:
    """``call(x, axis, src=have, dst=want)`` as a :class:`Fix`, or ``None`` if not allowed."""
    steps = route(call, have, want)
    if not steps:
        return None
    text = f'{call}({{x}}, "{axis}", src={type_arg(have)}, dst={type_arg(want)})'
    return Fix(text, cost(steps), operands)


def fixes_between(
    have: Endpoint, want: Endpoint, axis: str, operands: tuple[int, ...] = ()
) -> tuple[Fix, ...]:
    """Calls that turn a value of type ``have`` into ``want`` on ``axis``.

    Semantics-preserving calls (``convert`` and the collectives) come before
    ``reinterpret``, which keeps the local data but changes the global value,
    except from varying to partial: there ``reinterpret`` is the usual intent
    (the per-rank results of a row-parallel matmul are summands of the
    result), and ``convert``'s zero padding the rare one.  ``all_reduce`` of a
    varying value is spelled as the explicit reinterpret it implies, so it is
    not offered.
    """
    calls: tuple[str, ...] = _FIX_CALLS
    if is_varying(have) and want is P:
        calls = ("reinterpret", *(c for c in _FIX_CALLS if c != "reinterpret"))
    found = (
        fix(call, have, want, axis, operands)
        for call in calls
        if not (call == "all_reduce" and is_varying(have))
    )
    return tuple(f for f in found if f is not None)


def retargeted(violation: Violation, call: str, axis: str, src: Endpoint, want: AxisType | None) -> Violation:
    """``violation`` of the result of ``call(x, axis, src=src, ...)`` against a declared ``want``, fixed at the call.

    When a collective or cast produced the value, the best fix is usually the
    same call with ``dst=want`` rather than a second cast after it (an
    ``all_reduce(..., dst=R)`` returned as ``I`` should have been
    ``all_reduce(..., dst=I)``).  If that call is allowed it replaces the
    violation's fixes, as a fix of operand 0, the call's input.
    """
    if violation.axis != axis or not isinstance(want, (LocalType, Shard)):
        return violation
    better = fix(call, src, want, axis, operands=(0,))
    if better is None:
        return violation
    return replace(violation, fixes=(replace(better, replaces=call),))


# -- checking one call ------------------------------------------------------------


@dataclass(frozen=True)
class CallOutcome:
    """The result of checking one collective or cast call on one axis.

    ``output`` is the type on the axis afterwards; ``steps`` the route the call
    runs (``None`` when the call is not allowed); ``violations`` what is wrong.
    """

    output: AxisType | None
    steps: tuple[Transition, ...] | None
    violations: tuple[Violation, ...] = ()


NO_GRADIENT_REDUCTIONS: Final = frozenset({"max", "min"})
"""``all_reduce`` ops that compute a statistic without a gradient."""


def check_call(
    call: str,
    axis: str,
    have: AxisType | None,
    src: Endpoint | None,
    dst: Endpoint | None,
    op: str = "sum",
) -> CallOutcome:
    """Check ``call(x, axis, src=src, dst=dst, op=op)`` for an input of type ``have`` on ``axis``.

    ``src``/``dst`` of ``None`` mean the argument was not passed: the call's
    default applies, and a missing required one is a violation.  ``have`` of
    ``None`` means the input is unknown on ``axis``: any ``src`` is accepted.
    The output type is ``dst`` whenever ``dst`` is known, except for a
    reduction without a gradient (``op="max"``): its result is a weak
    constant on the axis, since ``R`` and ``I`` differ only in the gradient.
    """
    spec = CALLS[call]
    src = src if src is not None else spec.src_default
    dst = dst if dst is not None else spec.dst_default
    if src is None or dst is None:
        missing = [name for name, value in (("src", src), ("dst", dst)) if value is None]
        position = 0 if missing == ["src"] else 1
        options = sorted({pair[position] for pair in spec.pairs})
        spelled = ", ".join(kind_label(kind) for kind in options)
        reason = f"{call} needs {'= and '.join(missing)}= ({spelled})"
        return CallOutcome(dst, None, (Violation(Code.COLLECTIVE, axis, reason),))
    steps = route(call, src, dst)
    if steps is None:
        reason = f"{call} does not accept src={type_arg(src)}, dst={type_arg(dst)}"
        violation = Violation(
            Code.COLLECTIVE, axis, reason, (type_arg(src), type_arg(dst)), (), _rejected_fixes(call, src, dst, axis)
        )
        return CallOutcome(dst, None, (violation,))
    output: AxisType = WEAK if op in NO_GRADIENT_REDUCTIONS else dst
    if have is not None and have is P and op != "sum":
        reason = (f"{call} with op={op!r} of a pending sum (P): the ranks hold summands, and their {op} is not "
                  f"the value they add up to; use op=\"sum\"")
        return CallOutcome(output, steps, (Violation(Code.PARTIAL, axis, reason, ("P",), (0,)),))
    if have is None or _src_accepts(src, have):
        return CallOutcome(output, steps)
    return CallOutcome(output, steps, (_src_mismatch(call, axis, have, src, dst),))


def flattened_axes(axes: object) -> tuple[tuple[str, ...] | None, str | None]:
    """``axes`` (a name or a tuple of names) as a tuple of distinct names, or why it is not one.

    A tuple such as ``("dp", "cp")`` names the flattened group of those mesh
    axes: one collective over the product of their ranks, ranks ordered
    row-major over the names as listed.
    """
    names = (axes,) if isinstance(axes, str) else axes
    if not isinstance(names, tuple) or not names or not all(isinstance(n, str) and n for n in names):
        return None, f"an axis is a mesh-axis name or a non-empty tuple of them, got {axes!r}"
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return None, f"the axes {names!r} name {', '.join(map(repr, twice))} twice; list each mesh axis once"
    return names, None


def check_call_on_axes(
    call: str,
    axes: tuple[str, ...],
    have: SpmdType,
    src: Endpoint | None,
    dst: Endpoint | None,
    op: str = "sum",
) -> tuple[SpmdType, tuple[Violation, ...]]:
    """``call(x, axes, src=src, dst=dst, op=op)`` for ``x`` of type ``have``: the result's type and the violations.

    On a flattened group of several axes the call is the same call on each
    axis in turn (an all-reduce over ``("dp", "cp")`` sums over both, a
    gather concatenates over both, and so on), so ``src`` and ``dst`` apply
    on every axis listed: each axis is checked as a call of its own and set to
    its output.  A ``src``/``dst`` pair the call does not accept is reported
    once, on the first axis, not once per axis.
    """
    result = have
    violations: list[Violation] = []
    rejected = False
    for axis in axes:
        outcome = check_call(call, axis, have.get(axis), src, dst, op)
        if outcome.output is not None:
            result = result.with_axis(axis, outcome.output)
        if not (rejected and outcome.steps is None):
            violations.extend(outcome.violations)
        rejected = rejected or outcome.steps is None
    return result, tuple(violations)


# Collectives by what they do to the data: sum it over the ranks, or move it between them.
_KINDS: Final = {"all_reduce": "reduction", "reduce_scatter": "reduction",
                 "all_gather": "movement", "all_to_all": "movement", "ppermute": "movement"}


def _rejected_fixes(call: str, src: Endpoint, dst: Endpoint, axis: str) -> tuple[Fix, ...]:
    """For ``call(x, axis, src=src, dst=dst)``, which the table rejects: what to write instead.

    The calls that go from ``src`` to ``dst`` (the types are taken as the
    intent), or where none does, the same call with a ``dst`` it accepts.
    Where ``src`` and ``dst`` are the same type, the call's kind is the
    intent: a reduction is replaced by a reduction (``all_reduce`` to ``V``
    by ``reduce_scatter``), a data movement by a data movement (``all_gather``
    to ``V`` by ``all_to_all``).
    """
    kind = _KINDS.get(call)
    others = tuple(replace(f, replaces=call) for f in fixes_between(src, dst, axis)
                   if src != dst or _KINDS.get(f.call.partition("(")[0]) == kind)
    if others:
        return others
    found = (fix(call, src, want, axis) for want in (R, I, V, P))
    return tuple(replace(f, replaces=call) for f in found if f is not None)


def _src_accepts(src: Endpoint, have: AxisType) -> bool:
    """Whether an input of type ``have`` on the axis matches the declared ``src``.

    ``V`` and ``S(i)`` match each other (a shard is a varying tensor); ``S(i)``
    does not match ``S(j)`` where they name different dims (``S(-1)`` may be
    ``S(2)``: that depends on the rank).  A ``V`` input matches ``src=P`` (a reduction
    takes it as its own partial sum); a shard does not: its pieces are parts of
    one tensor, to be gathered, and their sum means nothing.  Zero matches
    anything; other constants match every type but ``P``.
    """
    if have is ZERO:
        return True
    if have is WEAK:
        return src is not P
    if isinstance(src, Shard):
        return have is V or (isinstance(have, Shard) and same_dim(have.dim, src.dim) is not False)
    if src is V:
        return is_varying(have)
    if src is P:
        return have is P or have is V
    return have is src


def _src_mismatch(call: str, axis: str, have: AxisType, src: Endpoint, dst: Endpoint) -> Violation:
    reason = f"the input is {have.code} but {call} was told src={type_arg(src)}"
    if isinstance(have, Shard) and isinstance(src, Shard):
        reason += " (sharded along another dim)"
    elif isinstance(have, Shard) and src is P:
        reason += "; summing the pieces of a sharded tensor adds different parts of it together"
    elif src is P and have in (R, I):
        reason += f"; summing {have.code} data over the axis multiplies it by the axis size"
    elif is_varying(src) and have in (R, I):
        reason += "; every rank would contribute the same data"
    if have == dst and call not in ("all_to_all", "ppermute"):
        reason += f"; the input is already {have.code}, so the call is not needed"
    fixes: tuple[Fix, ...] = ()
    moves = call in ("all_to_all", "ppermute")
    if moves and have in (R, I):
        # Cutting the replicated input just before the exchange rarely gives each rank its share: the share is
        # chosen where the data is still whole (the tokens a rank routes), so that is where a convert belongs.
        reason += (f"; give each rank its own share of the data earlier, where it is still whole "
                   f"(convert from {have.code})")
    elif isinstance(have, (LocalType, Shard)):
        # A data movement is kept and its input made to fit; any other call is replaced by the calls that
        # reach the type it produces from the type the input has.
        target = src if moves else dst
        if have != target:
            fixes = fixes_between(have, target, axis)
            if not moves:
                fixes = tuple(replace(f, replaces=call) for f in fixes)
    return Violation(Code.COLLECTIVE, axis, reason, (have.code, type_arg(src)), (0,), fixes)
