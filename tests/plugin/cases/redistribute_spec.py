"""redistribute_spec typed by its specs: the input must fit src, the result is dst (R on the other axes)."""
from typing import Annotated

from torch import Tensor

from spmd_types import P, PartitionSpec, R, S, redistribute_spec

FSDP_TP = PartitionSpec(("tp", "dp"), None)
TP = PartitionSpec("tp", None)


def unshard(w: Annotated[Tensor, PartitionSpec(("tp", "dp"), None)]) -> Annotated[Tensor, S["tp", 0], R["dp"]]:
    return redistribute_spec(w, FSDP_TP, TP)  # OK


def reduced(y: Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]) -> Annotated[Tensor, PartitionSpec("dp", None), R["tp"]]:
    return redistribute_spec(y, PartitionSpec("dp", None, partial="tp"), PartitionSpec("dp", None))  # OK


def still_partial(y: Annotated[Tensor, PartitionSpec("dp", None, partial="tp")]) -> Annotated[Tensor, P["tp"]]:
    return redistribute_spec(y, PartitionSpec("dp", None, partial="tp"), PartitionSpec("dp", None))  # E: [spmd-boundary] expected P, got R


def wrong_source(y: Annotated[Tensor, PartitionSpec("dp", None)]) -> None:
    redistribute_spec(y, PartitionSpec(None, "dp"), PartitionSpec(None, None))  # E: [spmd-boundary] redistribute_spec on axis 'dp': expected S(1), got S(0)


def not_literal(y: Annotated[Tensor, PartitionSpec("dp", None)], spec: PartitionSpec) -> Annotated[Tensor, P["tp"]]:
    return redistribute_spec(y, spec, spec)  # OK: unknown on every axis
