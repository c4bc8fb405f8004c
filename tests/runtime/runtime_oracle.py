"""What every runtime call must compute, written independently of the runtime.

A *case* is one call with concrete ``src``/``dst`` (and dims); the cases are
generated from the rule core's ``CALLS`` table, so a new allowed pair is tested
as soon as it appears there.

Semantics.  On one mesh axis of ``n`` ranks a value is the list of the ranks'
local tensors, and its type says what that list denotes (its global value):

* ``R``, ``I``: the ranks hold equal tensors; the value is that tensor;
* ``V``: the value is the list itself (represented stacked along a new dim 0);
* ``S(i)``: the value is the concatenation along dim ``i``;
* ``P``: the value is the sum over the ranks.

A gradient has the dual type (``R`` <-> ``P``, ``I``, ``V``, ``S(i)`` unchanged).

Checks made for every case, on every group of ranks of the axis:

1. Forward: each rank's output equals :func:`expected` (per-rank semantics
   written with plain list operations).
2. Type validity: ``R``/``I`` outputs, and ``R``/``I`` gradients (the gradient
   of ``P``, ``I`` inputs), are equal on every rank of the group.
3. Adjoint identity.  Every call is linear, so with ``A`` the forward and
   ``A*`` what the runtime's backward computes, ``<A*(g), x> = <g, A(x)>`` must
   hold for the input ``x`` (of type ``T_in``) and the cotangent ``g`` (of type
   ``dual(T_out)``).  The pairing of a value ``v`` of type ``T`` with a
   cotangent ``c`` of type ``dual(T)`` is the inner product of their global
   values: for ``T = P`` (``c`` is ``R``) it is ``<c, sum_k v_k>``, for ``T = R``
   (``c`` is ``P``) ``<sum_k c_k, v>``, which both equal ``sum_k <c_k, v_k>``
   because the replicated side is equal on every rank; ``V`` and ``S(i)`` pair
   rank by rank, ``sum_k <c_k, v_k>``; ``I`` is counted once, ``<c_0, v_0>``
   (an invariant gradient is one value, not ``n`` summands).  Getting the
   backward of an ``I`` type wrong by a factor ``n`` (a missing or extra
   reduction) breaks this identity.
4. Single-device reference.  The global function ``f`` (denotation of the
   output as a function of the denotation of the input) is evaluated on one
   device with plain autograd, at the input's global value and with the
   cotangent's global value; its gradient must equal the global value of the
   runtime's per-rank gradients.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

import spmd_types as spmd
from spmd_types import I, P, R, S, Shard, V
from spmd_types.typesystem import CALLS, gradient_type

DTYPE = torch.float64
_BY_CODE = {"R": R, "I": I, "V": V, "P": P}


# -- cases --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    call: str
    src: Any
    dst: Any
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def id(self) -> str:
        extra = "".join(f",{k}={v}" for k, v in self.kwargs)
        return f"{self.call}({self.src.code}->{self.dst.code}{extra})"

    def kw(self) -> dict[str, Any]:
        return dict(self.kwargs)

    def perm(self, n: int) -> list[tuple[int, int]]:
        kind = self.kw()["perm"]
        if kind == "ring":
            return [(k, (k + 1) % n) for k in range(n)]
        if kind == "partial":  # one sender, one receiver; everyone else gets zeros
            return [(0, n - 1)]
        raise AssertionError(kind)

    def apply(self, x: torch.Tensor, axis: Any, n: int) -> torch.Tensor:
        fn = getattr(spmd, self.call)
        if self.call == "ppermute":
            return fn(x, axis, self.perm(n))
        kw = {k: v for k, v in self.kwargs if k != "perm"}
        return fn(x, axis, src=self.src, dst=self.dst, **kw)


def shape(n: int) -> tuple[int, ...]:
    """Per-rank input shape of the table cases: every dim divisible by n, dims 0 and 2 equal n."""
    return (n, 2 * n, n)


def _instances(kind: str, side: str) -> tuple[Any, ...]:
    if kind == "S":
        return (S(0), S(-1)) if side == "src" else (S(1), S(0))
    return (_BY_CODE[kind],)


def _variants(call: str, src: Any, dst: Any) -> list[dict[str, Any]]:
    src_v, dst_v = src is V, dst is V
    if call == "all_reduce":
        return [{}, {"op": "avg"}]
    if call == "all_gather" and src_v:
        return [{}, {"gather_dim": 2}]
    if call == "reduce_scatter" and dst_v:
        return [{}, {"scatter_dim": 2}]
    if call == "all_to_all":
        if src_v and dst_v:
            return [{}, {"split_dim": 2, "concat_dim": 1}]
        if src_v and isinstance(dst, Shard) and dst.dim == 0:
            return [{"concat_dim": 2}]
        if dst_v and isinstance(src, Shard) and src.dim == 0:
            return [{"split_dim": 2}]
    if call == "ppermute":
        return [{"perm": "ring"}, {"perm": "partial"}]
    return [{}]


def table_cases() -> list[Case]:
    """Every call x every allowed (src, dst) pair of the core's table, with dim variants."""
    cases = []
    for call, spec in CALLS.items():
        for src_kind, dst_kind in spec.pairs:
            for src in _instances(src_kind, "src"):
                for dst in _instances(dst_kind, "dst"):
                    for kw in _variants(call, src, dst):
                        cases.append(Case(call, src, dst, tuple(sorted(kw.items()))))
    return cases


