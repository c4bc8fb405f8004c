"""Ops whose linearity depends on an argument: scatter_reduce's ``reduce``, a fill that is infinite.

``scatter_reduce`` with ``reduce="sum"`` or ``"mean"`` is linear in its input and source (each output
element is the input's, or a sum or mean over an index every rank takes alike); ``"amax"`` and
``"prod"`` are not.  An infinity written into a pending sum at positions every rank selects alike
(``masked_fill(p, mask, float("-inf"))``, ``where(mask, p, -inf)``) is the same infinity in the sum
of the ranks' values, as on one device; a finite value is counted once per rank.
tests/plugin/test_case_numerics.py runs these on simulated ranks.
"""
from __future__ import annotations

import math
from math import inf
from typing import Annotated

import torch
from torch import Tensor

from spmd_types import P, R, all_reduce

LIMIT: float = 1e4

def scatter_summed(p: Annotated[Tensor, P["tp"]], q: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return p.scatter_reduce(0, (r.abs() * 2).long().clamp(max=3), q, reduce="sum")  # OK

def scatter_averaged(p: Annotated[Tensor, P["tp"]], q: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return torch.scatter_reduce(p, 0, (r.abs() * 2).long().clamp(max=3), q, "mean", include_self=False)  # OK

def scatter_maximum(p: Annotated[Tensor, P["tp"]], q: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return p.scatter_reduce(0, (r.abs() * 2).long().clamp(max=3), q, reduce="amax")  # E: [spmd-partial] .scatter_reduce on axis 'tp': P (a pending sum) through a non-linear op

def masked_to_minus_infinity(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return p.masked_fill(r > 0, float("-inf"))  # OK

def masked_scores_softmax(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    scores = torch.where(r > 0, p, -math.inf)
    return all_reduce(scores, "tp", src=P, dst=R).softmax(-1)  # OK

def index_filled_with_infinity(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return p.index_fill(1, torch.tensor([0, 2]), -torch.inf)  # OK

def masked_to_a_named_infinity(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
    return p.masked_fill(r > 0, -inf)  # OK

def masked_to_a_named_finite_value(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return p.masked_fill(r > 0, -LIMIT)  # E: [spmd-partial] .masked_fill on axis 'tp': P plus a non-partial term (weak), which would be added once per rank

def masked_to_a_finite_value(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return p.masked_fill(r > 0, -1e4)  # E: [spmd-partial] .masked_fill on axis 'tp': P plus a non-partial term (weak), which would be added once per rank

def where_a_finite_value(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return torch.where(r > 0, 0.5, p)  # E: [spmd-partial] torch.where on axis 'tp': P plus a non-partial term (weak), which would be added once per rank
