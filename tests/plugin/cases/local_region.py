"""@local_region: a function local SPMD on chosen axes and global on the others, its specs stated on entry and exit.

Inside the region the global rules are not applied on its axes (V is allowed, reinterpret V -> P is a
local cast), and still are on the others; its parameters must accept the types in_specs gives, its
declared result must fit out_specs (V only where the spec cuts a dim or is partial), and its callers
(global functions) see the types of out_specs.  Malformed arguments are errors with codes.
"""
from typing import Annotated, Final

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import P, PartitionSpec, R, S, V, all_reduce, global_spmd, local_region, reinterpret

X = PartitionSpec("dp", "tp")
W = PartitionSpec(None, "tp")
TP: Final = "tp"


@local_region("tp", in_specs=(X, W), out_specs=PartitionSpec("dp", None))  # OK
def reduced(a: Annotated[Tensor, S["tp", 1]], b: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, R["tp"]]:
    y = F.linear(a, b)  # OK: local on tp, each rank's product
    return all_reduce(reinterpret(y, "tp", src=V, dst=P), "tp", src=P, dst=R)  # OK: a local cast here


@local_region(TP, in_specs=(X, W), out_specs=PartitionSpec("dp", None, partial="tp"))  # OK
def product(a: Annotated[Tensor, V["tp"]], b: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, V["tp"]]:
    return F.linear(a, b)  # OK


@global_spmd
def row_parallel(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp"), R["dp"]]
) -> Annotated[Tensor, PartitionSpec("dp", None), R["tp"]]:
    return reduced(x, w)  # OK: dp:S(0), tp:R, as out_specs says


@global_spmd
def pending(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp"), R["dp"]]
) -> Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]:
    return product(x, w)  # OK: V re-stated as a pending sum on tp


@global_spmd
def caller_sees_out_specs(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec(None, "tp"), R["dp"]]
) -> Annotated[Tensor, PartitionSpec("dp", None), R["tp"]]:
    return product(x, w)  # E: [spmd-boundary] expected R, got P


@global_spmd
def argument_laid_out_otherwise(
    x: Annotated[Tensor, PartitionSpec("dp", "tp")], w: Annotated[Tensor, PartitionSpec("tp", None), R["dp"]]
) -> Annotated[Tensor, PartitionSpec("dp", None), R["tp"]]:
    return reduced(x, w)  # E: [spmd-boundary] expected S(1), got S(0)


@local_region("tp", in_specs=(X, W), out_specs=PartitionSpec("dp", None))  # E: [spmd-boundary] out_specs says R on 'tp', a local axis of the region, but the function returns V
def unreduced(a: Annotated[Tensor, V["tp"]], b: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, V["tp"]]:
    return F.linear(a, b)  # OK


@local_region("tp", in_specs=(X, W), out_specs=PartitionSpec("dp", None))  # E: [spmd-boundary] returns a pending sum (P); reduce it first
def unreduced_partial(a: Annotated[Tensor, S["tp", 1]], b: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, P["tp"]]:
    return reinterpret(F.linear(a, b), "tp", src=V, dst=P)  # OK


@local_region("tp", in_specs=(X,), out_specs=PartitionSpec("dp", None))  # E: [spmd-boundary] out_specs says R on 'tp', but the function returns S(1)
def ungathered(a: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, S["tp", 1]]:
    return a  # OK


@local_region("tp", in_specs=(X,), out_specs=X)  # OK
def softmax_over_batch(a: Annotated[Tensor, S["dp", 0], S["tp", 1]]) -> Annotated[Tensor, S["tp", 1]]:
    return torch.softmax(a, dim=0)  # E: [spmd-global] on axis 'dp'


@local_region("tp", in_specs=(X,), out_specs=X)  # E: [spmd-boundary] in_specs[0] gives S(1) on 'tp', but the parameter declares S(0)
def parameter_disagrees(a: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, V["tp"]]:
    return a  # OK


def axes_variable(axes: str) -> None:
    @local_region(axes, in_specs=(X,), out_specs=X)  # E: [spmd-axis] cannot tell which mesh axes local_region makes local
    def f(a: Tensor) -> Tensor:
        return a


def specs_not_literal(spec: PartitionSpec) -> None:
    @local_region("tp", in_specs=(spec,), out_specs=X)  # E: [spmd-annotation] cannot read local_region's in_specs
    def f(a: Tensor) -> Tensor:
        return a


@local_region("tp", in_specs=(X, W), out_specs=X)  # E: [spmd-annotation] in_specs has 2 entries for a function of 1 positional parameters
def arity(a: Tensor) -> Tensor:
    return a


@local_region(("tp", "tp"), in_specs=(X,), out_specs=X)  # E: [spmd-annotation] axes names a mesh axis twice
def axis_twice(a: Tensor) -> Tensor:
    return a


@local_region("tp", in_specs=(X,), out_specs=(X, X))  # E: [spmd-annotation] out_specs is a tuple, but the function does not return a tuple
def not_a_tuple(a: Tensor) -> Tensor:
    return a


def doubled(a: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, V["tp"]]:
    return a * 2


doubled_region = local_region("tp", in_specs=(X,), out_specs=X)(doubled)  # OK


@global_spmd
def call_form(x: Annotated[Tensor, PartitionSpec("dp", "tp")]) -> Annotated[Tensor, PartitionSpec("dp", "tp")]:
    return doubled_region(x)  # OK: V re-stated as S(1) on tp


@local_region("tp", in_specs=(X,), out_specs=X)  # E: [spmd-global] the parameter declares V on 'dp', which the region keeps global
def varying_on_dp(a: Annotated[Tensor, V["dp"], V["tp"]]) -> Tensor:
    return a  # OK


@local_region("tp", in_specs=(X, None), out_specs=(X, None))  # OK: a non-tensor passes as it is
def with_a_count(a: Annotated[Tensor, S["tp", 1]], n: int) -> tuple[Annotated[Tensor, V["tp"]], int]:
    return a * n, n  # OK


class Block:
    @local_region("tp", in_specs=(None, X), out_specs=X)  # OK: self has no spec
    def forward(self, a: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, V["tp"]]:
        return a  # OK


def missing_specs() -> None:
    local_region("tp")  # E: [call-arg] Missing named argument "in_specs" for "local_region"  # E: [call-arg] Missing named argument "out_specs" for "local_region"


def local_product(a: Tensor, b: Tensor) -> Annotated[Tensor, V["tp"]]:
    return F.linear(a, b)


@local_region("tp", in_specs=(X, W), out_specs=PartitionSpec("dp", None, partial="tp"))  # OK
def calls_a_local_function(a: Annotated[Tensor, S["tp", 1]], b: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, V["tp"]]:
    return local_product(a, b)  # OK: V on tp, a local axis here
