"""The layout rules of ``S(i)`` hold on simulated ranks, and never guess where the rank decides.

A claim ``S(d)`` about an op's result holds when the ranks' local results,
concatenated along ``d``, equal the op applied to the global operands (each
sharded operand being the concatenation of its ranks' pieces along its own
dim).  A :class:`Broken` verdict holds when no dim at all assembles the
global result.  Every op of the table is run this way for ranks 1 to 4, every
sharded dim (written from the front and from the back) and two ranks per axis.
Where the rank is not given, the answer must be ``V`` or the one the known
rank gives, for every rank the call is valid at.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from spmd_types.typesystem.shard_dims import Broken, LayoutCall, result_dim, same_dim

torch = pytest.importorskip("torch")
F = torch.nn.functional

RANKS = 2  # ranks on the mesh axis
SIZES = (4, 3, 2, 5)  # global sizes of dims 0..3; a sharded dim gets RANKS * its size


@dataclass(frozen=True)
class Case:
    """An op called on one tensor of rank ``ndim`` (and others, made by ``extra``)."""

    op: str
    run: Callable[..., object]
    args: dict[str, object] = field(default_factory=dict)
    ranks: tuple[int, ...] = (1, 2, 3, 4)
    extra: Callable[[int], Sequence[tuple[str, object]]] = lambda ndim: ()
    """Further operands for a tensor of rank ``ndim``: (parameter, replicated tensor or number)."""
    param: str = "input"
    claims: bool = True
    """Whether the rules place the shard anywhere for some rank (else the result is always ``V``)."""


def _unary(op: str, run: Callable[..., object], ranks: tuple[int, ...] = (1, 2, 3, 4), **args: object) -> Case:
    return Case(op, run, dict(args), ranks)


CASES: tuple[Case, ...] = (
    _unary("torch.exp", torch.exp),
    _unary("torch.Tensor.transpose", lambda x: x.transpose(0, 1), (2, 3, 4), dim0=0, dim1=1),
    _unary("torch.Tensor.transpose", lambda x: x.transpose(-1, 0), (2, 3, 4), dim0=-1, dim1=0),
    _unary("torch.Tensor.t", lambda x: x.t(), (1, 2)),
    _unary("torch.Tensor.T", lambda x: x.permute(*reversed(range(x.dim())))),
    _unary("torch.Tensor.mT", lambda x: x.mT, (2, 3, 4)),
    _unary("torch.Tensor.permute", lambda x: x.permute(2, 0, 1), (3,), dims=(2, 0, 1)),
    _unary("torch.Tensor.permute", lambda x: x.permute(1, 3, 0, 2), (4,), dims=(1, 3, 0, 2)),
    _unary("torch.movedim", lambda x: torch.movedim(x, 0, -1), (2, 3, 4), source=0, destination=-1),
    _unary("torch.movedim", lambda x: torch.movedim(x, (0, 1), (2, 0)), (3, 4), source=(0, 1),
           destination=(2, 0)),
    _unary("torch.Tensor.unsqueeze", lambda x: x.unsqueeze(0), dim=0),
    _unary("torch.Tensor.unsqueeze", lambda x: x.unsqueeze(-1), dim=-1),
    _unary("torch.Tensor.unsqueeze", lambda x: x.unsqueeze(1), dim=1),
    _unary("torch.Tensor.flatten", lambda x: x.flatten()),
    _unary("torch.Tensor.flatten", lambda x: x.flatten(0, 1), (2, 3, 4), start_dim=0, end_dim=1),
    _unary("torch.Tensor.flatten", lambda x: x.flatten(1), (2, 3, 4), start_dim=1),
    # Sizes are per-rank; the global call has the sharded factor times the axis size, which -1 says for both.
    _unary("torch.Tensor.unflatten", lambda x: x.unflatten(0, (-1, 2)), dim=0, sizes=(-1, 2)),
    _unary("torch.Tensor.unflatten", lambda x: x.unflatten(-1, (-1, 1)), dim=-1, sizes=(-1, 1)),
    _unary("torch.Tensor.sum", lambda x: x.sum(0), dim=0),
    _unary("torch.Tensor.sum", lambda x: x.sum(-1, keepdim=True), dim=-1, keepdim=True),
    _unary("torch.Tensor.mean", lambda x: x.mean((0, -1)), (2, 3, 4), dim=(0, -1)),
    Case("torch.Tensor.sum", lambda x: x.sum(), claims=False),
    _unary("torch.softmax", lambda x: torch.softmax(x, -1), dim=-1),
    _unary("torch.Tensor.cumsum", lambda x: x.cumsum(0), dim=0),
    _unary("torch.Tensor.select", lambda x: x.select(0, 1), dim=0, index=1),
    _unary("torch.Tensor.narrow", lambda x: x.narrow(-1, 0, 1), dim=-1, start=0, length=1),
    _unary("torch.Tensor.flip", lambda x: x.flip(0), dims=0),
    _unary("torch.Tensor.__getitem__", lambda x: x[0], indices=0),
    _unary("torch.Tensor.__getitem__", lambda x: x[:, None], (1, 2, 3, 4), indices=(slice(None), None)),
    _unary("torch.Tensor.__getitem__", lambda x: x[..., 0], indices=(Ellipsis, 0)),
    _unary("torch.Tensor.__getitem__", lambda x: x[None, ..., :1], indices=(None, Ellipsis, slice(None, 1))),
    _unary("torch.Tensor.chunk", lambda x: x.chunk(2, -1)[0], chunks=2, dim=-1),
    _unary("torch.Tensor.unbind", lambda x: x.unbind(0)[0], dim=0),
    _unary("torch.Tensor.squeeze", lambda x: x.squeeze(0), dim=0),
    _unary("torch.nn.functional.gelu", F.gelu),
    Case("torch.Tensor.__add__", lambda x, y: x + y, extra=lambda n: (("other", 2.0),)),
    Case("torch.Tensor.__mul__", lambda x, y: x * y, extra=lambda n: (("other", torch.rand(SIZES[n - 1])),)),
    Case("torch.Tensor.__mul__", lambda x, y: x * y, extra=lambda n: (("other", torch.rand(2, *[1] * n)),)),
    Case("torch.where", lambda c, x: torch.where(c, x, 0.0), param="input",
         extra=lambda n: (("condition", None),)),
    Case("torch.nn.functional.linear", lambda x, w: F.linear(x, w),
         extra=lambda n: (("weight", torch.rand(6, SIZES[n - 1])),)),
    Case("torch.nn.functional.linear", lambda w, x: F.linear(x, w), ranks=(2,), param="weight",
         extra=lambda n: (("input", torch.rand(3, 3, SIZES[1])),)),
    Case("torch.Tensor.__matmul__", lambda x, w: x @ w,
         extra=lambda n: (("other", torch.rand(SIZES[n - 1], 6)),)),
    Case("torch.Tensor.__matmul__", lambda x, w: x @ w,
         extra=lambda n: (("other", torch.rand(SIZES[n - 1])),)),
    Case("torch.Tensor.__matmul__", lambda w, x: x @ w, ranks=(1, 2, 3), param="other",
         extra=lambda n: (("input", torch.rand(3, SIZES[n - 2] if n >= 2 else SIZES[0])),)),
    Case("torch.Tensor.__rmatmul__", lambda w, x: x @ w, ranks=(1, 2, 3), param="input",
         extra=lambda n: (("other", torch.rand(3, SIZES[n - 2] if n >= 2 else SIZES[0])),)),
    Case("torch.einsum", lambda x, w: torch.einsum("abc,cd->abd", x, w), ranks=(3,), param="args",
         args={"equation": "abc,cd->abd"}, extra=lambda n: (("args", torch.rand(SIZES[2], 6)),)),
)


def _global_shape(ndim: int, dim: int) -> list[int]:
    shape = list(SIZES[:ndim])
    shape[dim] *= RANKS
    return shape


def _operands(case: Case, ndim: int, dim: int) -> tuple[object, list[object], list[object], tuple[str, ...]]:
    """The global sharded tensor, the ranks' pieces, the other operands, and every operand's parameter."""
    x = torch.rand(*_global_shape(ndim, dim))
    pieces = list(x.chunk(RANKS, dim))
    extras = list(case.extra(ndim))
    others = [torch.rand(*_global_shape(ndim, dim)) > 0.5 if value is None else value for _, value in extras]
    return x, pieces, others, (case.param, *(param for param, _ in extras))


def _first_tensor(out: object) -> object:
    return out[0] if isinstance(out, (tuple, list)) else out


def _verdict(case: Case, written: int, known: bool, pieces: Sequence[object], others: Sequence[object],
             params: tuple[str, ...]) -> int | Broken | None:
    """What the rules say of the result, given the operands' ranks and shapes (``known``) or not."""
    shapes = (tuple(pieces[0].shape), *(tuple(o.shape) if isinstance(o, torch.Tensor) else () for o in others))
    ranks = tuple(len(s) for s in shapes)
    call = LayoutCall(case.args, params, ranks if known else (None,) * len(ranks),
                      shapes if known else (None,) * len(ranks))
    sharded = {0: written}
    if case.op == "torch.where":  # the condition is the first operand
        order = [1, 0]
        call = LayoutCall(case.args, (params[1], params[0]), tuple(call.ranks[k] for k in order),
                          tuple(call.shapes[k] for k in order))
        sharded = {1: written}
    return result_dim(case.op, sharded, call)