# -- per-rank semantics (independent of the runtime) ----------------------------------


def _sum(xs: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.stack(list(xs)).sum(0)


def _redistribute_as(src: Any, dst: Any) -> str:
    """Which call redistribute means, written out here independently of the rule core and the runtime."""
    varying = lambda t: t is V or isinstance(t, Shard)  # noqa: E731
    if src == dst or (varying(src) and varying(dst) and not (isinstance(src, Shard) and isinstance(dst, Shard))):
        return "identity"
    if varying(src) and dst in (R, I):
        return "all_gather"
    if src is P:
        return "all_reduce" if dst in (R, I) else "reduce_scatter"
    if isinstance(src, Shard) and isinstance(dst, Shard):
        return "all_to_all"
    if src in (R, I) and dst in (R, I):
        return "reinterpret"
    return "convert"


def expected(case: Case, xs: Sequence[torch.Tensor], n: int) -> list[torch.Tensor]:
    """The outputs of ``case`` on one group of ranks, from the inputs ``xs`` (in axis order)."""
    call, src, dst, kw = case.call, case.src, case.dst, case.kw()
    if call == "redistribute":
        call, kw = _redistribute_as(src, dst), {}
    if call in ("identity", "reinterpret"):
        return [x.clone() for x in xs]
    if call == "all_reduce":
        total = _sum(xs)
        op = kw.get("op", "sum")
        if op == "avg":
            total = total / n
        elif op == "max":
            total = torch.stack(list(xs)).amax(0)
        elif op == "min":
            total = torch.stack(list(xs)).amin(0)
        return [total.clone() for _ in range(n)]
    if call == "all_gather":
        if isinstance(src, Shard):
            g = torch.cat(list(xs), dim=src.dim)
        else:
            g = torch.stack(list(xs), dim=kw.get("gather_dim") or 0)
        return [g.clone() for _ in range(n)]
    if call == "reduce_scatter":
        total = _sum(xs)
        if isinstance(dst, Shard):
            sizes = kw.get("split_sizes")
            parts = total.split(list(sizes), dim=dst.dim) if sizes else total.chunk(n, dim=dst.dim)
            return [p.clone() for p in parts]
        b = kw.get("scatter_dim") or 0
        return [total.select(b, k).clone() for k in range(n)]
    if call == "all_to_all":
        a, b = kw.get("concat_dim") or 0, kw.get("split_dim") or 0
        if src is V and dst is V:
            return [torch.stack([x.select(b, k) for x in xs], dim=a) for k in range(n)]
        if isinstance(src, Shard) and isinstance(dst, Shard):
            # rank k receives chunk k (along dst's dim) of every rank, joined along src's dim
            return [torch.cat([x.chunk(n, dim=dst.dim)[k] for x in xs], dim=src.dim) for k in range(n)]
        whole = torch.cat(list(xs), dim=src.dim) if isinstance(src, Shard) else torch.stack(list(xs), dim=a)
        if isinstance(dst, Shard):
            return [c.clone() for c in whole.chunk(n, dim=dst.dim)]
        return [c.clone() for c in whole.unbind(b)]
    if call == "ppermute":
        out = [torch.zeros_like(x) for x in xs]
        for s, d in case.perm(n):
            out[d] = xs[s].clone()
        return out
    if call == "convert":
        return _convert(src, dst, xs, n, kw.get("split_sizes"))
    raise AssertionError(f"no reference semantics for {call}: add it to runtime_oracle.expected")


def _convert(src: Any, dst: Any, xs: Sequence[torch.Tensor], n: int, sizes: Sequence[int] | None) -> list[torch.Tensor]:
    if src in (R, I) and dst in (R, I):
        return [x.clone() for x in xs]
    if src in (R, I):
        if dst is V:
            return [xs[k].select(0, k).clone() for k in range(n)]
        if isinstance(dst, Shard):
            parts = lambda x: x.split(list(sizes), dim=dst.dim) if sizes else x.chunk(n, dim=dst.dim)  # noqa: E731
            return [parts(xs[k])[k].clone() for k in range(n)]
        return [xs[0].clone()] + [torch.zeros_like(x) for x in xs[1:]]
    if src is V:
        return [torch.stack([xs[k] if j == k else torch.zeros_like(xs[k]) for j in range(n)]) for k in range(n)]
    lengths = list(sizes) if sizes else [xs[0].shape[src.dim]] * n
    out = []
    for k in range(n):
        blocks = []
        for j in range(n):
            if j == k:
                blocks.append(xs[k])
            else:
                blk_shape = list(xs[k].shape)
                blk_shape[src.dim] = lengths[j]
                blocks.append(xs[k].new_zeros(blk_shape))
        out.append(torch.cat(blocks, dim=src.dim))
    return out


# -- global values, pairing ---------------------------------------------------------


def denote(t: Any, vals: Sequence[torch.Tensor]) -> torch.Tensor:
    """The global value that per-rank ``vals`` of type ``t`` denote."""
    if t in (R, I):
        return vals[0]
    if t is P:
        return _sum(vals)
    if isinstance(t, Shard):
        return torch.cat(list(vals), dim=t.dim)
    return torch.stack(list(vals))


def canonical(t: Any, value: torch.Tensor, n: int, sizes: Sequence[int] | None = None) -> list[torch.Tensor]:
    """Per-rank tensors of type ``t`` denoting ``value`` (differentiable in ``value``)."""
    if t in (R, I):
        return [value] * n
    if t is P:
        return [value] + [torch.zeros_like(value)] * (n - 1)
    if isinstance(t, Shard):
        return list(value.split(list(sizes), dim=t.dim) if sizes else value.chunk(n, dim=t.dim))
    return list(value.unbind(0))


def pair(t: Any, cot: Sequence[torch.Tensor], vals: Sequence[torch.Tensor]) -> torch.Tensor:
    """Inner product of a value of type ``t`` with a cotangent of type ``dual(t)`` (see module doc)."""
    if t is I:
        return (cot[0] * vals[0]).sum()
    return sum(((c * v).sum() for c, v in zip(cot, vals)), torch.zeros((), dtype=DTYPE))


# -- data -----------------------------------------------------------------------------


def _gen(*key: object) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def make_values(t: Any, groups: Sequence[Sequence[int]], shapes: dict[int, tuple[int, ...]], tag: object) -> dict[int, torch.Tensor]:
    """Random per-rank tensors valid for type ``t``: equal within a group for ``R``/``I``."""
    out: dict[int, torch.Tensor] = {}
    for gi, members in enumerate(groups):
        for pos, rank in enumerate(members):
            who = (gi,) if t in (R, I) else (gi, pos)
            out[rank] = torch.randn(shapes[rank], generator=_gen(tag, who), dtype=DTYPE)
    return out


@dataclass
class Trial:
    """Everything about one case on one axis: inputs, cotangents, expectations, results."""

    case: Case
    n: int
    groups: list[list[int]]
    xs: dict[int, torch.Tensor]
    gs: dict[int, torch.Tensor]
    want: dict[int, torch.Tensor]
    ys: dict[int, torch.Tensor] | None = None
    grads: dict[int, torch.Tensor] | None = None


def prepare(
    case: Case, groups: list[list[int]], shape_at: Callable[[int], tuple[int, ...]] | None = None
) -> Trial:
    """Inputs, cotangents and expected outputs of ``case``; ``shape_at(index on the axis)`` gives input shapes."""
    n = len(groups[0])
    shapes = {r: shape_at(pos) if shape_at else shape(n) for g in groups for pos, r in enumerate(g)}
    ranks = [r for g in groups for r in g]
    xs = make_values(case.src, groups, shapes, (case.id, "x"))
    want: dict[int, torch.Tensor] = {}
    for members in groups:
        for rank, y in zip(members, expected(case, [xs[r] for r in members], n)):
            want[rank] = y
    gs = make_values(gradient_type(case.dst), groups, {r: tuple(want[r].shape) for r in ranks}, (case.id, "g"))
    return Trial(case, n, groups, xs, gs, want)


def noncontiguous(t: torch.Tensor) -> torch.Tensor:
    """The same values with transposed strides (non-contiguous when t has 2+ dims)."""
    if t.dim() < 2:
        return t.clone()
    return t.transpose(0, -1).contiguous().transpose(0, -1)


# -- checks ---------------------------------------------------------------------------


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-9, atol=1e-9))


