"""The primitive transitions, each implemented once, and the autograd Function that runs them.

The rule core (:mod:`spmd_types.typesystem.collectives`) lists every primitive
transition ``call(src -> dst)`` on one mesh axis and says which transition its
backward performs (:func:`~spmd_types.typesystem.collectives.backward`).  This
module gives each primitive, keyed by ``(call, src kind, dst kind)`` with
``"S"`` for any shard, exactly one forward implementation, and runs every
primitive through a single :class:`torch.autograd.Function`, :class:`_Step`,
whose backward is *the forward implementation of the core's backward
transition* (itself run through :class:`_Step`, so double backward works too).
No backward is written by hand: the table is the only place that says what
a gradient does.

Parameters of a step.  Besides the tensor and the axis a step takes

* ``a``: the dim of the *source* side.  For ``src=S(i)`` it is ``i`` (a dim of
  the input).  For ``src=V`` it is where the source ranks' tensors are stacked
  in the output (``all_gather``'s ``gather_dim``, ``all_to_all``'s
  ``concat_dim``, the new dim ``convert(V -> P)`` pads).
* ``b``: the dim of the *destination* side.  For ``dst=S(j)`` it is ``j`` (a
  dim of the output).  For ``dst=V`` it is the input dim that is unbound over
  the destination ranks (``reduce_scatter``'s ``scatter_dim``, ``all_to_all``'s
  ``split_dim``, the dim ``convert(R -> V)`` selects from).
* ``extra``: the uneven ``split_sizes`` of a shard, or ``ppermute``'s
  permutation; ``extra_back`` is what the backward step needs instead (the
  same sizes; the inverse permutation).

Because the backward of ``src -> dst`` goes from ``grad(dst)`` to
``grad(src)``, the backward step receives ``(b, a, extra_back, extra)``: the
destination side of a forward is the source side of its backward.  A gather
that stacks at ``a`` thus has a reduce-scatter that unbinds ``a`` as its
backward, a shard of dim ``i`` stays a shard of dim ``i``, and so on.

Routes.  A user call runs :func:`~spmd_types.typesystem.collectives.route`'s
steps in order.  A step that is a no-op forward *and* backward
(``reinterpret(V -> P)``, ``reinterpret(R -> V)``, ``reinterpret(R -> P)``) is
dropped from the plan: running it would only cost time.  Plans are computed
for every allowed pair at import; a call only looks its plan up (nothing is
cached or mutated while running, which also keeps ``torch.compile`` free of
side effects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import torch

from spmd_types import _checks, _comm
from spmd_types._checks import check_ranks_agree
from spmd_types._comm import pad_dim
from spmd_types._errors import CollectiveArgumentError, ShapeError
from spmd_types._mesh import Group, per_rank, per_rank_int, rank_values, simulated
from spmd_types.typesystem import (
    CALLS,
    LOCAL_TYPES,
    Endpoint,
    LocalType,
    Shard,
    Transition,
    check_call,
    endpoint_kind,
    primitive_transitions,
    route,
)
from spmd_types.typesystem import (
    backward as backward_transition,
)

__all__ = [
    "PRIMS", "Precision", "Prim", "check_dim", "check_tensor", "need_sizes", "permutation", "plan", "run",
    "shard_sizes", "size_list",
]

Impl = Callable[[torch.Tensor, Group, int, int, Any], torch.Tensor]
Key = tuple[str, str, str]



def check_dim(dim: int, ndim: int, what: str) -> int:
    """``dim`` normalized into ``range(ndim)``, or a :class:`ShapeError` naming ``what``."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise ShapeError(f"{what} must be an int, got {dim!r}")
    if not -ndim <= dim < ndim:
        raise ShapeError(f"{what}={dim} is out of range for a tensor with {ndim} dims")
    return dim % ndim if ndim else dim


def shard_sizes(sizes: Sequence[int] | None, group: Group, call: str, endpoint: Endpoint) -> tuple[int, ...] | None:
    """``split_sizes=`` checked: one non-negative int per rank, for a shard end only."""
    if sizes is None:
        return None
    if not isinstance(endpoint, Shard):
        raise CollectiveArgumentError(f"{call}: split_sizes= needs a shard S(i), not {endpoint.code}")
    return size_list(sizes, group, call, "split_sizes")


