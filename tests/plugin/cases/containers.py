"""Containers of tensors summed with Python's sum: each element keeps its own type.

mypy types a list or dict of tensors of different SPMD types by their join, which has none; the
literal the container was built from still says what each element is.
"""
from __future__ import annotations

from typing import Annotated

from torch import Tensor

from spmd_types import P, R, all_reduce


def dict_of_losses(ce: Annotated[Tensor, P["tp"]], aux: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    losses = {"ce": ce, "aux": aux}
    return sum(losses.values())  # E: [spmd-partial] sum on axis 'tp': P plus a non-partial term (R), which would be added once per rank


def dict_of_reduced_losses(ce: Annotated[Tensor, P["tp"]], aux: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    losses = {"ce": all_reduce(ce, "tp", src=P, dst=R), "aux": aux}
    return sum(losses.values())  # OK


def named_list(ce: Annotated[Tensor, P["tp"]], aux: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    terms = [ce, aux]
    return sum(terms)  # E: [spmd-partial] sum on axis 'tp': P plus a non-partial term (R), which would be added once per rank


def named_tuple_of_partials(a: Annotated[Tensor, P["tp"]], b: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, P["tp"]]:
    terms = (a, b)
    return sum(terms)  # OK
