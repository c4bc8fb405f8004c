"""A sum accumulated into a tensor that starts as a constant.

Started as a zero (``torch.tensor(0.0)``, ``torch.zeros(())``), the accumulator holds what is added to
it: a sum of pending sums is one (a zeros buffer written in place is unknown from its start, never
the zero it began as).  Started as another constant, it keeps that type, which what is added must fit
(``1 + p`` counts the ``1`` once per rank); adding replicated data is rejected too (compute it out of
place).  tests/plugin/test_case_numerics.py runs these on simulated ranks.
"""
from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor

from spmd_types import P, R


def accumulated_in_place(p: Annotated[Tensor, P["tp"]], q: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, P["tp"]]:
    total = torch.zeros(())
    total += p.sum()
    total -= q.sum()
    return total  # OK


def accumulated_in_place_from_a_literal(p: Annotated[Tensor, P["tp"]], scale: float) -> Annotated[Tensor, P["tp"]]:
    # Not run on simulated ranks (a float parameter): under LocalTensorMode torch.tensor(0.0) is one
    # tensor that every simulated rank adds into; on real ranks each has its own.
    total = torch.tensor(0.0)
    total += scale * p.sum()
    return total  # OK


def accumulated_into_zeros(p: Annotated[Tensor, P["tp"]], q: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, P["tp"]]:
    total = torch.zeros(())
    for loss in (p.sum(), q.mean()):
        total += loss
    return total  # OK


def accumulated_by_rebinding(p: Annotated[Tensor, P["tp"]], q: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, P["tp"]]:
    total = torch.tensor(0.0)
    for loss in (p.sum(), q.sum()):
        total = total + loss
    return total  # OK


def accumulated_onto_one(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, P["tp"]]:
    total = torch.tensor(1.0)
    total += p.sum()  # E: [spmd-partial] += on axis 'tp': P plus a non-partial term (weak), which would be added once per rank, written into a buffer of constants: compute it out of place
    return total



def replicated_onto_ones(r: Annotated[Tensor, R["tp"]]) -> None:
    total = torch.ones(())
    total += r.sum()  # E: [spmd-inplace] += on axis 'tp': writes a value of type R into a tensor of type weak