def _run(case: Case, x: object, others: Sequence[object]) -> object:
    if case.op == "torch.where":
        return case.run(*others, x)
    return case.run(x, *others)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.op}{sorted(c.args.items())}")
def test_claims_hold_on_simulated_ranks(case: Case) -> None:
    torch.manual_seed(0)
    checked = 0
    for ndim in case.ranks:
        for dim in range(ndim):
            x, pieces, others, params = _operands(case, ndim, dim)
            try:
                expected = _first_tensor(_run(case, x, others))
                results = [_first_tensor(_run(case, piece, _local(others, dim, r))) for r, piece in enumerate(pieces)]
            except RuntimeError:
                continue  # the other operands' sizes fit one of the two: the op is not defined for both
            assembles = [d for d in range(expected.dim()) if _assembles(results, d, expected)]
            for written in (dim, dim - ndim):
                where = f"{case.op} rank {ndim} S({written})"
                verdict = _verdict(case, written, True, pieces, others, params)
                if isinstance(verdict, int):
                    assert verdict % max(expected.dim(), 1) in assembles, f"{where}: claimed S({verdict})"
                    checked += 1
                elif isinstance(verdict, Broken):
                    assert not assembles, f"{where}: broken, yet dims {assembles} assemble"
                    checked += 1
                unknown = _verdict(case, written, False, pieces, others, params)
                if isinstance(unknown, int):
                    assert unknown % max(expected.dim(), 1) in assembles, f"{where}, rank not given: S({unknown})"
    assert bool(checked) == case.claims, f"{checked} claims checked"


