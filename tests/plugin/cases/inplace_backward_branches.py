"""In-place writes keep their target's type; the loss.backward() rule; types that differ by branch."""
from typing import Annotated

import torch
from torch import Tensor

from spmd_types import I, P, R, V, all_reduce, reinterpret


def inplace(r: Annotated[Tensor, R["tp"]], v: Annotated[Tensor, V["tp"]], p: Annotated[Tensor, P["tp"]],
            q: Annotated[Tensor, P["tp"]]) -> None:
    r.add_(r)  # OK
    r.add_(v)  # E: [spmd-inplace] .add_ on axis 'tp': writes a value of type V into a tensor of type R
    r += v  # E: [spmd-inplace] += on axis 'tp': writes a value of type V into a tensor of type R
    p += q  # OK
    p += 1  # E: [spmd-partial] P plus a non-partial term
    r.copy_(v)  # E: [spmd-inplace] writes a value of type V into a tensor of type R
    p.zero_()  # OK
    p.fill_(1.0)  # E: [spmd-inplace] writes a value of type weak into a tensor of type P
    r[0] = v[0]  # E: [spmd-inplace] writes a value of type V into a tensor of type R
    p[0] = q[1]  # OK
    torch.add(r, r, out=v)  # E: [spmd-inplace] torch.add(out=...) on axis 'tp': writes a value of type R into a tensor of type V; compute it out of place


def losses(p: Annotated[Tensor, P["dp"]], r: Annotated[Tensor, R["dp"]], v: Annotated[Tensor, V["dp"]],
           i: Annotated[Tensor, I["dp"]]) -> None:
    p.sum().backward()  # OK
    i.backward()  # OK
    r.backward()  # E: [spmd-backward] r.backward() on axis 'dp': the loss is R, so every rank seeds a gradient of 1 and it is counted once per rank; fix: convert(r, "dp", src=R, dst=P)
    v.mean().backward()  # E: [spmd-backward] say how the ranks' losses combine; fix: reinterpret(v.mean(), "dp", src=V, dst=P)
    r.backward(torch.ones(1))  # E: [spmd-backward] the loss is R, so every rank seeds a gradient of 1
    reinterpret(v.sum(), "dp", src=V, dst=P).backward()  # OK
    all_reduce(v.sum(), "dp", dst=R).backward()  # E: [spmd-backward] the loss is R


def branches(p: Annotated[Tensor, P["tp"]], flag: bool) -> Annotated[Tensor, R["tp"]]:
    h = p * 2
    if flag:
        h = all_reduce(h, "tp", dst=R)
    y = h + 1  # E@no-redefinition: [spmd-partial] P plus a non-partial term  # E@recommended: [spmd-branch] "h": has SPMD type tp:P or tp:R depending on the branch taken
    return h  # E@recommended: [return-value] Incompatible return value type


def branches_on_every_side(r: Annotated[Tensor, R["tp"]], p: Annotated[Tensor, P["tp"]], flag: bool) -> None:
    # mypy checks an operator or a method on a union one member at a time (and tries
    # r.__radd__ first when the right operand is a tensor subclass): each place is reported.
    if flag:
        h = r
    else:
        h = p  # E@no-redefinition: [assignment]
    a = h + r  # E@recommended: [spmd-branch] "h": has SPMD type tp:P or tp:R depending on the branch taken
    b = r + h  # E@recommended: [spmd-branch] "h": has SPMD type tp:P or tp:R depending on the branch taken
    c = h + h  # E@recommended: [spmd-branch] "h": has SPMD type tp:P or tp:R depending on the branch taken
    d = h.sum()  # E@recommended: [spmd-branch] "h": has SPMD type tp:P or tp:R depending on the branch taken
    e = h.relu()  # E@recommended: [spmd-branch] "h": has SPMD type tp:P or tp:R depending on the branch taken
    f = r * 2 + r  # OK


def declared_branches(p: Annotated[Tensor, P["tp"]], flag: bool) -> Annotated[Tensor, R["tp"]]:
    h: Annotated[Tensor, R["tp"]] = all_reduce(p, "tp", dst=R)
    if flag:
        h = h * 2
    return h + 1  # OK


def loops(x: Annotated[Tensor, R["tp"]], w: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    for _ in range(3):
        x = x @ w
    return x  # OK


def accumulators(xs: list[Annotated[Tensor, V["tp"]]], ps: list[Annotated[Tensor, P["tp"]]]) -> None:
    total = torch.zeros(())
    for x in xs:
        total = total + x.sum()
    reveal_type(total)  # N: SpmdTensor[Literal['tp:V']]
    partial = torch.zeros(())
    for q in ps:
        partial = partial + q
    y = all_reduce(partial, "tp", dst=R)  # OK
    count = torch.ones(())
    for q in ps:
        count = q * 2
    z = count + 1  # E@recommended: [spmd-branch] "count": has SPMD type *:weak or tp:P depending on the branch taken
