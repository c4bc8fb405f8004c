"""Mixed precision: ``comm_dtype``, ``out_dtype``, ``grad_comm_dtype`` on simulated ranks and on gloo.

Each case runs a collective on ``float32`` inputs with a recording backend
(``set_dist``), forward and backward, and checks

* the wire: every collective the backend saw ran in the dtype asked for
  (forward ``comm_dtype``, backward ``grad_comm_dtype``, else the dtype at
  hand), and the output and gradient dtypes (``out_dtype`` or the input's;
  the gradient always in the input's);
* the values against the same call in ``float64`` without the options
  (the reference):

  - data movement (gathers, all-to-all, max) in ``bfloat16`` is exact up to
    rounding the input: the output equals the reference computed on the
    input rounded to ``bfloat16``, bit for bit;
  - a sum in ``bfloat16`` over ``n`` ranks is within
    ``2 * n * 2**-8 * A(|x|)`` of the exact sum element by element (``A`` the
    same call, applied to the absolute values: every summand and every
    partial sum is rounded with relative error at most ``2**-8``), and differs
    from the ``float32`` result (the sum really ran in ``bfloat16``);
  - whatever runs in ``float32`` matches the reference within
    ``rtol=1e-5, atol=1e-6``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V  # noqa: E402
from spmd_types._errors import CollectiveArgumentError  # noqa: E402
from tests.runtime.recording import Recorder, expected_calls  # noqa: E402

BF16, F32, F64 = torch.bfloat16, torch.float32, torch.float64
# Unit roundoff (round to nearest) of each dtype.
ROUNDOFF = {BF16: 2.0**-8, torch.float16: 2.0**-11, F32: 2.0**-24}


@dataclass(frozen=True)
class Case:
    call: str
    src: Any
    dst: Any
    dtypes: dict[str, Any]
    op: str = "sum"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        named = ",".join(f"{k}={str(v).removeprefix('torch.')}" for k, v in self.dtypes.items())
        return f"{self.call}({self.src.code}->{self.dst.code},{self.op},{named})"

    def apply(self, x: torch.Tensor, axis: Any, with_dtypes: bool = True) -> torch.Tensor:
        kwargs = {**self.extra, **(self.dtypes if with_dtypes else {})}
        if self.op != "sum":
            kwargs["op"] = self.op
        return getattr(spmd, self.call)(x, axis, src=self.src, dst=self.dst, **kwargs)

    def shape(self, n: int) -> tuple[int, ...]:
        return (n, 3 * n) if self.call == "reduce_scatter" and self.dst is V else (2 * n, 3 * n)

    @property
    def out_dtype(self) -> torch.dtype:
        return self.dtypes.get("out_dtype") or F32

    @property
    def differentiable(self) -> bool:
        return self.op not in ("max", "min")

    def comm_dtypes(self) -> tuple[torch.dtype, torch.dtype]:
        """The dtypes the forward and the backward communicate in."""
        return self.dtypes.get("comm_dtype") or F32, self.dtypes.get("grad_comm_dtype") or self.out_dtype

    def wire(self) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
        """Expected backend calls with their dtypes, forward and backward."""
        forward, back = expected_calls(self.call, self.src, self.dst, self.op)
        comm, grad_comm = self.comm_dtypes()
        return [(c, comm) for c in forward], [(c, grad_comm) for c in back]

    def sums(self) -> tuple[bool, bool]:
        """Whether the forward and the backward communication add the ranks' data."""
        summing = ("all_reduce", "reduce_scatter_single")
        forward, back = self.wire()
        adds = self.op in ("sum", "avg")
        return adds and any(c in summing for c, _ in forward), adds and any(c in summing for c, _ in back)


CASES = [
    # FSDP: gather parameters in bf16, reduce-scatter gradients in fp32.
    Case("all_gather", S(0), R, {"comm_dtype": BF16, "grad_comm_dtype": F32}),
    Case("all_gather", S(0), R, {"comm_dtype": BF16, "out_dtype": BF16, "grad_comm_dtype": F32}),
    Case("all_gather", S(1), R, {"comm_dtype": BF16}),
    Case("all_gather", V, I, {"comm_dtype": BF16, "out_dtype": BF16}),
    Case("all_gather", S(0), R, {"grad_comm_dtype": BF16}),
    Case("reduce_scatter", P, S(0), {"comm_dtype": BF16}),
    Case("reduce_scatter", P, S(1), {"comm_dtype": F32, "out_dtype": BF16, "grad_comm_dtype": F32}),
    Case("reduce_scatter", V, V, {"comm_dtype": BF16, "grad_comm_dtype": BF16}, extra={"scatter_dim": 0}),
    Case("all_reduce", P, R, {"comm_dtype": BF16, "grad_comm_dtype": BF16}),
    Case("all_reduce", P, I, {"comm_dtype": BF16, "out_dtype": BF16}),
    Case("all_reduce", V, R, {"comm_dtype": torch.float16, "grad_comm_dtype": F32}, op="avg"),
    Case("all_reduce", V, I, {"comm_dtype": BF16}, op="max"),
    Case("all_to_all", S(0), S(1), {"comm_dtype": BF16, "grad_comm_dtype": BF16}),
    Case("all_to_all", S(1), S(1), {"out_dtype": BF16, "grad_comm_dtype": F32}),
    Case("redistribute", S(0), R, {"comm_dtype": BF16, "grad_comm_dtype": F32}),
    Case("redistribute", P, S(0), {"comm_dtype": BF16}),
    # No communication in the forward: only out_dtype applies.
    Case("redistribute", R, S(0), {"comm_dtype": BF16, "out_dtype": BF16}),
]


