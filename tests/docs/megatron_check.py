"""Numerical check of docs/megatron.md: each Megatron-LM mapping against the call the page names.

Megatron's ``megatron/core/tensor_parallel/mappings.py`` defines each mapping as
an autograd Function over a tensor-parallel group.  Below, each one's forward
and backward are written as per-rank formulas (what its ``forward`` and
``backward`` compute on rank ``r`` of ``n``, from the ranks' inputs ``xs`` and
output gradients ``gs``), and compared with our call run on simulated ranks
under ``LocalTensorMode``: the forward outputs and the input gradients must
agree on every rank.

Run as a script from the repository's root (it initializes a fake process
group, which is process-wide): ``python -m tests.docs.megatron_check``; prints
one line per mapping.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed._local_tensor import LocalTensorMode
from torch.distributed.device_mesh import init_device_mesh

import spmd_types as spmd

N = 4
Tensors = list[torch.Tensor]
NAMESPACE = {name: getattr(spmd, name) for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                                  "convert", "reinterpret", "I", "P", "R", "S", "V")}


def total(ts: Tensors) -> torch.Tensor:
    return torch.stack(ts).sum(0)


def chunk(t: torch.Tensor, r: int, dim: int) -> torch.Tensor:
    return t.chunk(N, dim=dim)[r]


@dataclass
class Mapping:
    name: str
    call: str  # our call, exactly as docs/megatron.md's table writes it
    forward: Callable[[Tensors, int], torch.Tensor]  # rank r's output of Megatron's forward
    backward: Callable[[Tensors, int], torch.Tensor]  # rank r's input gradient from Megatron's backward
    same_input: bool = False  # Megatron expects the same input on every rank (an I value)
    in_shape: tuple[int, ...] = (8, 6, 12)


MAPPINGS = [
    Mapping("copy_to_tensor_model_parallel_region",
            'convert(x, "tp", src=I, dst=R)',
            lambda xs, r: xs[r],
            lambda gs, r: total(gs), same_input=True),
    Mapping("reduce_from_tensor_model_parallel_region",
            'all_reduce(x, "tp", src=V, dst=I)',
            lambda xs, r: total(xs),
            lambda gs, r: gs[r]),
    Mapping("scatter_to_tensor_model_parallel_region",
            'convert(x, "tp", src=I, dst=S(-1))',
            lambda xs, r: chunk(xs[r], r, -1),
            lambda gs, r: torch.cat(gs, -1), same_input=True),
    Mapping("gather_from_tensor_model_parallel_region",
            'all_gather(x, "tp", src=S(-1), dst=I)',
            lambda xs, r: torch.cat(xs, -1),
            lambda gs, r: chunk(gs[r], r, -1)),
    Mapping("scatter_to_sequence_parallel_region",
            'convert(x, "tp", src=I, dst=S(0))',
            lambda xs, r: chunk(xs[r], r, 0),
            lambda gs, r: torch.cat(gs, 0), same_input=True),
    Mapping("gather_from_sequence_parallel_region(tensor_parallel_output_grad=True)",
            'all_gather(x, "tp", src=S(0), dst=R)',
            lambda xs, r: torch.cat(xs, 0),
            lambda gs, r: chunk(total(gs), r, 0)),
    Mapping("gather_from_sequence_parallel_region(tensor_parallel_output_grad=False)",
            'all_gather(x, "tp", src=S(0), dst=I)',
            lambda xs, r: torch.cat(xs, 0),
            lambda gs, r: chunk(gs[r], r, 0)),
    Mapping("reduce_scatter_to_sequence_parallel_region",
            'reduce_scatter(x, "tp", src=V, dst=S(0))',
            lambda xs, r: chunk(total(xs), r, 0),
            lambda gs, r: torch.cat(gs, 0)),
    Mapping("all_gather_last_dim_from_tensor_parallel_region",
            'all_gather(x, "tp", src=S(-1), dst=R)',
            lambda xs, r: torch.cat(xs, -1),
            lambda gs, r: chunk(total(gs), r, -1)),
    Mapping("reduce_scatter_last_dim_to_tensor_parallel_region",
            'reduce_scatter(x, "tp", src=V, dst=S(-1))',
            lambda xs, r: chunk(total(xs), r, -1),
            lambda gs, r: torch.cat(gs, -1)),
    # all_to_all(group, x) with equal splits: all_to_all_single along dim 0.
    Mapping("all_to_all",
            'all_to_all(x, "tp", src=S(0), dst=S(0))',
            lambda xs, r: torch.cat([chunk(x, r, 0) for x in xs], 0),
            lambda gs, r: torch.cat([chunk(g, r, 0) for g in gs], 0),
            in_shape=(8, 12)),
    # all_to_all_sp2hp: [tokens/n, H] -> [tokens, H/n]: split columns, stack them on dim 0, all_to_all.
    Mapping("all_to_all_sp2hp",
            'all_to_all(x, "tp", src=S(0), dst=S(-1))',
            lambda xs, r: torch.cat([chunk(x, r, -1) for x in xs], 0),
            lambda gs, r: torch.cat([chunk(g, r, 0) for g in gs], -1),
            in_shape=(8, 12)),
    # all_to_all_hp2sp: [tokens, H/n] -> [tokens/n, H]: all_to_all, then the row blocks side by side.
    Mapping("all_to_all_hp2sp",
            'all_to_all(x, "tp", src=S(-1), dst=S(0))',
            lambda xs, r: torch.cat([chunk(x, r, 0) for x in xs], -1),
            lambda gs, r: torch.cat([chunk(g, r, -1) for g in gs], 0),
            in_shape=(8, 12)),
]


def check(mapping: Mapping, mesh: object) -> None:
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(mapping.in_shape, generator=gen, dtype=torch.float64)
    xs = [base.clone() if mapping.same_input else torch.randn(mapping.in_shape, generator=gen, dtype=torch.float64)
          for _ in range(N)]
    want_y = [mapping.forward(xs, r) for r in range(N)]
    gs = [torch.randn(want_y[r].shape, generator=gen, dtype=torch.float64) for r in range(N)]
    want_gx = [mapping.backward(gs, r) for r in range(N)]
    with LocalTensorMode(N) as mode, spmd.set_current_mesh(mesh):
        x = mode.rank_map(lambda r: xs[r].clone()).requires_grad_()
        y = eval(mapping.call, dict(NAMESPACE), {"x": x})
        y.backward(mode.rank_map(lambda r: gs[r].clone()))
        got_y = {r: t.detach().clone() for r, t in y._local_tensors.items()}
        got_gx = {r: t.detach().clone() for r, t in x.grad._local_tensors.items()}
    for r in range(N):
        assert torch.allclose(got_y[r], want_y[r]), f"{mapping.name}: forward differs on rank {r}"
        assert torch.allclose(got_gx[r], want_gx[r]), f"{mapping.name}: backward differs on rank {r}"


def main() -> int:
    dist.init_process_group("fake", rank=0, world_size=N)
    mesh = init_device_mesh("cpu", (N,), mesh_dim_names=("tp",))
    for mapping in MAPPINGS:
        check(mapping, mesh)
        print(f"ok {mapping.name}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
