"""Explicit partial outputs: ``out_partial_axes=`` on spmd_types' einsum, matmul, linear and sum (issue 11, item 3).

The local op, then reinterpret(V -> P) on each listed axis: the result is P there, and the op's local result must
be V there (not R, I, P or a shard). A bias is rejected, and the axes must be readable from the source.
"""
from typing import Annotated, Final

from torch import Tensor

import spmd_types as spmd
from spmd_types import I, P, R, S, V, all_reduce

TP: Final = "tp"


def row_parallel(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    y = spmd.matmul(x, w, out_partial_axes="tp")
    reveal_type(y)  # N: SpmdTensor[Literal['tp:P']]
    return all_reduce(y, "tp", src=P, dst=R)  # OK


def row_parallel_linear(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, P["tp"]]:
    return spmd.linear(x, w, out_partial_axes=TP)  # OK: a Final str


def contracted_shards(x: Annotated[Tensor, S["tp", 1]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, P["tp"]]:
    return spmd.einsum("bk,kn->bn", x, w, out_partial_axes="tp")  # OK: k is split on tp


def summed_shard(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, P["tp"]]:
    return spmd.sum(x, 0, out_partial_axes="tp")  # OK: the sharded dim is summed


def summed_everything(x: Annotated[Tensor, V["dp"], V["tp"]]) -> Annotated[Tensor, P["dp"], P["tp"]]:
    return spmd.sum(x, out_partial_axes=("dp", "tp"))  # OK


def other_axes_join(x: Annotated[Tensor, R["dp"], V["tp"]], w: Annotated[Tensor, R["dp"], V["tp"]]) -> Annotated[Tensor, R["dp"], P["tp"]]:
    return spmd.matmul(x, w, out_partial_axes="tp")  # OK: dp is the join's R


def without_axes(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, V["tp"]]:
    return spmd.linear(x, w, w[0])  # OK: the plain op, bias allowed


def not_partial_without_it(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, P["tp"]]:
    return spmd.matmul(x, w)  # E: [spmd-boundary] expected P, got V


def replicated(x: Annotated[Tensor, R["tp"]], w: Annotated[Tensor, R["tp"]]) -> None:
    spmd.matmul(x, w, out_partial_axes="tp")  # E: [spmd-partial] spmd_types.matmul on axis 'tp': out_partial_axes lists 'tp', but the local result is R there: every rank computes the same value, which as a pending sum would be counted once per rank


def invariant(x: Annotated[Tensor, I["tp"]]) -> None:
    spmd.sum(x, out_partial_axes="tp")  # E: [spmd-partial] the local result is I there


def already_partial(x: Annotated[Tensor, P["tp"]], w: Annotated[Tensor, R["tp"]]) -> None:
    spmd.matmul(x, w, out_partial_axes="tp")  # E: [spmd-partial] the local result is already P there (a pending sum); drop 'tp' from out_partial_axes


def sharded_result(x: Annotated[Tensor, S["tp", 0]], w: Annotated[Tensor, R["tp"]]) -> None:
    spmd.einsum("bk,kn->bn", x, w, out_partial_axes="tp")  # E: [spmd-partial] the local result is S(0) there: the ranks hold pieces of one tensor, not summands of it


def summed_elsewhere(x: Annotated[Tensor, S["tp", 0]]) -> None:
    spmd.sum(x, 1, out_partial_axes="tp")  # E: [spmd-partial] the local result is S(0) there


def unlisted_axis(x: Annotated[Tensor, V["dp"], R["tp"]]) -> None:
    spmd.sum(x, out_partial_axes=("dp", "tp"))  # E: [spmd-partial] spmd_types.sum on axis 'tp'


def bias(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, S["tp", 1]], b: Annotated[Tensor, R["tp"]]) -> None:
    spmd.linear(x, w, b, out_partial_axes="tp")  # E: [spmd-partial] spmd_types.linear: a bias with out_partial_axes would be added on every rank


def op_error_once(x: Annotated[Tensor, P["tp"]], w: Annotated[Tensor, P["tp"]]) -> None:
    spmd.matmul(x, w, out_partial_axes="tp")  # E: [spmd-partial] a product of two P factors


def variable_axes(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, S["tp", 0]], axis: str) -> None:
    spmd.matmul(x, w, out_partial_axes=axis)  # E: [spmd-axis] cannot tell which mesh axes out_partial_axes names


def twice(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> None:
    spmd.matmul(x, w, out_partial_axes=("tp", "tp"))  # E: [spmd-axis] name 'tp' twice


def wrong_declaration(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, R["tp"]]:
    return spmd.matmul(x, w, out_partial_axes="tp")  # E: [spmd-boundary] expected R, got P; fix: all_reduce