def _reference(case: Case, xs: dict[int, torch.Tensor], gs: dict[int, torch.Tensor], mode: Any, mesh: Any,
               axis: str) -> tuple[dict[int, torch.Tensor], dict[int, torch.Tensor]]:
    """The call without dtype options in float64: outputs and gradients by rank."""
    with spmd.set_current_mesh(mesh):
        x = mode.rank_map(lambda r: xs[r].to(F64)).requires_grad_()
        y = case.apply(x, axis, with_dtypes=False)
        if not case.differentiable:
            return _local(y), {}
        y.backward(mode.rank_map(lambda r: gs[r].to(F64)))
        return _local(y), _local(x.grad)


def _local(t: torch.Tensor) -> dict[int, torch.Tensor]:
    return {r: v.detach().clone() for r, v in t._local_tensors.items()}


def _rounded(values: dict[int, torch.Tensor], dtype: torch.dtype) -> dict[int, torch.Tensor]:
    return {r: v.to(dtype).to(F32) for r, v in values.items()}


def _close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert torch.allclose(got.to(F64), want, rtol=1e-5, atol=1e-6), f"{what}: up to {(got.to(F64) - want).abs().max()}"


def _sum_within(got: torch.Tensor, exact: torch.Tensor, scale: torch.Tensor, n: int, comm: torch.dtype,
                what: str) -> None:
    """``got`` within the rounding bound of a sum of ``n`` terms in ``comm`` (then in ``got``'s dtype).

    ``scale`` is the same sum of the terms' absolute values.  When ``comm`` is
    coarser than float32 the result must also differ from the float32 sum:
    the sum really ran in ``comm``.
    """
    bound = 2 * n * (ROUNDOFF[comm] + ROUNDOFF[F32]) * scale + ROUNDOFF[got.dtype] * exact.abs()
    error = (got.to(F64) - exact).abs()
    assert bool((error <= bound + 1e-12).all()), f"{what}: error {float(error.max()):.3g} over the bound"
    if ROUNDOFF[comm] > ROUNDOFF[F32]:
        assert not torch.allclose(got.to(F64), exact, rtol=1e-5, atol=1e-6), f"{what}: not rounded as in {comm}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_precision_on_simulated_ranks(sim8, case: Case) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    axis, n = "tp", 4
    gen = torch.Generator().manual_seed(7)
    xs = {r: torch.randn(case.shape(n), generator=gen) for r in range(8)}
    if case.src in (R, I):  # replicated inputs: one value per group of the axis (ranks 0-3, 4-7)
        xs = {r: xs[r - r % n] for r in range(8)}
    rec = Recorder(spmd.get_dist())
    wire_forward, wire_backward = case.wire()
    with LocalTensorMode(8) as mode:
        with spmd.use_dist(rec), spmd.set_current_mesh(sim8.mesh):
            x = mode.rank_map(lambda r: xs[r].clone()).requires_grad_()
            y = case.apply(x, axis)
            assert rec.take_dtypes() == wire_forward
            assert y.dtype == case.out_dtype
            gs = {r: torch.randn(tuple(y.shape), generator=gen).to(y.dtype) for r in range(8)}
            if case.differentiable:
                y.backward(mode.rank_map(lambda r: gs[r].clone()))
                assert rec.take_dtypes() == wire_backward
                assert x.grad.dtype == F32
        ys = _local(y)
        grads = _local(x.grad) if case.differentiable else {}
        comm, grad_comm = case.comm_dtypes()
        # The data as the communication sees it: rounded to its dtype where there is communication.
        sent = _rounded(xs, comm) if wire_forward else xs
        sent_back = _rounded(gs, grad_comm) if wire_backward else gs
        want_y, want_g = _reference(case, sent, sent_back, mode, sim8.mesh, axis)
        exact_y, exact_g = _reference(case, xs, gs, mode, sim8.mesh, axis)
        scale_y, scale_g = _reference(case, {r: v.abs() for r, v in xs.items()}, {r: v.abs() for r, v in gs.items()},
                                      mode, sim8.mesh, axis)
    sums_forward, sums_backward = case.sums()
    for r in range(8):
        if sums_forward:
            _sum_within(ys[r], exact_y[r], scale_y[r], n, comm, f"{case.id} forward, rank {r}")
        else:  # moved data: exactly the rounded input, in the output dtype
            assert torch.equal(ys[r], want_y[r].to(case.out_dtype)), f"{case.id} forward, rank {r}"
        if not case.differentiable:
            continue
        if sums_backward:
            _sum_within(grads[r], exact_g[r], scale_g[r], n, grad_comm, f"{case.id} backward, rank {r}")
        else:
            assert torch.equal(grads[r].to(F64), want_g[r]), f"{case.id} backward, rank {r}"