def check(trial: Trial) -> None:
    """Checks 1-4 of the module docstring; raises AssertionError with the failing rank/group."""
    case, n = trial.case, trial.n
    assert trial.ys is not None and trial.grads is not None
    t_in, t_out = case.src, case.dst
    g_in = gradient_type(t_in)
    lhs = torch.zeros((), dtype=DTYPE)
    rhs = torch.zeros((), dtype=DTYPE)
    for members in trial.groups:
        xs = [trial.xs[r] for r in members]
        ys = [trial.ys[r] for r in members]
        gs = [trial.gs[r] for r in members]
        grads = [trial.grads[r] for r in members]
        for rank, y in zip(members, ys):
            assert _close(y, trial.want[rank]), (
                f"{case.id}: forward on rank {rank} (group {members}):\n got {y}\n want {trial.want[rank]}"
            )
        for label, t, vals in (("output", t_out, ys), ("gradient", g_in, grads)):
            if t in (R, I):
                for rank, v in zip(members[1:], vals[1:]):
                    assert _close(v, vals[0]), f"{case.id}: {label} is {t.code} but rank {rank} differs in {members}"
        for rank, gx, x in zip(members, grads, xs):
            assert gx.shape == x.shape, f"{case.id}: gradient shape {tuple(gx.shape)} on rank {rank}, input {tuple(x.shape)}"
        lhs = lhs + pair(t_in, grads, xs)
        rhs = rhs + pair(t_out, gs, ys)
        # single-device reference
        sizes = case.kw().get("split_sizes")
        x_global = denote(t_in, xs).detach().requires_grad_()
        y_global = denote(t_out, expected(case, canonical(t_in, x_global, n, sizes), n))
        (ref,) = torch.autograd.grad(y_global, x_global, denote(gradient_type(t_out), gs), allow_unused=True)
        if ref is None:
            ref = torch.zeros_like(x_global)
        got = denote(g_in, grads)
        assert _close(got, ref), f"{case.id}: gradient of group {members} differs from the single-device reference:\n got {got}\n want {ref}"
    assert torch.allclose(lhs, rhs, rtol=1e-9, atol=1e-9), f"{case.id}: adjoint identity fails: <A*g, x> = {lhs}, <g, Ax> = {rhs}"


