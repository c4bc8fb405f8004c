"""Holes where an accepted program would compute the wrong value or gradient (issue 14), now closed."""
from typing import Annotated

import torch
from torch import Tensor, nn
from torch.distributed.device_mesh import DeviceMesh

from spmd_types import P, R, S, V, all_reduce, reduce_scatter


# mypy checks a return that fails against its declared type a second time without it,
# and keeps that result when nothing is reported; the plugin still knows it is the return.
def scattered_on_the_wrong_dim(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, S["tp", 1]]:
    return reduce_scatter(p, "tp", src=P, dst=S(0))  # E: [spmd-boundary] return value on axis 'tp': expected S(1), got S(0); fix: reduce_scatter(p, "tp", src=P, dst=S(1))


def constant_returned_as_a_partial_sum() -> Annotated[Tensor, P["tp"]]:
    return torch.ones(3)  # E: [spmd-boundary] return value on axis 'tp': expected P, got weak


def scattered_on_the_declared_dim(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, S["tp", 0]]:
    return reduce_scatter(p, "tp", src=P, dst=S(0))  # OK


def zero_returned_as_a_partial_sum() -> Annotated[Tensor, P["tp"]]:
    return torch.zeros(3)  # OK


class RowParallel(nn.Module):
    """A parameter is never a constant, whatever it starts as: it will be trained or loaded."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.bias: Annotated[nn.Parameter, R["tp"]] = nn.Parameter(torch.zeros(d))  # OK
        self.untyped_bias = nn.Parameter(torch.zeros(d))

    def forward(self, p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
        reveal_type(self.untyped_bias)  # N: SpmdParameter[Any]
        return all_reduce(p + self.bias, "tp", src=P, dst=R)  # E: [spmd-partial] + on axis 'tp': P plus a non-partial term (R)


def zeros_buffer_written_in_place(p: Annotated[Tensor, P["tp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    # What the buffer holds later is what was written into it: unknown, not zeros.
    buf = torch.zeros(3)
    buf[0] = -100
    acc = torch.zeros(3)
    acc.add_(v)  # OK
    acc[1:] = v[1:]  # OK
    out = torch.zeros(3)
    torch.cumsum(v, 0, out=out)  # OK


def zeros_left_alone(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
    z = torch.zeros(3)
    return all_reduce(p + z, "tp", src=P, dst=R)  # OK


# Collectives with the wrong intent (issue 14, family 9).
def shard_summed_where_a_gather_was_meant(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(x, "tp", src=P, dst=R)  # E: [spmd-collective] the input is S(0) but all_reduce was told src=P; summing the pieces of a sharded tensor adds different parts of it together; fix: all_gather(x, "tp", src=S(0), dst=R)


def maximum_of_a_pending_sum(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(p, "tp", src=P, dst=R, op="max")  # E: [spmd-partial] all_reduce with op='max' of a pending sum (P): the ranks hold summands


def average_of_a_pending_sum(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(p, "tp", src=P, dst=R, op="avg")  # E: [spmd-partial] all_reduce with op='avg' of a pending sum (P)


def maximum_of_per_rank_values(v: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(v, "tp", src=V, dst=R, op="max")  # OK


# Correct programs that were rejected (issue 14, family 10).
def axis_as_a_sub_mesh(mesh: DeviceMesh, p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return all_reduce(p, mesh["tp"], src=P, dst=R)  # OK


def accumulator_started_as_a_constant(losses: list[Annotated[Tensor, V["dp"]]]) -> Annotated[Tensor, R["dp"]]:
    total = torch.tensor(0.0)
    for loss in losses:
        total = total + loss
    return all_reduce(total, "dp", src=P, dst=R)  # OK


# Gradients taken other ways than loss.backward() (issue 14, family 7).
def seeded_with_ones(loss: Annotated[Tensor, R["dp"]]) -> None:
    loss.backward(gradient=torch.ones_like(loss))  # E: [spmd-backward] loss.backward() on axis 'dp': the loss is R, so every rank seeds a gradient of 1


def seeded_with_the_gradient_type(loss: Annotated[Tensor, R["dp"]], seed: Annotated[Tensor, P["dp"]]) -> None:
    loss.backward(gradient=seed)  # OK


def seeded_with_another_type(loss: Annotated[Tensor, R["dp"]], seed: Annotated[Tensor, R["dp"]]) -> None:
    loss.backward(gradient=seed)  # E: [spmd-backward] the gradient given is R, but a loss of type R needs a gradient of type P


def autograd_functions(loss: Annotated[Tensor, R["dp"]], partial: Annotated[Tensor, P["dp"]], w: Tensor) -> None:
    torch.autograd.grad(loss, [w])  # E: [spmd-backward] torch.autograd.grad(...) on axis 'dp': the loss is R
    torch.autograd.backward([partial, loss])  # E: [spmd-backward] torch.autograd.backward(...) on axis 'dp': the loss is R
    torch.autograd.grad([partial], [w])  # OK


class Block(nn.Module):
    """torch's modules with parameters are their op, with the parameters unknown (issue 14, family 2)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(4)
        self.rms = nn.RMSNorm(4)
        self.proj = nn.Linear(4, 4)

    def forward(self, p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> None:
        self.norm(p)  # E: [spmd-partial] torch.nn.functional.layer_norm on axis 'tp': P (a pending sum) through a non-linear op
        self.rms(p)  # E: [spmd-partial] P (a pending sum) through a non-linear op
        self.norm(r)  # OK
        reveal_type(self.proj(p))  # N: SpmdTensor[Any]


# Python's sum of tensors is the sum of its elements (issue 14, family 5).
def sum_of_a_list(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]], ps: list[Annotated[Tensor, P["tp"]]]) -> None:
    sum([p, r])  # E: [spmd-partial] sum on axis 'tp': P plus a non-partial term (R)
    sum([p, p])  # OK
    sum(ps)  # OK
    sum([r, r], torch.zeros(3))  # OK