def size_list(sizes: object, group: Group, call: str, name: str, per_rank: bool = False) -> tuple[int, ...]:
    """``sizes`` checked: one non-negative int per rank of ``group``.

    With ``per_rank`` (sizes that differ from rank to rank), an entry may
    also be a per-rank ``SymInt`` under ``LocalTensorMode``, such as
    ``counts.tolist()`` of a simulated tensor gives.
    """
    out = tuple(sizes) if isinstance(sizes, Iterable) else (sizes,)
    mode = simulated() if per_rank else None

    def fits(size: object) -> bool:
        if isinstance(size, bool):
            return False
        if isinstance(size, int):
            return size >= 0
        return mode is not None and isinstance(size, torch.SymInt) and min(rank_values(size, mode.ranks).values()) >= 0

    if len(out) != group.size or not all(fits(size) for size in out):
        hint = f"; pass {name}=counts.tolist()" if isinstance(sizes, torch.Tensor) else ""
        raise CollectiveArgumentError(
            f"{call}: {name} must be {group.size} non-negative ints (one per rank of axis "
            f"{group.label!r}), got {sizes!r}{hint}"
        )
    return out


def check_tensor(call: str, x: object) -> torch.Tensor:
    """``x`` itself if it is a tensor, else a :class:`CollectiveArgumentError` naming ``call``."""
    if not isinstance(x, torch.Tensor):
        raise CollectiveArgumentError(
            f"{call}: x must be a torch.Tensor, got {type(x).__name__}; convert it first, e.g. torch.as_tensor(x)"
        )
    return x


def _need_axis_sized(x: torch.Tensor, dim: int, group: Group, why: str) -> None:
    if dim >= x.dim():
        raise ShapeError(
            f"{why}: the input needs a dim {dim} with one entry per rank of axis {group.label!r} "
            f"(size {group.size}), but got a {x.dim()}-dim tensor of shape {tuple(x.shape)}"
        )
    if x.shape[dim] != group.size:
        raise ShapeError(
            f"{why}: dim {dim} of the input must have one entry per rank of axis {group.label!r} "
            f"(size {group.size}), got shape {tuple(x.shape)}"
        )


def _need_divisible(x: torch.Tensor, dim: int, group: Group, why: str, uneven: bool = True) -> int:
    length = x.shape[dim]
    if length % group.size:
        hint = "pad it, or pass split_sizes= for an uneven split" if uneven else "pad it"
        raise ShapeError(
            f"{why}: dim {dim} of the input (size {length}) is not divisible by the size {group.size} "
            f"of axis {group.label!r}; {hint}"
        )
    return length // group.size


def need_sizes(sizes: tuple[int, ...], total: int, dim: int, why: str) -> None:
    if sum(sizes) != total:
        raise ShapeError(f"{why}: split_sizes {list(sizes)} add up to {sum(sizes)}, but dim {dim} has size {total}")