# -- running under LocalTensorMode ----------------------------------------------------


def local_values(t: torch.Tensor) -> dict[int, torch.Tensor]:
    return {r: v.detach().clone() for r, v in t._local_tensors.items()}  # type: ignore[attr-defined]


def run_simulated(
    trial: Trial,
    world: int,
    mesh: Any,
    axis: Any,
    layout: Callable[[torch.Tensor], torch.Tensor] = noncontiguous,
) -> Trial:
    """Run the case on every simulated rank (LocalTensorMode), forward and backward."""
    from torch.distributed._local_tensor import LocalTensorMode

    with LocalTensorMode(world) as mode, spmd.set_current_mesh(mesh):
        x = mode.rank_map(lambda r: layout(trial.xs[r])).requires_grad_()
        y = trial.case.apply(x, axis, trial.n)
        y.backward(mode.rank_map(lambda r: layout(trial.gs[r])))
        trial.ys = local_values(y)
        trial.grads = local_values(x.grad) if x.grad is not None else {r: torch.zeros_like(v) for r, v in trial.xs.items()}
    return trial


def axis_groups(mesh: Any, name: str) -> list[list[int]]:
    """The groups of global ranks along mesh axis ``name``, each in axis order (from the mesh layout)."""
    ranks = mesh.mesh
    dim = mesh.mesh_dim_names.index(name)
    moved = ranks.movedim(dim, -1).reshape(-1, ranks.shape[dim])
    return [row.tolist() for row in moved]


def iter_ids(cases: Sequence[Case]) -> Iterator[str]:
    for c in cases:
        yield c.id
