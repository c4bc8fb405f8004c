"""One op on the same operand types at places whose facts differ: each place is checked by its own facts.

The plugin remembers what an op on given operand types found where it reported nothing
(``spmd_mypy.ops``); a place that runs without autograd, or in a global_spmd function, is
checked by rules of its own, which another place's remembered outcome must not stand in for; so
is a local_region, whose axes are local inside a global program; and a constant whose buffer is
written in place later holds what is written into it, not the constant.
Each pair checks the place that accepts more first.
"""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import (
    I,
    P,
    PartitionSpec,
    R,
    S,
    V,
    all_gather,
    all_reduce,
    all_to_all,
    global_spmd,
    local_region,
    reinterpret,
)


def without_autograd_first(i: Annotated[Tensor, I["tp"]], v: Annotated[Tensor, V["tp"]],
                           r: Annotated[Tensor, R["tp"]]) -> None:
    with torch.no_grad():
        reveal_type(i * v)  # N: SpmdTensor[Literal['tp:V']]
        reveal_type(r * 2)  # N: SpmdTensor[Any]
    reveal_type(i * v)  # E: [spmd-mix] * on axis 'tp': I does not mix with V # N: SpmdTensor[Any]
    reveal_type(r * 2)  # N: SpmdTensor[Literal['tp:R']]


def local_first(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # OK: local SPMD, each rank's product
    return reinterpret(y, "tp", src=V, dst=P)  # OK


@global_spmd
def global_after(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # E: [spmd-global] torch.nn.functional.linear on axis 'tp': dim 'k' is summed over

    return reinterpret(y, "tp", src=V, dst=P)  # E: [spmd-global] only the shard-preserving variants


@local_region("tp", in_specs=(PartitionSpec("dp", "tp"), PartitionSpec(None, "tp")),
              out_specs=PartitionSpec("dp", None, partial="tp"))
def region_first(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, V["tp"]]:
    return F.linear(x, w)  # OK: local on tp inside the region


@global_spmd
def global_after_region(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp")]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    y = F.linear(x, w)  # E: [spmd-global] torch.nn.functional.linear on axis 'tp': dim 'k' is summed over

    return reinterpret(y, "tp", src=V, dst=P)  # E: [spmd-global] only the shard-preserving variants


def zeros_of_a_parameter_size_first(p: Annotated[Tensor, P["tp"]], n: int) -> Annotated[Tensor, R["tp"]]:
    z = torch.zeros(n)  # the same zeros on every rank: adds nothing to a pending sum
    return all_reduce(p + z, "tp", src=P, dst=R)  # OK


def zeros_of_a_parameter_size_written_later(v: Annotated[Tensor, V["tp"]], n: int) -> None:
    acc = torch.zeros(n)  # a buffer: what it holds is what is written into it
    acc.add_(v)  # OK


# Literal arguments: an op's key holds each literal as read by its class, sign and value (spmd_mypy.values),
# so a zero, which adds nothing to a pending sum, stands apart from another number.

def literal_zero_first(p: Annotated[Tensor, P["tp"]]) -> None:
    reveal_type(p + 0)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p + 2)  # E: [spmd-partial] + on axis 'tp': P plus a non-partial term (weak) # N: SpmdTensor[Any]
    reveal_type(p + -0.0)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p + -2.0)  # E: [spmd-partial] + on axis 'tp': P plus a non-partial term (weak) # N: SpmdTensor[Any]


# Collectives and casts: what a call on an input type found where it reported nothing is remembered
# too (spmd_mypy.collectives); each pair below differs in one thing that decides the check, besides places.

def cast_first(r: Annotated[Tensor, R["tp"]]) -> None:
    reinterpret(r, "tp", src=R, dst=V)  # OK: local SPMD


@local_region("tp", in_specs=(PartitionSpec(None),), out_specs=PartitionSpec(None))
def cast_in_region(r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    reinterpret(r, "tp", src=R, dst=V)  # OK: tp is local in the region
    return r


@global_spmd
def cast_in_global_code(r: Annotated[Tensor, R["tp"]]) -> None:
    reinterpret(r, "tp", src=R, dst=V)  # E: [spmd-global] only the shard-preserving variants


def reduction_op(p: Annotated[Tensor, P["tp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    reveal_type(all_reduce(p, "tp", src=P, dst=R))  # N: SpmdTensor[Literal['tp:R']]
    all_reduce(p, "tp", src=P, dst=R, op="max")  # E: [spmd-partial] all_reduce with op='max' of a pending sum
    reveal_type(all_reduce(v, "tp", src=V, dst=R))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(all_reduce(v, "tp", src=V, dst=R, op="max"))  # N: SpmdTensor[Any]


def axes_endpoints_and_input(x: Annotated[Tensor, R["dp"], P["tp"]], s: Annotated[Tensor, S["tp", 1]],
                             s0: Annotated[Tensor, S["tp", 0]]) -> None:
    all_reduce(x, "tp", src=P, dst=R)  # OK
    all_reduce(x, ("tp", "dp"), src=P, dst=R)  # E: [spmd-collective] all_reduce on axis 'dp': the input is R
    reveal_type(all_gather(s, "tp", src=S(1), dst=R))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(all_gather(s, "tp", src=S(1), dst=I))  # N: SpmdTensor[Literal['tp:I']]
    all_gather(s0, "tp", src=S(1), dst=R)  # E: [spmd-collective] the input is S(0) but all_gather was told src=S(1)
    all_gather(s, "tp", src=S(0), dst=R)  # E: [spmd-collective] the input is S(1) but all_gather was told src=S(0)
    all_to_all(s, "tp", src=S(1), dst=R)  # E: [spmd-collective] all_to_all does not accept src=S(1), dst=R


def summands_read_at_each_place(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, V["tp"]],
                                b: Annotated[Tensor, R["tp"]]) -> None:
    reinterpret(F.linear(x, w), "tp", src=V, dst=P)  # OK
    reinterpret(F.linear(x, w) + b, "tp", src=V, dst=P)  # E: [spmd-partial] b (R) is added to per-rank values
