# Types of the public API of spmd_types, as the spmd_mypy plugin and mypy see them.
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Final, Literal, TypeAlias

from torch import SymInt, Tensor
from torch.distributed import ProcessGroup
from torch.distributed.device_mesh import DeviceMesh

from spmd_types import _typed as _typed

class AnnotationError(TypeError): ...
class SpmdRuntimeError(Exception): ...

class AxisTypes:
    """What ``R["dp"]`` evaluates to: annotation metadata."""

class LocalType:
    """``R``, ``I``, ``V`` or ``P``; ``R["dp", "cp"]`` is annotation metadata."""
    code: str
    def __getitem__(self, axes: str | tuple[str, ...]) -> AxisTypes: ...

R: Final[LocalType]
I: Final[LocalType]
V: Final[LocalType]
P: Final[LocalType]

class Shard:
    """``S(i)``: varying, and globally the concatenation along tensor dim ``i``."""
    dim: int
    def __init__(self, dim: int) -> None: ...
    def __class_getitem__(cls, key: tuple[str, int]) -> AxisTypes: ...

S = Shard

class Axis:
    """``Axis["tp"]``: marks a ProcessGroup as the group of mesh axis ``tp``."""
    name: str
    def __init__(self, name: str) -> None: ...
    def __class_getitem__(cls, name: str) -> Axis: ...

class Spmd:
    """``Spmd[Tensor, "dp:R, tp:V"]``: the SPMD-annotated type, usable in type aliases."""
    def __class_getitem__(cls, item: Any) -> Any: ...

class PartitionSpec(tuple[str | tuple[str, ...] | None, ...]):
    def __new__(cls, *entries: str | tuple[str, ...] | None) -> PartitionSpec: ...
    @property
    def axes(self) -> tuple[str, ...]: ...

_Endpoint: TypeAlias = LocalType | Shard
_Axis: TypeAlias = str | ProcessGroup

def all_reduce(
    x: Tensor, axis: _Axis, *, src: _Endpoint = ..., dst: _Endpoint, op: Literal["sum", "avg", "max", "min"] = ...
) -> Tensor: ...
def all_gather(
    x: Tensor,
    axis: _Axis,
    *,
    src: _Endpoint = ...,
    dst: _Endpoint,
    gather_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
) -> Tensor: ...
def reduce_scatter(
    x: Tensor,
    axis: _Axis,
    *,
    src: _Endpoint = ...,
    dst: _Endpoint = ...,
    scatter_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
) -> Tensor: ...
def all_to_all(
    x: Tensor,
    axis: _Axis,
    *,
    src: _Endpoint = ...,
    dst: _Endpoint = ...,
    split_dim: int | None = None,
    concat_dim: int | None = None,
) -> Tensor: ...
def ppermute(x: Tensor, axis: _Axis, perm: Sequence[tuple[int, int]]) -> Tensor: ...
def reinterpret(x: Tensor, axis: _Axis, *, src: _Endpoint, dst: _Endpoint) -> Tensor: ...
def convert(x: Tensor, axis: _Axis, *, src: _Endpoint, dst: _Endpoint) -> Tensor: ...
def redistribute(x: Tensor, axis: _Axis, *, src: _Endpoint, dst: _Endpoint) -> Tensor: ...
def assert_type(x: Tensor, *types: AxisTypes) -> Tensor: ...
def set_current_mesh(mesh: DeviceMesh) -> AbstractContextManager[DeviceMesh]: ...
def current_mesh() -> DeviceMesh: ...
def axis_index(axis: _Axis) -> int | SymInt: ...
def axis_size(axis: _Axis) -> int: ...