# A value whose type depends on the branch or the loop iteration, passed to a collective (issue 14, family 6).
def divergent_into_a_collective(p: Annotated[Tensor, P["tp"]], v: Annotated[Tensor, V["tp"]], flag: bool) -> None:
    h = p if flag else v * 2
    all_reduce(h, "tp", src=P, dst=R)  # E: [spmd-branch] "h": has SPMD type tp:P or tp:V depending on the branch taken (or the loop iteration)


def reduced_again_in_a_loop(p: Annotated[Tensor, P["tp"]], n: int) -> None:
    h = p
    for _ in range(n):
        h = all_reduce(h, "tp", src=P, dst=R)  # E@recommended: [spmd-branch] "h": has SPMD type tp:P or tp:R


# Found by the differential tester.
def norm_keeps_its_type(b: Annotated[Tensor, V["tp"]], r: Annotated[Tensor, R["tp"]]) -> None:
    b.norm().backward()  # E: [spmd-backward] the loss is V
    torch.norm(r).backward()  # E: [spmd-backward] the loss is R


def non_linear_op_of_zeros_is_not_zero(p: Annotated[Tensor, P["tp"]]) -> None:
    torch.exp(torch.zeros(4, 4)) + p  # E: [spmd-partial] P plus a non-partial term (weak)
    torch.zeros(4, 4).neg() + p  # OK


def new_tensor_keeps_its_data_type(p: Annotated[Tensor, P["tp"]], v: Annotated[Tensor, V["tp"]], r: Annotated[Tensor, R["tp"]]) -> None:
    # A copy of a tensor has the tensor's type (without its gradient), not a constant's (family 10).
    reveal_type(r.new_tensor(v))  # N: SpmdTensor[Literal['tp:V']]
    torch.exp(r.new_tensor(p))  # E: [spmd-partial] torch.exp on axis 'tp': P (a pending sum) through a non-linear op
    torch.exp(torch.tensor(p))  # E: [spmd-partial] P (a pending sum) through a non-linear op
    torch.tensor([1.0, 2.0]) * r  # OK
