"""Holes where an accepted program would compute the wrong value or gradient (issue 14), now closed."""
from typing import Annotated

import torch
from torch import Tensor

from spmd_types import P, R, S, reduce_scatter


# mypy checks a return that fails against its declared type a second time without it,
# and keeps that result when nothing is reported; the plugin still knows it is the return.
def scattered_on_the_wrong_dim(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, S["tp", 1]]:
    return reduce_scatter(p, "tp", src=P, dst=S(0))  # E: [spmd-boundary] return value on axis 'tp': expected S(1), got S(0); fix: reduce_scatter(p, "tp", src=P, dst=S(1))


def constant_returned_as_a_partial_sum() -> Annotated[Tensor, P["tp"]]:
    return torch.ones(3)  # E: [spmd-boundary] return value on axis 'tp': expected P, got weak


def scattered_on_the_declared_dim(p: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, S["tp", 0]]:
    return reduce_scatter(p, "tp", src=P, dst=S(0))  # OK


def zero_returned_as_a_partial_sum() -> Annotated[Tensor, P["tp"]]:
    return torch.zeros(3)  # OK
