"""Linear ops (docs/type-system.md): P flows through sums, views and copies when every summand is P."""
from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from spmd_types import I, P, R, Spmd, V

Pt = Spmd[Tensor, Literal["tp:P"]]
Rt = Spmd[Tensor, Literal["tp:R"]]
Vt = Spmd[Tensor, Literal["tp:V"]]
It = Spmd[Tensor, Literal["tp:I"]]


def partial_sums(p: Annotated[Tensor, P["tp"]], q: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> None:
    reveal_type(p + q)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p - q)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(-p)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.add(p, q, alpha=2))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.cat([p, q], dim=0))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.stack((p, q)))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.sum(0))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.mean())  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.view(-1))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.reshape(2, 2).transpose(0, 1).contiguous())  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.permute(1, 0).clone())  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.T)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.mT)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p[0])  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p[r.long()])  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.to(torch.float16))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.float())  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.where(r > 0, p, q))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.where(r > 0, p, 0.0))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.masked_fill(r > 0, 0.0))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.index_select(p, 0, r.long()))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.gather(0, r.long()))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(torch.zeros_like(p) + p)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.chunk(2))  # N: tuple[spmd_types._typed.SpmdTensor[Literal['tp:P']], ...]
    reveal_type(p.unflatten(0, (2, 2)))  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(p.chunk(2)[0])  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(F.pad(p, (1, 1)))  # N: SpmdTensor[Literal['tp:P']]


def affine(p: Pt, r: Rt) -> None:
    a = p + r  # E: [spmd-partial] P plus a non-partial term (R)
    b = p + 1  # E: [spmd-partial] P plus a non-partial term (weak)
    c = 1.0 - p  # E: [spmd-partial] P plus a non-partial term (weak)
    d = torch.cat([p, r])  # E: [spmd-partial] torch.cat on axis 'tp'
    e = torch.where(r > 0, p, r)  # E: [spmd-partial] P plus a non-partial term (R)
    f = p.masked_fill(r > 0, -1e4)  # E: [spmd-partial] P plus a non-partial term (weak)
    g = p + torch.ones(3)  # E: [spmd-partial] P plus a non-partial term (weak)
    h = p + torch.zeros(3)  # OK
    i = F.pad(p, (1, 1), value=1.0)  # E: [spmd-partial] P plus a non-partial term (weak)


def selectors(p: Pt, v: Vt, i: It, r: Rt, pi: Annotated[Tensor, P["tp"]]) -> None:
    reveal_type(i[r.long()])  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(torch.where(r > 0, i, i))  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(r[v.long()])  # N: SpmdTensor[Literal['tp:V']]
    a = p[v.long()]  # E: [spmd-mix] P (a pending sum) does not mix with V
    b = r[pi]  # E: [spmd-partial] P (a pending sum) as an index, mask, condition or comparison operand
    c = i[v.long()]  # E: [spmd-mix] I does not mix with V


def replicated_and_varying(r: Rt, v: Vt, s: Annotated[Tensor, R["tp"]]) -> None:
    reveal_type(r + s)  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(r * v)  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(torch.cat([r, v]))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(F.gelu(r))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(torch.softmax(v, -1))  # N: SpmdTensor[Literal['tp:V']]


def no_gradient(target: Annotated[Tensor, I["tp"]], v: Annotated[Tensor, V["tp"]], p: Annotated[Tensor, P["tp"]],
                start: int) -> None:
    mask = (target < start) | (target >= start + 8)
    reveal_type(mask)  # N: SpmdTensor[Any]
    kept = v * ~mask  # OK
    reveal_type(kept)  # N: SpmdTensor[Literal['tp:V']]
    above = v > target  # OK
    reveal_type(above)  # N: SpmdTensor[Literal['tp:V']]
    ids = target.long()
    picked = v.gather(-1, ids)  # OK
    best = p.argmax(-1)  # E: [spmd-partial] P (a pending sum) as an index, mask, condition or comparison operand


def lists_of_spmd_tensors(x: Annotated[Tensor, V["tp"]], w: Annotated[Tensor, R["tp"]]) -> None:
    outs = []
    for c in x.chunk(4):
        outs.append(c @ w)
    reveal_type(torch.cat(outs))  # N: SpmdTensor[Literal['tp:V']]
    parts = [c * 2 for c in x.chunk(2)]
    reveal_type(torch.stack(parts, dim=0))  # N: SpmdTensor[Literal['tp:V']]