def _offsets(sizes: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 0
    for s in sizes:
        out.append(acc)
        acc += s
    return tuple(out)


# -- forward implementations -------------------------------------------------------
# Each takes (x, group, a, b, extra); see the module docstring for a, b, extra.


def _identity(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
    return x


def _sum_all_reduce(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
    return _comm.all_reduce(x, group)


def _gather_stack(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
    stacked = _comm.all_gather(x.unsqueeze(0), group)
    return stacked if a == 0 else stacked.movedim(0, a).contiguous()


def _gather_cat(x: torch.Tensor, group: Group, a: int, b: int, sizes: tuple[int, ...] | None) -> torch.Tensor:
    if sizes is None:
        if a == 0:  # the collective concatenates along dim 0 already
            return _comm.all_gather(x, group)
        stacked = _comm.all_gather(x.unsqueeze(0), group)
        return stacked.movedim(0, a).flatten(a, a + 1)
    # Uneven: every rank pads its shard to the largest, gathers, and trims.
    longest = max(sizes)

    def pad(t: torch.Tensor, me: int) -> torch.Tensor:
        if t.shape[a] != sizes[me]:
            raise ShapeError(
                f"all_gather: rank {me} of axis {group.label!r} has {t.shape[a]} entries along dim {a}, "
                f"but split_sizes says {sizes[me]}"
            )
        return pad_dim(t, a, 0, longest - sizes[me])

    padded = per_rank(x, group, pad) if any(s != longest for s in sizes) else x
    stacked = _comm.all_gather(padded.unsqueeze(0), group)
    return torch.cat([stacked[k].narrow(a, 0, sizes[k]) for k in range(group.size)], dim=a)


def _scatter_unbind(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
    _need_axis_sized(x, b, group, "reduce_scatter to V")
    rows = x.movedim(b, 0).contiguous()
    return _comm.reduce_scatter(rows, group).squeeze(0)


def _scatter_chunk(x: torch.Tensor, group: Group, a: int, b: int, sizes: tuple[int, ...] | None) -> torch.Tensor:
    if sizes is None:
        chunk = _need_divisible(x, b, group, "reduce_scatter")
        if b == 0:  # the collective scatters dim 0 already
            return _comm.reduce_scatter(x, group)
        rows = torch.unflatten(x, b, (group.size, chunk)).movedim(b, 0).contiguous()
        return _comm.reduce_scatter(rows, group).squeeze(0)
    need_sizes(sizes, x.shape[b], b, "reduce_scatter")
    longest = max(sizes)
    pieces = [pad_dim(p, b, 0, longest - p.shape[b]) for p in x.split_with_sizes(list(sizes), dim=b)]
    mine = _comm.reduce_scatter(torch.stack(pieces), group).squeeze(0)
    return per_rank(mine, group, lambda t, me: t.narrow(b, 0, sizes[me]).contiguous())


def _take_entry(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
    _need_axis_sized(x, b, group, "convert to V")
    return per_rank(x, group, lambda t, me: t.select(b, me).clone())


def _take_chunk(x: torch.Tensor, group: Group, a: int, b: int, sizes: tuple[int, ...] | None) -> torch.Tensor:
    if sizes is None:
        chunk = _need_divisible(x, b, group, "convert to S")
        return per_rank(x, group, lambda t, me: t.narrow(b, me * chunk, chunk).clone())
    need_sizes(sizes, x.shape[b], b, "convert to S")
    starts = _offsets(sizes)
    return per_rank(x, group, lambda t, me: t.narrow(b, starts[me], sizes[me]).clone())


def _keep_on_first(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
    return per_rank(x, group, lambda t, me: t.clone() if me == 0 else torch.zeros_like(t))


def _pad_entry(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
    n = group.size
    return per_rank(x, group, lambda t, me: pad_dim(t.unsqueeze(a), a, me, n - 1 - me))


def _pad_chunk(x: torch.Tensor, group: Group, a: int, b: int, sizes: tuple[int, ...] | None) -> torch.Tensor:
    n = group.size
    if sizes is None:
        return per_rank(x, group, lambda t, me: pad_dim(t, a, me * t.shape[a], (n - 1 - me) * t.shape[a]))
    starts, total = _offsets(sizes), sum(sizes)
    return per_rank(x, group, lambda t, me: pad_dim(t, a, starts[me], total - starts[me] - t.shape[a]))


def _make_all_to_all(src_kind: str, dst_kind: str) -> Impl:
    """all_to_all: divide by destination (``dst``), exchange, join by source (``src``).

    dst ``V``: unbind input dim ``b``; dst ``S(b)``: chunk along ``b`` (a dim of
    the output).  src ``V``: stack at output dim ``a``; src ``S(a)``:
    concatenate along ``a`` (a dim of the input).  With uneven pieces
    (``extra``, for ``S(a) -> S(a)``) the blocks along ``a`` have the sizes
    the caller gave.
    """

    def impl(x: torch.Tensor, group: Group, a: int, b: int, extra: Any) -> torch.Tensor:
        n = group.size
        if extra is not None:  # uneven pieces along one dim a == b: extra is (sizes sent, sizes received)
            sends, gets = extra
            return _comm.all_to_all(x.movedim(a, 0), group, gets, sends).movedim(0, a)
        if src_kind == "S" and dst_kind == "S" and a == 0 and b == 0:  # all_to_all_single as is
            chunk = _need_divisible(x, 0, group, "all_to_all to S", uneven=False)
            return _comm.all_to_all(x, group, [chunk] * n, [chunk] * n)
        if dst_kind == "V":
            _need_axis_sized(x, b, group, "all_to_all to V")
            by_dest = x.movedim(b, 0)
            cat_dim = a - (b < a)  # the source shard dim, among the dims of one piece
        else:
            split = b - (src_kind == "V" and a < b)  # dst dim b, as a dim of the input
            chunk = _need_divisible(x, split, group, "all_to_all to S", uneven=False)
            by_dest = torch.unflatten(x, split, (n, chunk)).movedim(split, 0)
            cat_dim = a
        by_dest = by_dest.contiguous()
        by_src = _comm.all_to_all(by_dest, group, [1] * n, [1] * n)
        if src_kind == "V":
            return by_src if a == 0 else by_src.movedim(0, a).contiguous()
        return by_src.movedim(0, cat_dim).flatten(cat_dim, cat_dim + 1)

    return impl


def _permute(x: torch.Tensor, group: Group, a: int, b: int, perm: Permutation) -> torch.Tensor:
    # One exchange in which every rank sends its whole tensor (as one row) to one rank and
    # receives one row from one rank: an all-to-all whose other pieces are empty, which
    # NCCL and gloo run as point-to-point transfers.
    sends, gets, receives = perm
    flat = x.contiguous().reshape(1, -1)
    if simulated() is None:
        me = group.rank
        out_rows: list[int | torch.SymInt] = [column[me] for column in gets]
        in_rows: list[int | torch.SymInt] = [column[me] for column in sends]
    else:
        out_rows = [per_rank_int(group, column) for column in gets]
        in_rows = [per_rank_int(group, column) for column in sends]
    moved = _comm.all_to_all(flat, group, out_rows, in_rows).reshape(x.shape)
    if all(receives):
        return moved
    return per_rank(moved, group, lambda t, me: t if receives[me] else torch.zeros_like(t))


Permutation = tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...], tuple[bool, ...]]
"""``(sends, gets, receives)`` of a permutation completed to the whole axis.

``sends[k][me]`` is 1 when rank ``me`` sends to rank ``k`` (else 0), ``gets[k][me]``
is 1 when ``me`` receives from ``k``; ``receives[me]`` says whether ``me`` receives
in the caller's (possibly partial) permutation.
"""


def permutation(pairs: Sequence[tuple[int, int]], n: int) -> tuple[Permutation, Permutation]:
    """``ppermute``'s ``(forward, backward)`` plans for ``(source, destination)`` pairs.

    Pairs form a partial permutation.  It is completed to a full one (ranks
    that send nothing send to ranks that receive nothing) so that every rank
    takes part in one exchange of equal size; ranks that receive nothing in
    the user's permutation then zero what they got.
    """
    seen_src: set[int] = set()
    seen_dst: set[int] = set()
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise CollectiveArgumentError(f"ppermute: perm must be (source, destination) pairs, got {pair!r}")
        s, d = pair
        for v in (s, d):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n:
                raise CollectiveArgumentError(f"ppermute: index {v!r} in {pair!r} is not in range({n}) of the axis")
        if s in seen_src:
            raise CollectiveArgumentError(f"ppermute: source {s} appears twice in perm")
        if d in seen_dst:
            raise CollectiveArgumentError(f"ppermute: destination {d} appears twice in perm")
        seen_src.add(s)
        seen_dst.add(d)
    forward = _complete([(s, d) for s, d in pairs], n)
    backward = _complete([(d, s) for s, d in pairs], n)
    return forward, backward


def _complete(pairs: list[tuple[int, int]], n: int) -> Permutation:
    dest = dict(pairs)
    idle_src = [k for k in range(n) if k not in dest]
    idle_dst = sorted(set(range(n)) - set(dest.values()))
    dest.update(zip(idle_src, idle_dst))
    source = {d: s for s, d in dest.items()}
    real = {d for _, d in pairs}
    return (
        tuple(tuple(int(dest[me] == k) for me in range(n)) for k in range(n)),
        tuple(tuple(int(source[me] == k) for me in range(n)) for k in range(n)),
        tuple(k in real for k in range(n)),
    )


# Forward implementation of every primitive transition; R and I share data layouts.
_IMPLS: Final[dict[Key, Impl]] = {
    ("reinterpret", "R", "I"): _identity,
    ("reinterpret", "I", "R"): _identity,
    ("reinterpret", "R", "V"): _identity,
    ("reinterpret", "R", "P"): _identity,
    ("reinterpret", "V", "P"): _identity,
    ("convert", "R", "V"): _take_entry,
    ("convert", "I", "V"): _take_entry,
    ("convert", "R", "S"): _take_chunk,
    ("convert", "I", "S"): _take_chunk,
    ("convert", "R", "P"): _keep_on_first,
    ("convert", "I", "P"): _keep_on_first,
    ("convert", "V", "P"): _pad_entry,
    ("convert", "S", "P"): _pad_chunk,
    ("all_gather", "V", "R"): _gather_stack,
    ("all_gather", "V", "I"): _gather_stack,
    ("all_gather", "S", "R"): _gather_cat,
    ("all_gather", "S", "I"): _gather_cat,
    ("all_reduce", "P", "R"): _sum_all_reduce,
    ("all_reduce", "P", "I"): _sum_all_reduce,
    ("reduce_scatter", "P", "V"): _scatter_unbind,
    ("reduce_scatter", "P", "S"): _scatter_chunk,
    ("all_to_all", "V", "V"): _make_all_to_all("V", "V"),
    ("all_to_all", "V", "S"): _make_all_to_all("V", "S"),
    ("all_to_all", "S", "V"): _make_all_to_all("S", "V"),
    ("all_to_all", "S", "S"): _make_all_to_all("S", "S"),
    ("ppermute", "V", "V"): _permute,
}


class Prim:
    """One primitive transition: its forward implementation and its backward primitive."""

    __slots__ = ("backward", "forward", "key", "transition")

    key: Key
    transition: Transition
    forward: Impl
    backward: Prim

    def __init__(self, transition: Transition) -> None:
        self.transition = transition
        self.key = transition.key
        self.forward = _IMPLS[self.key]

    def __repr__(self) -> str:
        return f"Prim({self.transition} | backward {self.backward.transition})"


def _build_prims() -> dict[Key, Prim]:
    transitions = {t.key: t for t in primitive_transitions()}
    missing = set(transitions) - set(_IMPLS)
    stale = set(_IMPLS) - set(transitions)
    if missing or stale:
        raise ImportError(
            "spmd_types runtime is out of sync with the rule core: "
            f"primitives without an implementation {sorted(missing)}, implementations of no primitive {sorted(stale)}"
        )
    prims = {key: Prim(t) for key, t in transitions.items()}
    for key, prim in prims.items():
        prim.backward = prims[backward_transition(transitions[key]).key]
    return prims


PRIMS: Final = _build_prims()


def _elidable(t: Transition) -> bool:
    """A step that does nothing to the data, forward or backward."""
    return t.effect == "no-op" and backward_transition(t).effect == "no-op"


# -- the cross-rank check (with runtime checks on) ------------------------------------

_COMMUNICATING: Final = frozenset(("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "ppermute"))


def _describe(key: Key, a: int, b: int) -> str:
    call, src, dst = key
    return f"{call}({f'S({a})' if src == 'S' else src} -> {f'S({b})' if dst == 'S' else dst})"


# -- the autograd Function ---------------------------------------------------------


Precision = tuple[torch.dtype | None, torch.dtype | None, torch.dtype | None]
"""``(comm, out, grad_comm)`` dtypes of one communicating step; ``None`` keeps the dtype at hand.

The step casts its input to ``comm``, communicates, and casts the result to
``out`` (by default back to the input's dtype).  Its backward runs with
``(grad_comm, the input's dtype, comm)``: the gradient is communicated in
``grad_comm`` (by default in the dtype it arrives in) and returned in the
dtype of the forward's input, as autograd requires.
"""


class _Step(torch.autograd.Function):
    """Runs one primitive; its backward runs the core's backward primitive (through ``_Step``)."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        prim: Prim,
        group: Group,
        a: int,
        b: int,
        extra: Any,
        extra_back: Any,
        precision: Precision | None,
    ) -> torch.Tensor:
        out_dtype = None
        if precision is not None:
            comm, out_dtype, grad_comm = precision
            ctx.saved = (prim, group, a, b, extra, extra_back, (grad_comm, x.dtype, comm))
            out_dtype = out_dtype or x.dtype
            x = x if comm is None else x.to(comm)
        else:
            ctx.saved = (prim, group, a, b, extra, extra_back, None)
        if prim.key[0] in _COMMUNICATING and _checks.checking():
            # An uneven shard may differ in length along the shard dim (split_sizes checks it).  The
            # sizes of an uneven all_to_all differ from rank to rank: the caller checks them on their own.
            uneven = extra is not None and prim.key[:2] in (("all_gather", "S"), ("all_to_all", "S"))
            agreed = None if prim.key[0] == "all_to_all" else extra
            check_ranks_agree(x, group, _describe(prim.key, a, b), agreed, a if uneven else None)
        y = prim.forward(x, group, a, b, extra)
        return y if out_dtype is None else y.to(out_dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        prim, group, a, b, extra, extra_back, precision = ctx.saved
        grad_x = _apply(grad, prim.backward, group, b, a, extra_back, extra, precision)
        return (grad_x, None, None, None, None, None, None, None)


_apply: Callable[[torch.Tensor, Prim, Group, int, int, Any, Any, Precision | None], torch.Tensor] = _Step.apply

Plan = tuple[Prim, ...]
PlanKey = tuple[str, str, str, bool]


def _representatives(src_kind: str, dst_kind: str, same: bool) -> tuple[Endpoint, Endpoint]:
    """Endpoints of the given kinds; two shards are equal exactly when ``same``."""
    src: Endpoint = LOCAL_TYPES.get(src_kind, Shard(0))
    dst: Endpoint = LOCAL_TYPES.get(dst_kind, src if same else Shard(1))
    return src, dst


def _build_plans() -> dict[PlanKey, Plan]:
    """Every allowed call's plan, keyed by ``(call, src kind, dst kind, src == dst)``.

    Built once at import from the core's routes (a route depends on the
    shard dims only through whether ``src == dst``), so a call never
    computes or caches anything: it only looks its plan up.
    """
    plans: dict[PlanKey, Plan] = {}
    for call, spec in CALLS.items():
        for src_kind, dst_kind in spec.pairs:
            for same in (False, True) if src_kind == dst_kind else (False,):
                src, dst = _representatives(src_kind, dst_kind, same)
                steps = route(call, src, dst)
                if steps is not None:
                    plans[(call, src_kind, dst_kind, same)] = tuple(
                        PRIMS[t.key] for t in steps if not _elidable(t)
                    )
    return plans


_PLANS: Final = _build_plans()


def plan(call: str, src: Endpoint, dst: Endpoint, group: Group) -> Plan:
    """The primitives ``call(src=src, dst=dst)`` runs; a pair the core does not allow raises.

    The error renders the rule core's violation, which names the calls that
    do what was probably meant and what each costs.
    """
    if isinstance(src, (LocalType, Shard)) and isinstance(dst, (LocalType, Shard)):
        src_kind, dst_kind = endpoint_kind(src), endpoint_kind(dst)
        found = _PLANS.get((call, src_kind, dst_kind, src_kind == dst_kind and src == dst))
        if found is not None:
            return found
    raise _bad_pair(call, src, dst, group)


def _bad_pair(call: str, src: object, dst: object, group: Group) -> CollectiveArgumentError:
    for name, value in (("src", src), ("dst", dst)):
        if not isinstance(value, (LocalType, Shard)):
            return CollectiveArgumentError(
                f"{call}: {name}= must be one of R, I, V, P or S(dim) from spmd_types, got {value!r}"
            )
    assert isinstance(src, (LocalType, Shard)) and isinstance(dst, (LocalType, Shard))
    outcome = check_call(call, group.label, None, src, dst)
    if not outcome.violations:  # pragma: no cover - the core allows what it routes
        return CollectiveArgumentError(f"{call}: src={src.code}, dst={dst.code} has no route")
    return CollectiveArgumentError.from_violation(call, outcome.violations[0])


def run(
    steps: Plan,
    x: torch.Tensor,
    group: Group,
    a: int = 0,
    b: int = 0,
    extra: Any = None,
    extra_back: Any = None,
    precision: Precision | None = None,
) -> torch.Tensor:
    """Run a plan's primitives on ``x`` in order.

    ``precision`` applies to the plan's communication, its last step (a
    collective's plan communicates once, last).  A plan that does not
    communicate only casts its result to ``out`` (autograd casts the gradient
    back).
    """
    if precision is None:
        for prim in steps:
            x = _apply(x, prim, group, a, b, extra, extra_back, None)
        return x
    last = steps[-1] if steps and steps[-1].key[0] in _COMMUNICATING else None
    for prim in steps if last is None else steps[:-1]:
        x = _apply(x, prim, group, a, b, extra, extra_back, None)
    if last is not None:
        return _apply(x, last, group, a, b, extra, extra_back, precision)
    return x if precision[1] is None else x.to(precision[1])