def _local(others: Sequence[object], dim: int, rank: int) -> list[object]:
    """A rank's view of the other operands: a condition mask is sharded like the data, the rest replicated."""
    return [o.chunk(RANKS, dim)[rank] if isinstance(o, torch.Tensor) and o.dtype == torch.bool else o
            for o in others]


def _assembles(results: Sequence[object], dim: int, expected: object) -> bool:
    try:
        whole = torch.cat(list(results), dim)
    except RuntimeError:
        return False
    return whole.shape == expected.shape and torch.allclose(whole, expected)


def test_reshape_follows_the_outer_factor() -> None:
    shape = (2, 3, 4)
    assert result_dim("torch.Tensor.view", {0: 0}, LayoutCall({"shape": (-1, 4)}, shapes=(shape,))) == 0
    assert result_dim("torch.Tensor.view", {0: 1}, LayoutCall({"shape": (2, 12)}, shapes=(shape,))) == 1
    broken = result_dim("torch.Tensor.view", {0: 1}, LayoutCall({"shape": (6, 4)}, shapes=(shape,)))
    assert isinstance(broken, Broken) and "sharded dim 1" in broken.reason
    assert result_dim("torch.Tensor.reshape", {0: 2}, LayoutCall({"shape": (2, 3, 2, 2)}, shapes=(shape,))) == 2
    assert result_dim("torch.Tensor.view", {0: 0}, LayoutCall({"shape": (-1, 4)})) is None  # shape not known


def test_unknown_ranks_give_v_where_the_rank_decides() -> None:
    assert result_dim("torch.Tensor.transpose", {0: -1}, LayoutCall({"dim0": 0, "dim1": 1})) is None
    assert result_dim("torch.Tensor.transpose", {0: 0}, LayoutCall({"dim0": 0, "dim1": 1})) == 1
    assert result_dim("torch.Tensor.T", {0: 0}, LayoutCall()) == -1
    assert result_dim("torch.Tensor.__add__", {0: 0}, LayoutCall(ranks=(None, None))) is None
    assert result_dim("torch.Tensor.__add__", {0: -2}, LayoutCall(ranks=(None, None))) == -2
    assert result_dim("torch.exp", {0: 0}, LayoutCall()) == 0
    assert result_dim("torch.nonzero_op_not_in_the_table", {0: 0}, LayoutCall()) is None


def test_same_dim() -> None:
    assert same_dim(0, 0) and same_dim(-1, -1)
    assert same_dim(0, 1) is False
    assert same_dim(-1, 2) is None
    assert same_dim(-1, 2, ndim=3) is True
    assert same_dim(-1, 1, ndim=3) is False


def test_the_join_follows_shards() -> None:
    from spmd_types.typesystem import Code, Operand, OpOutcome, apply_op, check_fits, lookup, parse

    x = Operand("input", parse("dp:R, tp:S(0)"))
    transposed = apply_op(lookup("torch.Tensor.transpose"), [x], op="torch.Tensor.transpose",
                          args={"dim0": 0, "dim1": 1})
    assert transposed.result == parse("dp:R, tp:S(1)")
    assert [v.code for v in check_fits(transposed.result, parse("dp:R, tp:S(0)"))] == [Code.BOUNDARY]
    # Without the op's name or arguments the shard is only known to vary.
    assert apply_op(lookup("torch.Tensor.transpose"), [x]).result == parse("dp:R, tp:V")
    # A merge that scrambles the sharded dim leaves per-rank data that is correct to compute with: V.
    merged = apply_op(lookup("torch.Tensor.flatten"), [Operand("input", parse("tp:S(1)"))],
                      op="torch.Tensor.flatten", args={"start_dim": 0, "end_dim": 1})
    assert merged == OpOutcome(parse("tp:V"))
    # A V operand beside a shard: per-rank data assembled in no known way.
    other = Operand("other", parse("dp:R, tp:V"))
    mixed = apply_op(lookup("torch.Tensor.__add__"), [x, other], op="torch.Tensor.__add__")

    assert mixed.result == parse("dp:R, tp:V")
