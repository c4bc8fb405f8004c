"""local_region with the mesh's axes configured (dp, tp): an axis outside them is an error; the spec's types
are R on the configured axes it does not name."""
from typing import Annotated

from torch import Tensor

from spmd_types import PartitionSpec, R, S, all_gather, local_region

COLUMNS = PartitionSpec(None, "tp")


@local_region("cp", in_specs=(COLUMNS,), out_specs=COLUMNS)  # E: [spmd-axis] local_region names axis 'cp', which is not an axis of the mesh (dp, tp)
def on_another_axis(a: Tensor) -> Tensor:
    return a


@local_region("tp", in_specs=(PartitionSpec(None, "ep"),), out_specs=COLUMNS)  # E: [spmd-axis] local_region names axis 'ep'
def spec_on_another_axis(a: Tensor) -> Tensor:
    return a


@local_region("tp", in_specs=(COLUMNS,), out_specs=PartitionSpec(None, None))  # OK: dp is R in both specs
def gathered(a: Annotated[Tensor, R["dp"], S["tp", 1]]) -> Annotated[Tensor, R["dp"], R["tp"]]:
    return all_gather(a, "tp", src=S(1), dst=R)  # OK
