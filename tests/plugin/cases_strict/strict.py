"""strict_axes with axes = dp, tp: every annotation names every axis, and only those."""
from typing import Annotated

from torch import Tensor

from spmd_types import R, V


def f(
    ok: Annotated[Tensor, R["dp"], V["tp"]],  # OK
    missing: Annotated[Tensor, V["tp"]],  # E: [spmd-axis] strict_axes: the annotation does not say the type on 'dp'
    typo: Annotated[Tensor, R["pd"], V["tp"]],  # E: [spmd-axis] unknown mesh axis 'pd' # E: [spmd-axis] strict_axes
) -> None:
    pass