# -- bad options ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, kwargs, pattern",
    [
        (F32, {"comm_dtype": "bf16"}, r"all_gather: comm_dtype must be a torch.dtype such as torch.bfloat16, got 'bf16'"),
        (F32, {"out_dtype": torch.int32}, r"all_gather: out_dtype=torch.int32 does not fit x of dtype torch.float32; "
                                          r"pass a floating-point dtype"),
        (F32, {"grad_comm_dtype": torch.complex64}, r"grad_comm_dtype=torch.complex64 does not fit"),
        (torch.complex64, {"comm_dtype": BF16}, r"comm_dtype=torch.bfloat16 does not fit x of dtype torch.complex64; "
                                                r"pass a complex dtype"),
        (torch.int64, {"comm_dtype": torch.int32}, r"all_gather: comm_dtype=, out_dtype= and grad_comm_dtype= are for "
                                                   r"floating-point data, but x is torch.int64"),
    ],
)
def test_dtype_options_are_checked(sim8, dtype, kwargs, pattern) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.ones(4, 2).to(dtype))
        with pytest.raises(CollectiveArgumentError, match=pattern):
            spmd.all_gather(x, "tp", src=S(0), dst=R, **kwargs)


def test_complex_data_in_a_lower_complex_precision(sim8) -> None:
    from torch.distributed._local_tensor import LocalTensorMode

    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh):
        x = mode.rank_map(lambda r: torch.complex(torch.arange(4.0) + r, -torch.arange(4.0)).to(torch.complex128))
        y = spmd.all_gather(x, "tp", src=S(0), dst=R, comm_dtype=torch.complex64)
        assert y.dtype == torch.complex128
        want = torch.cat([torch.complex(torch.arange(4.0) + k, -torch.arange(4.0)) for k in range(4)])
        assert torch.equal(y._local_tensors[1], want.to(torch.complex128))


# -- real processes ---------------------------------------------------------------------


def _fsdp_on_gloo(rank: int, world: int, mesh: Any) -> list[tuple[str, Any]]:
    """The FSDP pattern on real ranks: bf16 gather, fp32 reduce-scatter of the gradient; checked on every rank."""
    rec = Recorder(spmd.get_dist())
    with spmd.use_dist(rec), spmd.set_current_mesh(mesh):
        n, me = spmd.axis_size("tp"), spmd.axis_index("tp")

        def data(seed: int, *shape: int) -> list[torch.Tensor]:  # every rank's tensor, by index on the axis
            base = rank - me
            return [torch.randn(*shape, generator=torch.Generator().manual_seed(seed + base + k)) for k in range(n)]

        full = torch.randn(4 * n, 3, generator=torch.Generator().manual_seed(3))
        shard = full.chunk(n)[me].clone().requires_grad_()
        w = spmd.all_gather(shard, "tp", src=S(0), dst=R, comm_dtype=BF16, out_dtype=BF16, grad_comm_dtype=F32)
        assert w.dtype == BF16 and torch.equal(w, full.to(BF16))
        cots = [c.to(BF16) for c in data(10, 4 * n, 3)]
        w.backward(cots[me])
        assert shard.grad.dtype == F32
        # the bf16 cotangents' rows of this shard, summed over the ranks in fp32 (exact up to fp32 rounding)
        _close(shard.grad, torch.stack(cots).to(F64).sum(0).chunk(n)[me], f"gradient on rank {rank}")
        # a bf16 sum, with its backward in fp32
        ps = data(20, 5)
        p = ps[me].clone().requires_grad_()
        total = spmd.all_reduce(p, "tp", src=P, dst=R, comm_dtype=BF16, grad_comm_dtype=F32)
        exact = torch.stack(ps).to(F64)
        _sum_within(total, exact.sum(0), exact.abs().sum(0), n, BF16, f"all_reduce on rank {rank}")
        total.backward(torch.ones(5))
        _close(p.grad, torch.full((5,), float(n), dtype=F64), f"all_reduce gradient on rank {rank}")
        # an exchange in bf16 moves the rounded values exactly
        blocks = data(30, n, 2)
        moved = spmd.all_to_all(blocks[me], "tp", src=S(0), dst=S(0), comm_dtype=BF16)
        assert torch.equal(moved, torch.cat([b[me : me + 1].to(BF16).float() for b in blocks]))
    return rec.calls


@pytest.mark.parametrize("world", [2, 4])
def test_precision_on_gloo(gloo, world: int) -> None:
    logs = gloo(world, _fsdp_on_gloo)
    assert logs[0] == [("all_gather_single", BF16), ("reduce_scatter_single", F32), ("all_reduce", BF16),
                       ("all_reduce", F32), ("all_to_all_single", BF16)]
    assert all(log == logs[0] for log in logs)

