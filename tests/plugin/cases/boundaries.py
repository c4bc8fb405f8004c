"""Declarations are where types enter; at a boundary the type must be exactly the declared one, axis by axis."""
from typing import Annotated, Any, Literal, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from spmd_types import I, P, R, S, Spmd, V, all_reduce, reinterpret

Rt = Spmd[Tensor, Literal["tp:R"]]


def consume(x: Annotated[Tensor, R["tp"]], y: Optional[Annotated[Tensor, V["tp"]]] = None) -> Annotated[Tensor, V["tp"]]:
    raise NotImplementedError


def total(parts: list[Annotated[Tensor, R["tp"]]]) -> None:
    raise NotImplementedError


def shard0(x: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 0]]:
    return x  # OK


def arguments(r: Annotated[Tensor, R["tp"]], p: Annotated[Tensor, P["tp"]], v: Annotated[Tensor, V["tp"]],
              both: Annotated[Tensor, R["tp"], V["dp"]], plain: Tensor, s1: Annotated[Tensor, S["tp", 1]]) -> None:
    consume(r)  # OK
    consume(both)  # OK
    consume(plain)  # OK
    consume(torch.randn(3))  # OK
    consume(p)  # E: [spmd-boundary] argument "x" of "consume" on axis 'tp': expected R, got P; fix: all_reduce(p, "tp", src=P, dst=R)
    consume(v)  # E: [spmd-boundary] expected R, got V (per-rank data): all_reduce it if the ranks hold summands of the value, all_gather it if they hold pieces of it
    consume(r, r)  # E: [spmd-boundary] argument "y" of "consume" on axis 'tp': expected V, got R
    consume(x=r, y=v)  # OK
    shard0(v)  # OK
    shard0(s1)  # E: [spmd-boundary] expected S(0), got S(1); fix: all_to_all(s1, "tp", src=S(1), dst=S(0))
    reveal_type(consume(r))  # N: SpmdTensor[Literal['tp:V']]


def returns_from_calls(p: Annotated[Tensor, P["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    if w.numel() > 3:
        return p @ w  # E: [spmd-boundary] return value on axis 'tp': expected R, got P; fix: all_reduce(
    return all_reduce(p @ w, "tp", dst=R)  # OK


def returns_from_names(v: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    h = v * 2
    return h  # E@recommended: [return-value] Incompatible return value type


def unknown_axes_accepted(x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, V["tp"], R["dp"]]:
    return x * 2  # OK


def shard_declared(x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, S["tp", 0]]:
    return x + 1  # OK


def declared_variables(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> None:
    y: Annotated[Tensor, R["tp"]] = all_reduce(p, "tp", dst=R)  # OK
    z: Annotated[Tensor, R["tp"]] = p  # E: [assignment] Incompatible types in assignment
    h = p @ r
    h = all_reduce(h, "tp", dst=R)  # OK
    reveal_type(h)  # N: SpmdTensor[Literal['tp:R']]


class ColumnParallel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight: Annotated[nn.Parameter, V["tp"]] = nn.Parameter(torch.empty(4, 4))

    def forward(self, x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, V["tp"]]:
        return F.linear(x, self.weight)  # OK


class RowParallel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight: Annotated[nn.Parameter, V["tp"]] = nn.Parameter(torch.empty(4, 4))

    def forward(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
        y = reinterpret(F.linear(x, self.weight), "tp", src=V, dst=P)
        return all_reduce(y, "tp", dst=R)  # OK

    def helper(self, x: Annotated[Tensor, V["tp"]]) -> Tensor:
        return x


class Forgetful(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight: Annotated[nn.Parameter, V["tp"]] = nn.Parameter(torch.empty(4, 4))

    def forward(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
        return F.linear(x, self.weight)  # E: [spmd-boundary] return value on axis 'tp': expected R, got V


def modules(col: ColumnParallel, row: RowParallel, r: Annotated[Tensor, R["tp"]], i: Annotated[Tensor, I["tp"]]) -> None:
    h = col(r)  # OK
    reveal_type(h)  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(row(h))  # N: SpmdTensor[Literal['tp:R']]
    col(i)  # E: [spmd-boundary] argument "x" of "ColumnParallel.forward" on axis 'tp': expected R, got I; fix: convert(i, "tp", src=I, dst=R)
    row(r)  # E: [spmd-boundary] argument "x" of "RowParallel.forward" on axis 'tp': expected V, got R
    row.helper(r)  # E: [spmd-boundary] argument "x" of "RowParallel.helper"
    col(r, r)  # E: [call-arg] Too many arguments


class CopyToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, R["tp"]]:
        return x  # E: [return-value] Incompatible return value type

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        return grad


def functions(i: Annotated[Tensor, I["tp"]], r: Annotated[Tensor, R["tp"]]) -> None:
    reveal_type(CopyToRegion.apply(i))  # N: SpmdTensor[Literal['tp:R']]
    CopyToRegion.apply(r)  # E: [spmd-boundary] argument "x" of "CopyToRegion.forward" on axis 'tp': expected I, got R


def containers(xs: list[Annotated[Tensor, P["tp"]]], r: Annotated[Tensor, R["tp"]]) -> None:
    total([r, r])  # OK
    total(xs)  # E: [spmd-boundary] expected R, got P in its elements (each element needs all_reduce(element, "tp", src=P, dst=R))


def declared_targets(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]], v: Annotated[Tensor, V["tp"]]) -> None:
    y: Annotated[Tensor, R["tp"]] = p @ r  # E: [spmd-boundary] value of a declared type on axis 'tp': expected R, got P; fix: all_reduce(p @ r, "tp", src=P, dst=R)
    y = v * 2  # E: [spmd-boundary] value of a declared type on axis 'tp': expected R, got V
    # Under allow_redefinition mypy lets a parameter be re-bound to a value of another type.
    v = all_reduce(reinterpret(v, "tp", src=V, dst=P), "tp", dst=R)  # OK@recommended  # E@no-redefinition: [spmd-boundary] value of a declared type on axis 'tp': expected V, got R
    reveal_type(v)  # N@recommended: SpmdTensor[Literal['tp:R']]  # N@no-redefinition: SpmdTensor[Literal['tp:V']]
    w: Annotated[Tensor, V["dp"]] = v * 2  # OK


class Block(nn.Module):
    """Parameterless torch modules are typed as the op they are; others stay Any."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(4)

    def forward(self, x: Annotated[Tensor, V["tp"]], p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
        reveal_type(self.act(x))  # N: SpmdTensor[Literal['tp:V']]
        a = self.drop(p)  # E: [spmd-partial] torch.nn.functional.dropout on axis 'tp': P (a pending sum) through a non-linear op
        reveal_type(self.norm(x))  # N: Any
        h = self.drop(self.act(x))
        return h  # E@recommended: [return-value] Incompatible return value type


def make_partial() -> Annotated[Tensor, P["tp"]]:
    raise NotImplementedError


class Rebinding(nn.Module):
    """A variable first bound to a declared value (a call's result, a parameter, an attribute) is not declared."""

    weight: Annotated[nn.Parameter, S["tp", 0]]

    def forward(self, x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
        a = make_partial()
        a = all_reduce(a, "tp", dst=R)  # OK
        w = self.weight
        w = F.linear(x, w)  # OK@recommended  # E@no-redefinition: [assignment]
        h = x
        h = h * w.sum()  # OK
        reveal_type(h)  # N@recommended: SpmdTensor[Literal['tp:V']]  # N@no-redefinition: SpmdTensor[Literal['tp:R']]
        return a + h.sum()  # E@recommended: [spmd-boundary] return value on axis 'tp': expected R, got V
