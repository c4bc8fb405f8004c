"""The join rules are correct: a denotational check on simulated ranks.

Semantics (docs/type-system.md).  On one mesh axis of ``N`` ranks a value is a
list of per-rank tensors, and its type says what the list *denotes*:

* ``R`` and ``I``: the ranks hold equal tensors; the value is that tensor;
* ``V``: the value is the list itself;
* ``P``: the value is the sum over the ranks.

A gradient has the dual type (``R`` <-> ``P``, ``I`` -> ``I``, ``V`` -> ``V``).

An ordinary op ``f`` runs on every rank's local tensors.  When the core says
the result has type ``T``, that is a *claim*, and it holds when

* forward: the per-rank results, read as ``T``, denote ``f`` applied to the
  operands' values (for ``V``: rank by rank);
* backward: seeding each rank with a cotangent of type ``dual(T)``, every
  operand's per-rank local gradient, read as ``dual(T_k)``, denotes the true
  gradient of the global function at the operands' values.

Every combination the core accepts must satisfy its claim; every combination
it rejects must fail *all four* claims ``R``, ``I``, ``V``, ``P``: no type
could have made it right, so the rejection is never a false alarm.  (Rejected
combinations with a zero operand are skipped: ``lerp(a, b, 0)`` is ``a``
whatever ``b`` is, so a zero can hide the term that makes the op wrong.)  This
tests that the rules are correct, for a representative op of every linearity
class.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from spmd_types.typesystem import (  # noqa: E402
    WEAK,
    ZERO,
    Constant,
    I,
    Operand,
    P,
    R,
    SpmdType,
    V,
    apply_op,
    lookup,
)

N = 3  # ranks on the axis: odd, so that "counted N times" never coincides with 2x
DATA_KINDS = (R, I, V, P, WEAK, ZERO)
SELECTOR_KINDS = (R, V)  # integer and boolean tensors: no gradient, never a pending sum
DTYPE = torch.float64


@dataclass(frozen=True)
class Arg:
    """One operand of an op under test: its parameter name, shape, and what it holds."""

    param: str
    shape: tuple[int, ...]
    role: str = "data"  # "data", "positive" (a divisor), "fraction", "mask", "index"

    @property
    def kinds(self) -> tuple:
        if self.role in ("mask", "index"):
            return SELECTOR_KINDS
        if self.role == "positive":  # a divisor: never zero
            return tuple(k for k in DATA_KINDS if k is not ZERO)
        return DATA_KINDS


@dataclass(frozen=True)
class OpCase:
    op: str  # key of the op table
    args: tuple[Arg, ...]
    fn: Callable[..., object]

    def __str__(self) -> str:
        return self.op.replace("torch.", "")


def _index(*shape: int) -> Arg:
    return Arg("index", shape, "index")


CASES = [
    OpCase("torch.Tensor.__add__", (Arg("input", (2, 3)), Arg("other", (2, 3))), lambda a, b: a + b),
    OpCase("torch.Tensor.__rsub__", (Arg("input", (2, 3)), Arg("other", (2, 3))), lambda a, b: b - a),
    OpCase("torch.Tensor.__neg__", (Arg("input", (2, 3)),), lambda a: -a),
    OpCase("torch.sum", (Arg("input", (2, 3)),), lambda a: a.sum(0)),
    OpCase("torch.cat", (Arg("tensors", (2, 3)),) * 3, lambda a, b, c: torch.cat([a, b, c])),
    OpCase("torch.Tensor.__mul__", (Arg("input", (2, 3)), Arg("other", (2, 3))), lambda a, b: a * b),
    OpCase("torch.Tensor.__matmul__", (Arg("input", (2, 3)), Arg("other", (3, 4))), lambda a, b: a @ b),
    OpCase("torch.einsum", (Arg("args", (2, 3)),) * 3, lambda a, b, c: torch.einsum("ij,ij,ij->j", a, b, c)),
    OpCase("torch.Tensor.__truediv__", (Arg("input", (2, 3)), Arg("other", (2, 3), "positive")),
           lambda a, b: a / b),
    OpCase("torch.addmm", (Arg("input", (2, 4)), Arg("mat1", (2, 3)), Arg("mat2", (3, 4))), torch.addmm),
    OpCase("torch.nn.functional.linear", (Arg("input", (2, 3)), Arg("weight", (4, 3)), Arg("bias", (4,))),
           F.linear),
    OpCase("torch.lerp", (Arg("input", (2, 3)), Arg("end", (2, 3)), Arg("weight", (2, 3), "fraction")),
           torch.lerp),
    OpCase("torch.where", (Arg("condition", (2, 3), "mask"), Arg("input", (2, 3)), Arg("other", (2, 3))),
           torch.where),
    OpCase("torch.masked_fill", (Arg("input", (2, 3)), Arg("mask", (2, 3), "mask"), Arg("value", ())),
           torch.masked_fill),
    OpCase("torch.index_select", (Arg("input", (4, 3)), _index(5)), lambda a, i: torch.index_select(a, 0, i)),
    OpCase("torch.Tensor.__getitem__", (Arg("input", (4, 3)), Arg("indices", (5,), "index")),
           lambda a, i: a[i]),
    OpCase("torch.exp", (Arg("input", (2, 3)),), torch.exp),
    OpCase("torch.nn.functional.gelu", (Arg("input", (2, 3)),), F.gelu),
    OpCase("torch.atan2", (Arg("input", (2, 3)), Arg("other", (2, 3), "positive")), torch.atan2),
]


class Ranks:
    """Per-rank tensors of every operand of one case, and their denotations."""

    def __init__(self, case: OpCase, kinds: Sequence, seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.case, self.kinds = case, tuple(kinds)
        self.local: list[list[torch.Tensor]] = []  # [operand][rank]
        for arg, kind in zip(case.args, kinds):
            self.local.append(self._per_rank(arg, kind, gen))

    @staticmethod
    def _sample(arg: Arg, gen: torch.Generator) -> torch.Tensor:
        if arg.role == "mask":  # always both values, so that no choice degenerates to one branch
            mask = torch.rand(arg.shape, generator=gen) < 0.5
            mask.view(-1)[:2] = torch.tensor([True, False])
            return mask
        if arg.role == "index":
            return torch.randint(0, 4, arg.shape, generator=gen)
        x = torch.randn(arg.shape, generator=gen, dtype=DTYPE)
        if arg.role == "positive":
            return x.abs() + 1.0
        if arg.role == "fraction":
            return torch.sigmoid(x)
        return x

    def _per_rank(self, arg: Arg, kind, gen: torch.Generator) -> list[torch.Tensor]:
        if kind is ZERO:
            return [torch.zeros(arg.shape, dtype=DTYPE)] * N
        if kind in (R, I, WEAK):
            same = self._sample(arg, gen)
            return [same.clone() for _ in range(N)]
        return [self._sample(arg, gen) for _ in range(N)]

    def differentiable(self, k: int) -> bool:
        return self.kinds[k] in (R, I, V, P) and self.case.args[k].role not in ("mask", "index")


def _pair(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).sum()


def _close(a: torch.Tensor | None, b: torch.Tensor | None, like: torch.Tensor) -> bool:
    a = torch.zeros_like(like) if a is None else a
    b = torch.zeros_like(like) if b is None else b
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-9, atol=1e-9)


def claim_holds(ranks: Ranks, claim, seed: int) -> bool:
    """Whether the per-rank computation denotes ``f`` with result type ``claim``."""
    case, kinds = ranks.case, ranks.kinds
    gen = torch.Generator().manual_seed(seed + 1)
    per_rank_leaves = [[t.clone().requires_grad_(ranks.differentiable(k)) for t in ranks.local[k]]
                       for k in range(len(kinds))]
    outputs = [case.fn(*(per_rank_leaves[k][r] for k in range(len(kinds)))) for r in range(N)]

    # Global leaves: one value per operand, or one per rank for varying operands.
    def denote(k: int) -> torch.Tensor:
        return (sum(ranks.local[k]) if kinds[k] is P else ranks.local[k][0]).clone()

    varying = [kinds[k] is V for k in range(len(kinds))]
    if claim is not V and any(varying):
        return False  # a single global value cannot come from per-rank data
    shared = [denote(k).requires_grad_(ranks.differentiable(k)) if not varying[k] else None
              for k in range(len(kinds))]
    per_rank_global = [[ranks.local[k][r].clone().requires_grad_(ranks.differentiable(k)) for r in range(N)]
                       if varying[k] else None for k in range(len(kinds))]

    def global_args(r: int) -> list[torch.Tensor]:
        return [per_rank_global[k][r] if varying[k] else shared[k] for k in range(len(kinds))]

    like = outputs[0]
    if claim is V:
        cotangents = [torch.randn(like.shape, generator=gen, dtype=DTYPE) for _ in range(N)]
        truth = [case.fn(*global_args(r)) for r in range(N)]
        if not all(_close(outputs[r], truth[r], like) for r in range(N)):
            return False
        objective = sum(_pair(c, t) for c, t in zip(cotangents, truth))
    else:
        truth_value = case.fn(*global_args(0))
        forward = sum(outputs) if claim is P else outputs
        if claim is P and not _close(forward, truth_value, like):
            return False
        if claim in (R, I) and not all(_close(y, truth_value, like) for y in outputs):
            return False
        if claim is R:  # the gradient of R is P: per-rank parts whose sum is the cotangent
            cotangents = [torch.randn(like.shape, generator=gen, dtype=DTYPE) for _ in range(N)]
            cotangent = sum(cotangents)
        else:  # the gradient of P is R, of I is I: one cotangent, the same on every rank
            cotangent = torch.randn(like.shape, generator=gen, dtype=DTYPE)
            cotangents = [cotangent] * N
        objective = _pair(cotangent, truth_value)

    operands = [k for k in range(len(kinds)) if ranks.differentiable(k)]
    if not operands:
        return True
    local_grads = [
        torch.autograd.grad(_pair(cotangents[r], outputs[r]), [per_rank_leaves[k][r] for k in operands],
                            allow_unused=True)
        for r in range(N)
    ]
    global_inputs = [x for k in operands for x in (per_rank_global[k] if varying[k] else [shared[k]])]
    global_grads = iter(torch.autograd.grad(objective, global_inputs, allow_unused=True))
    for j, k in enumerate(operands):
        grads = [local_grads[r][j] for r in range(N)]
        shape_like = ranks.local[k][0]
        if kinds[k] is V:
            if not all(_close(grads[r], next(global_grads), shape_like) for r in range(N)):
                return False
            continue
        true = next(global_grads)
        if kinds[k] is R:  # gradient type P: the parts sum to the true gradient
            total = sum(torch.zeros_like(shape_like) if g is None else g for g in grads)
            if not _close(total, true, shape_like):
                return False
        elif not all(_close(g, true, shape_like) for g in grads):  # I, P: gradient type I, R
            return False
    return True


def _core_result(case: OpCase, kinds: Sequence):
    operands = []
    for arg, kind in zip(case.args, kinds):
        t = SpmdType(default=kind) if isinstance(kind, Constant) else SpmdType({"tp": kind})
        operands.append(Operand(arg.param, t))
    outcome = apply_op(lookup(case.op), operands)
    return outcome.result.get("tp"), outcome.violations


PARAMS = [
    pytest.param(case, kinds, id=f"{case}-{'-'.join(k.code for k in kinds)}")
    for case in CASES
    for kinds in itertools.product(*(arg.kinds for arg in case.args))
    if not (ZERO in kinds and _core_result(case, kinds)[1])  # see the module docstring
]


@pytest.mark.parametrize(("case", "kinds"), PARAMS)
def test_rules_are_denotationally_correct(case: OpCase, kinds):
    seed = zlib.crc32(f"{case}{kinds}".encode())
    ranks = Ranks(case, kinds, seed)
    result, violations = _core_result(case, kinds)
    if violations:
        holding = [claim for claim in (R, I, V, P) if claim_holds(ranks, claim, seed)]
        assert holding == [], f"rejected, yet computes a correct {holding} value and gradient"
    elif isinstance(result, Constant):
        assert all(torch.equal(case.fn(*(ranks.local[k][r] for k in range(len(kinds)))),
                               case.fn(*(ranks.local[k][0] for k in range(len(kinds)))))
                   for r in range(N))
    else:
        assert claim_holds(ranks, result, seed), f"accepted as {result}, but the value or gradient is wrong"


def test_every_linearity_class_is_covered():
    classes = {lookup(case.op).linearity for case in CASES}
    assert classes >= {"linear", "multilinear", "linear + multilinear", "non-linear"}
    assert any(lookup(case.op).nonlinear for case in CASES)
