"""Collectives and casts (docs/type-system.md): src/dst checks, the axis, the result type."""
from typing import Annotated, Final

import torch
from torch import Tensor
from torch.distributed import ProcessGroup

import spmd_types as spmd
from spmd_types import I, P, R, S, V, Axis, all_gather, all_reduce, all_to_all, convert, reduce_scatter, reinterpret

TP: Final = "tp"
TP_VARIABLE = "tp"
DP_CP: Final = ("dp", "cp")


def reductions(p: Annotated[Tensor, P["tp"], R["dp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    reveal_type(all_reduce(p, "tp", dst=R))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:R']]
    reveal_type(all_reduce(p, "tp", src=P, dst=I))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:I']]
    reveal_type(all_reduce(v, "tp", dst=R))  # N: SpmdTensor[Literal['tp:R']]
    # A maximum has no gradient: R and I coincide, the result is a constant on the axis.
    reveal_type(all_reduce(v, "tp", src=V, dst=R, op="max"))  # N: SpmdTensor[Any]
    m = all_reduce(v.detach(), "tp", src=V, dst=I, op="max")
    shifted = v - m  # OK
    reveal_type(reduce_scatter(p, "tp"))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(reduce_scatter(p, "tp", dst=S(0)))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    a = all_reduce(p, "tp")  # E: [call-arg] Missing named argument "dst"
    b = all_reduce(p, "tp", dst=V)  # E: [spmd-collective] all_reduce does not accept src=P, dst=V; fix: reduce_scatter(p, "tp", src=P, dst=V)
    c = all_reduce(all_reduce(p, "tp", dst=R), "tp", dst=R)  # E: [spmd-collective] the input is R but all_reduce was told src=P
    d = all_reduce(p, "dp", dst=R)  # E: [spmd-collective] on axis 'dp': the input is R
    e = reduce_scatter(p, "tp", dst=R)  # E: [spmd-collective] reduce_scatter does not accept src=P, dst=R


def gathers(v: Annotated[Tensor, V["tp"]], s: Annotated[Tensor, S["tp", 1]], r: Annotated[Tensor, R["tp"]]) -> None:
    reveal_type(all_gather(v, "tp", dst=R))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(all_gather(s, "tp", src=S(1), dst=I))  # N: SpmdTensor[Literal['tp:I']]
    a = all_gather(s, "tp", src=S(0), dst=R)  # E: [spmd-collective] the input is S(1) but all_gather was told src=S(0) (sharded along another dim)
    b = all_gather(v, "tp")  # E: [call-arg] Missing named argument "dst"
    c = all_gather(r, "tp", dst=R)  # E: [spmd-collective] the input is R but all_gather was told src=V; every rank would contribute the same data; the input is already R, so the call is not needed
    d = all_gather(s, "tp", dst=R)  # OK


def all_to_alls(v: Annotated[Tensor, V["ep"]], r: Annotated[Tensor, R["ep"]], s: Annotated[Tensor, S["sp", 1]]) -> None:
    reveal_type(all_to_all(v, "ep"))  # N: SpmdTensor[Literal['ep:V']]
    reveal_type(all_to_all(s, "sp", src=S(1), dst=S(2)))  # N: SpmdTensor[Literal['sp:V']]
    a = all_to_all(r, "ep")  # E: [spmd-collective] the input is R but all_to_all was told src=V; every rank would contribute the same data; give each rank its own share of the data earlier, where it is still whole (convert from R)
    b = all_to_all(v, "ep", dst=R)  # E: [spmd-collective] all_to_all does not accept src=V, dst=R
    c = spmd.ppermute(v, "ep", [(0, 1), (1, 0)])  # OK
    d = spmd.ppermute(r, "ep", [(0, 1), (1, 0)])  # E: [spmd-collective] the input is R but ppermute was told src=V


def casts(i: Annotated[Tensor, I["tp"]], r: Annotated[Tensor, R["tp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    reveal_type(reinterpret(i, "tp", src=I, dst=R))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(convert(i, "tp", src=I, dst=R))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(reinterpret(v, "tp", src=V, dst=P))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(convert(r, "tp", src=R, dst=S(0)))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(convert(r, "tp", src=R, dst=P))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(convert(i, "tp", src=I, dst=P))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(reinterpret(i, "tp", src=I, dst=V))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(spmd.redistribute(v, "tp", src=V, dst=R))  # N: SpmdTensor[Literal['tp:R']]
    a = reinterpret(i, "tp", src=I, dst=P)  # E: [spmd-collective] reinterpret does not accept src=I, dst=P; fix: convert(i, "tp", src=I, dst=P)
    b = convert(v, "tp", src=V, dst=R)  # E: [spmd-collective] convert does not accept src=V, dst=R; fix: all_gather(v, "tp", src=V, dst=R)
    c = convert(r, "tp", src=I, dst=R)  # E: [spmd-collective] the input is R but convert was told src=I
    d = reinterpret(v, "tp", dst=P)  # E: [call-arg] Missing named argument "src"
    e = convert(r, "tp", src=R, dst=I)  # OK


def axis_forms(p: Annotated[Tensor, P["tp"]], g: Annotated[ProcessGroup, Axis["tp"]], h: ProcessGroup, name: str) -> None:
    reveal_type(all_reduce(p, TP, dst=R))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(all_reduce(p, g, dst=R))  # N: SpmdTensor[Literal['tp:R']]
    a = all_reduce(p, h, dst=R)  # E: [spmd-axis] cannot tell which mesh axis this is
    b = all_reduce(p, name, dst=R)  # E: [spmd-axis] cannot tell which mesh axis this is
    c = all_reduce(p, TP_VARIABLE, dst=R)  # E: [spmd-axis] TP_VARIABLE is a module-level str variable, whose value the checker does not follow; make it a constant (TP_VARIABLE: Final = "...", with Final from typing)


def dynamic_markers(p: Annotated[Tensor, P["tp"], R["dp"]], dst: spmd.LocalType) -> None:
    reveal_type(all_reduce(p, "tp", dst=dst))  # N: SpmdTensor[Literal['dp:R']]
    reveal_type(spmd.assert_type(p, P["tp"], R["dp"]))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:P']]
    e = spmd.assert_type(p, R["tp"])  # E: [spmd-boundary] assert_type on axis 'tp': expected R, got P



def shard_markers_in_expressions(x: Tensor, r: Annotated[Tensor, R["tp"]], s: Annotated[Tensor, S["tp", 0]]) -> None:
    # S["tp", 0] in an expression is a marker, not a type application (as documented)
    reveal_type(spmd.assert_type(x, S["tp", 0]))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(spmd.assert_type(x, S["tp", -1], R["dp"]))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    a = spmd.assert_type(s, S["tp", 0])  # OK
    b = spmd.assert_type(r, S["tp", 0])  # E: [spmd-boundary] assert_type on axis 'tp': expected S(0), got R
    c = all_gather(x, "tp", src=S(0), dst=R)  # OK


# A collective whose result is declared another type: the fix is at the call, not a second cast after it.
def retarget_reduced(x: Annotated[Tensor, P["tp"], R["dp"]]) -> Annotated[Tensor, I["tp"], R["dp"]]:
    return all_reduce(x, "tp", dst=R)  # E: [spmd-boundary] return value on axis 'tp': expected I, got R; fix: all_reduce(x, "tp", src=P, dst=I) replacing the all_reduce call (all-reduce forward, no-op in backward)


def retarget_gathered(s: Annotated[Tensor, S["tp", 0]]) -> None:
    y: Annotated[Tensor, R["tp"]] = all_gather(s, "tp", src=S(0), dst=I)  # E: [spmd-boundary] expected R, got I; fix: all_gather(s, "tp", src=S(0), dst=R) replacing the all_gather call (all-gather forward, reduce-scatter in backward)


def retarget_only_on_the_call_axis(x: Annotated[Tensor, I["tp"], R["dp"]]) -> Annotated[Tensor, R["tp"], I["dp"]]:
    return convert(x, "tp", src=I, dst=R)  # E: [spmd-boundary] on axis 'dp': expected I, got R; fix: convert(convert(x, "tp", src=I, dst=R), "dp", src=R, dst=I)


def retarget_not_allowed(v: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, I["tp"]]:
    return reinterpret(v, "tp", src=V, dst=P)  # E: [spmd-boundary] expected I, got P; fix: all_reduce(reinterpret(v, "tp", src=V, dst=P), "tp", src=P, dst=I)


# Mixed precision: the dtype keywords change no SPMD type, and the call is still checked.
def mixed_precision(s: Annotated[Tensor, S["dp", 0]], p: Annotated[Tensor, P["tp"], R["dp"]], v: Annotated[Tensor, V["ep"]]) -> None:
    reveal_type(all_gather(s, "dp", src=S(0), dst=R, comm_dtype=torch.bfloat16, grad_comm_dtype=torch.float32))  # N: SpmdTensor[Literal['dp:R']]
    reveal_type(all_gather(s, "dp", src=S(0), dst=I, comm_dtype=torch.bfloat16, out_dtype=torch.bfloat16))  # N: SpmdTensor[Literal['dp:I']]
    reveal_type(reduce_scatter(p, "tp", dst=S(0), comm_dtype=torch.float32, out_dtype=torch.bfloat16))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(all_reduce(p, "tp", dst=I, comm_dtype=torch.float32))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:I']]
    reveal_type(all_reduce(v, "ep", src=V, dst=R, op="avg", comm_dtype=torch.bfloat16))  # N: SpmdTensor[Literal['ep:R']]
    reveal_type(all_to_all(v, "ep", comm_dtype=torch.bfloat16, grad_comm_dtype=torch.bfloat16))  # N: SpmdTensor[Literal['ep:V']]
    reveal_type(spmd.redistribute(s, "dp", src=S(0), dst=R, comm_dtype=torch.bfloat16))  # N: SpmdTensor[Literal['dp:R']]
    a = all_gather(s, "dp", src=S(1), dst=R, comm_dtype=torch.bfloat16)  # E: [spmd-collective] the input is S(0) but all_gather was told src=S(1)
    b = all_reduce(p, "tp", dst=V, grad_comm_dtype=torch.float32)  # E: [spmd-collective] all_reduce does not accept src=P, dst=V
    c = all_gather(s, "dp", src=S(0), dst=R, comm_dtype="bf16")  # E: [arg-type] Argument "comm_dtype" to "all_gather" has incompatible type "str"; expected "dtype | None"
    d = reduce_scatter(p, "tp", out_dtype=torch.float16, precision=torch.float16)  # E: [call-arg] Unexpected keyword argument "precision" for "reduce_scatter"


# Uneven all-to-all (mixture-of-experts token exchange): the sizes change no SPMD type.
def uneven_all_to_all(tokens: Annotated[Tensor, V["ep"], R["tp"]], counts: list[int], received: list[int]) -> None:
    reveal_type(all_to_all(tokens, "ep", src=S(0), dst=S(0), split_sizes=counts, out_split_sizes=received))  # N: SpmdTensor[Literal['ep:V'] | Literal['tp:R']]
    reveal_type(all_to_all(tokens, "ep", src=S(0), dst=S(0), split_sizes=counts))  # N: SpmdTensor[Literal['ep:V'] | Literal['tp:R']]
    a = all_to_all(tokens, "tp", src=S(0), dst=S(0), split_sizes=counts)  # E: [spmd-collective] on axis 'tp': the input is R but all_to_all was told src=S(0)
    b = all_to_all(tokens, "ep", src=S(0), dst=S(0), split_sizes=3)  # E: [arg-type] Argument "split_sizes" to "all_to_all" has incompatible type "int"; expected "Sequence[int] | None"


# Several axes: one collective on their flattened group; src and dst apply on every axis listed.
def flattened_groups(
    p: Annotated[Tensor, P["dp", "cp"], R["tp"]],
    s: Annotated[Tensor, S["dp", 0], S["cp", 0]],
    v: Annotated[Tensor, V["dp"], P["cp"]],
    name: str,
) -> None:
    reveal_type(all_reduce(p, ("dp", "cp"), dst=R))  # N: SpmdTensor[Literal['cp:R'] | Literal['dp:R'] | Literal['tp:R']]
    reveal_type(all_reduce(p, DP_CP, src=P, dst=I))  # N: SpmdTensor[Literal['cp:I'] | Literal['dp:I'] | Literal['tp:R']]
    reveal_type(all_reduce(v, (TP, "dp", "cp"), src=V, dst=R))  # E: [spmd-collective] all_reduce on axis 'cp': the input is P but all_reduce was told src=V # N: SpmdTensor[Literal['cp:R'] | Literal['dp:R'] | Literal['tp:R']]
    reveal_type(all_reduce(v, ("dp", "cp"), dst=R))  # N: SpmdTensor[Literal['cp:R'] | Literal['dp:R']]
    reveal_type(all_gather(s, ("dp", "cp"), src=S(0), dst=I))  # N: SpmdTensor[Literal['cp:I'] | Literal['dp:I']]
    reveal_type(reduce_scatter(p, ("dp", "cp"), dst=S(0)))  # N: SpmdTensor[Literal['cp:V'] | Literal['dp:V'] | Literal['tp:R']]
    reveal_type(all_to_all(s, ("dp", "cp"), src=S(0), dst=S(1)))  # N: SpmdTensor[Literal['cp:V'] | Literal['dp:V']]
    reveal_type(all_gather(p, ("dp",), src=P, dst=R, comm_dtype=torch.bfloat16))  # E: [spmd-collective] all_gather does not accept src=P, dst=R # N: SpmdTensor[Literal['cp:P'] | Literal['dp:R'] | Literal['tp:R']]
    a = all_reduce(p, ("dp", "tp"), dst=R)  # E: [spmd-collective] all_reduce on axis 'tp': the input is R but all_reduce was told src=P
    b = all_gather(s, ("dp", "cp"), src=S(1), dst=R)  # E: [spmd-collective] on axis 'dp': the input is S(0) but all_gather was told src=S(1) # E: [spmd-collective] on axis 'cp': the input is S(0) but all_gather was told src=S(1)
    c = all_reduce(p, ("dp", "cp"), dst=V)  # E: [spmd-collective] all_reduce on axis 'dp': all_reduce does not accept src=P, dst=V
    d = all_reduce(p, ("dp", "dp"), dst=R)  # E: [spmd-axis] all_reduce: the axes ('dp', 'dp') name 'dp' twice; list each mesh axis once
    e = all_reduce(p, ("dp", name), dst=R)  # E: [spmd-axis] cannot tell which mesh axes this tuple names
    f = all_reduce(p, (), dst=R)  # E: [spmd-axis] cannot tell which mesh axes this tuple names
    y: Annotated[Tensor, R["dp"], R["cp"]] = all_reduce(p, ("dp", "cp"), dst=R)  # OK
    z: Annotated[Tensor, R["dp"], R["cp"]] = all_reduce(p, ("dp", "cp"), dst=I)  # E: [spmd-boundary] on axis 'cp': expected R, got I # E: [spmd-boundary] on axis 'dp': expected R, got I
