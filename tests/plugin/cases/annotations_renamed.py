"""The same annotation text, read where its names mean something else, and mistakes repeated.

The plugin remembers what an annotation declares (the same text recurs
thousands of times in a model), by the full names its markers resolve to:
here ``R`` is ``V`` and ``V`` is ``R``, while annotations.py spells the usual
names the same way.  A mistake is reported at every place that makes it.
"""
from typing import Annotated

from torch import Tensor

from spmd_types import R as V
from spmd_types import Spmd
from spmd_types import V as R


def swapped(a: Annotated[Tensor, R["tp"]], b: Annotated[Tensor, R["dp"], V["tp"]]) -> None:
    reveal_type(a)  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(b)  # N: SpmdTensor[Literal['dp:V'] | Literal['tp:R']]


def twice(
    a: Annotated[Tensor, R[0]],  # E: [spmd-annotation] takes mesh-axis names as strings
    b: Annotated[Tensor, R[0]],  # E: [spmd-annotation] takes mesh-axis names as strings
    c: Annotated[Tensor, R["dp"], V["dp"]],  # E: [spmd-annotation] axis 'dp' is annotated twice, as V and R
    d: Annotated[Tensor, R["dp"], V["dp"]],  # E: [spmd-annotation] axis 'dp' is annotated twice, as V and R
    e: Spmd[Tensor, "dp:R"],  # E: [spmd-annotation] write Spmd[Tensor, Literal["dp:R"]]
    f: Spmd[Tensor, "dp:R"],  # E: [spmd-annotation] write Spmd[Tensor, Literal["dp:R"]]
) -> None:
    reveal_type(a)  # N: torch._tensor.Tensor
    reveal_type(b)  # N: torch._tensor.Tensor
    reveal_type(e)  # N: SpmdTensor[Literal['dp:R']]
