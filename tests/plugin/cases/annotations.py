"""Annotation spellings, reveal_type, and malformed annotations."""
from typing import Annotated, Final, Literal, Optional

import torch
from torch import Tensor, nn
from torch.distributed import ProcessGroup

import spmd_types as spmd
from spmd_types import I, P, R, S, V, Axis, Spmd
from spmd_types import R as Replicate

Activation = Spmd[Tensor, Literal["dp:R, tp:V"]]
Weight = Spmd[nn.Parameter, Literal["tp:S(0)"]]


def spellings(
    a: Annotated[Tensor, R["dp"], V["tp"]],
    b: Annotated[Tensor, R["dp", "cp"]],
    c: Annotated[Tensor, S["tp", 0]],
    d: Annotated[Tensor, spmd.P["tp"]],
    e: Annotated[Tensor, Replicate["tp"]],
    f: "Annotated[Tensor, I['tp']]",
    g: Optional[Annotated[Tensor, V["tp"]]],
    h: list[Annotated[Tensor, P["tp"]]],
    i: tuple[Annotated[Tensor, R["tp"]], Annotated[Tensor, V["tp"]]],
    j: Activation,
    k: Weight,
    l: Annotated[nn.Parameter, I["dp"], S["tp", -1]],
    m: Annotated[Tensor, "b c", V["tp"]],
    n: Annotated[Tensor, "b c"],
) -> None:
    reveal_type(a)  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(b)  # N: SpmdTensor[Literal['cp:R'] | Literal['dp:R']]
    reveal_type(c)  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(d)  # N: SpmdTensor[Literal['tp:P']]
    reveal_type(e)  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(f)  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(g)  # N: SpmdTensor[Literal['tp:V']] | None
    reveal_type(h)  # N: list[spmd_types._typed.SpmdTensor[Literal['tp:P']]]
    reveal_type(i)  # N: tuple[spmd_types._typed.SpmdTensor[Literal['tp:R']], spmd_types._typed.SpmdTensor[Literal['tp:V']]]
    reveal_type(j)  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(k)  # N: SpmdParameter[Literal['tp:V']]
    reveal_type(l)  # N: SpmdParameter[Literal['dp:I'] | Literal['tp:V']]
    reveal_type(m)  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(n)  # N: torch._tensor.Tensor


def spellings_other_checkers_reject(
    a: Spmd[Tensor, "dp:R, tp:V"],  # E: [spmd-annotation] plain mypy and pyright reject this spelling; write Spmd[Tensor, Literal["dp:R, tp:V"]]
    b: Spmd[Tensor, R["dp"], V["tp"]],  # E: [spmd-annotation] write Spmd[Tensor, Literal["dp:R, tp:V"]] (or Annotated[Tensor, ...]  # E: [name-defined] "dp"  # E: [name-defined] "tp"
) -> None:
    reveal_type(a)  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(b)  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]


def literal_of_several(a: Spmd[Tensor, Literal["dp:R", "tp:S(0)"]]) -> None:
    reveal_type(a)  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]


class Block(nn.Module):
    weight: Annotated[nn.Parameter, V["tp"]]

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(4, 4))  # OK
        self.bias: Annotated[nn.Parameter, R["tp"]] = nn.Parameter(torch.zeros(4))  # OK

    def forward(self) -> None:
        reveal_type(self.weight)  # N: SpmdParameter[Literal['tp:V']]
        reveal_type(self.bias)  # N: SpmdParameter[Literal['tp:R']]


def groups(g: Annotated[ProcessGroup, Axis["tp"]]) -> None:
    reveal_type(g)  # N: AxisGroup[Literal['tp']]


def malformed(
    a: Annotated[Tensor, R[0]],  # E: [spmd-annotation] takes mesh-axis names as strings
    b: Annotated[Tensor, R[dp]],  # E: [spmd-annotation] takes mesh-axis names as strings
    c: Annotated[Tensor, S["tp"]],  # E: [spmd-annotation] a mesh-axis name and a tensor dim
    d: Annotated[Tensor, S["tp", "x"]],  # E: [spmd-annotation] the dim must be an int literal
    e: Annotated[Tensor, R["dp"], V["dp"]],  # E: [spmd-annotation] axis 'dp' is annotated twice, as R and V
    f: Annotated[int, R["dp"]],  # E: [spmd-annotation] SPMD types apply to tensors
    g: Annotated[Tensor, Axis["tp"]],  # E: [spmd-annotation] Axis[...] applies to a ProcessGroup
    h: Annotated[Tensor, R],  # E: [spmd-annotation] R needs mesh-axis names
    i: Annotated[Tensor, R["dp", "dp"]],  # E: [spmd-annotation] names an axis twice
    j: Annotated[ProcessGroup, Axis["tp"], R["dp"]],  # E: [spmd-annotation] cannot be combined
    k: Spmd[Tensor, Literal["dp:Q"]],  # E: [spmd-annotation] Spmd[...]: not an SPMD axis type: 'Q'
    l: Spmd[Tensor, 3],  # E: [spmd-annotation] the SPMD type as a Literal string
    m: Annotated[Optional[Tensor], S["tp", 0]],  # E: [spmd-annotation] inside the union: Optional[Annotated[Tensor, ...]]
) -> None:
    reveal_type(a)  # N: torch._tensor.Tensor


TP: Final = "tp"
