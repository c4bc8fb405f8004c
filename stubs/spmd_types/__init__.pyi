# The public API of spmd_types as mypy sees it. Kept equal to the runtime by
# tests/stubs/test_stubs.py (mypy.stubtest).
from collections.abc import Callable, Iterable, Sequence
from contextlib import _GeneratorContextManager
from typing import Any, Final, Literal, TypeAlias, TypeVar

import torch
from torch.distributed import ProcessGroup
from torch.distributed.device_mesh import DeviceMesh
from typing_extensions import TypeAliasType, TypeVarTuple

from spmd_types import _typed as _typed
from spmd_types.typesystem.annotations import Axis as Axis
from spmd_types.typesystem.local_types import AnnotationError as AnnotationError
from spmd_types.typesystem.local_types import AxisTypes as AxisTypes
from spmd_types.typesystem.local_types import LocalType as LocalType
from spmd_types.typesystem.local_types import Shard as Shard
from spmd_types.typesystem.partition_spec import PartitionSpec as PartitionSpec
from spmd_types.typesystem.spmd_type import SpmdType as _SpmdType
from spmd_types.typesystem.violations import Violation as _Violation

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])
_TensorT = TypeVar("_TensorT", bound=torch.Tensor)
_SpmdText = TypeVarTuple("_SpmdText")

# `Spmd[Tensor, Literal["dp:R, tp:V"]]`. To a checker without the plugin (plain mypy, pyright) this
# generic alias is its first argument, and a Literal string is a valid argument: the form is clean
# there. The plugin hooks this name (its own full name, unlike `Annotated`, which mypy strips from
# type aliases) and reads the SPMD type from the Literal. At run time it builds the `Annotated` type.
Spmd = TypeAliasType("Spmd", _TensorT, type_params=(_TensorT, _SpmdText))

class _ShardMarker:
    # `S` is the class Shard at run time. Typed as an instance here so that mypy reads
    # `S["tp", 0]` in an expression (`assert_type(x, S["tp", 0])`) as a call of
    # __getitem__, not as a type application of a non-generic class.
    def __call__(self, dim: int) -> Shard: ...
    def __getitem__(self, key: tuple[str, int]) -> AxisTypes: ...

S: Final[_ShardMarker]
R: Final[LocalType]
I: Final[LocalType]
V: Final[LocalType]
P: Final[LocalType]

_Endpoint: TypeAlias = LocalType | Shard
_AxisLike: TypeAlias = str | tuple[str, ...] | ProcessGroup | DeviceMesh
_ReduceOp: TypeAlias = Literal["sum", "avg", "max", "min"]

def all_reduce(
    x: torch.Tensor,
    axis: _AxisLike,
    *,
    src: _Endpoint = ...,
    dst: _Endpoint,
    op: _ReduceOp = "sum",
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor: ...
def all_gather(
    x: torch.Tensor,
    axis: _AxisLike,
    *,
    src: _Endpoint = ...,
    dst: _Endpoint,
    gather_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor: ...
def reduce_scatter(
    x: torch.Tensor,
    axis: _AxisLike,
    *,
    src: _Endpoint = ...,
    dst: _Endpoint = ...,
    scatter_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor: ...
def all_to_all(
    x: torch.Tensor,
    axis: _AxisLike,
    *,
    src: _Endpoint = ...,
    dst: _Endpoint = ...,
    split_dim: int | None = None,
    concat_dim: int | None = None,
    split_sizes: Sequence[int] | None = None,
    out_split_sizes: Sequence[int] | None = None,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor: ...
def ppermute(x: torch.Tensor, axis: _AxisLike, perm: Iterable[tuple[int, int]]) -> torch.Tensor: ...
def redistribute(
    x: torch.Tensor,
    axis: _AxisLike,
    *,
    src: _Endpoint,
    dst: _Endpoint,
    comm_dtype: torch.dtype | None = None,
    out_dtype: torch.dtype | None = None,
    grad_comm_dtype: torch.dtype | None = None,
) -> torch.Tensor: ...
# The plugin types the result by dst and checks x against src where both are literal specs
# (spmd_mypy/redistribute_spec.py); otherwise the result is a plain Tensor, unknown on every axis.
def redistribute_spec(x: torch.Tensor, src: PartitionSpec, dst: PartitionSpec) -> torch.Tensor: ...
def reinterpret(x: torch.Tensor, axis: _AxisLike, *, src: _Endpoint, dst: _Endpoint) -> torch.Tensor: ...
def convert(
    x: torch.Tensor, axis: _AxisLike, *, src: _Endpoint, dst: _Endpoint, split_sizes: Sequence[int] | None = None
) -> torch.Tensor: ...
def einsum(equation: str, *operands: torch.Tensor, out_partial_axes: str | tuple[str, ...] = ()) -> torch.Tensor: ...
def matmul(
    input: torch.Tensor, other: torch.Tensor, *, out_partial_axes: str | tuple[str, ...] = ()
) -> torch.Tensor: ...
def linear(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    out_partial_axes: str | tuple[str, ...] = (),
) -> torch.Tensor: ...
def sum(
    input: torch.Tensor,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    out_partial_axes: str | tuple[str, ...] = (),
) -> torch.Tensor: ...
def set_current_mesh(mesh: DeviceMesh) -> _GeneratorContextManager[DeviceMesh]: ...
def current_mesh() -> DeviceMesh | None: ...
def axis_index(axis: _AxisLike) -> int: ...
def axis_size(axis: _AxisLike) -> int: ...
def set_dist(backend: Any) -> Any: ...
def get_dist() -> Any: ...
def use_dist(backend: _T) -> _GeneratorContextManager[_T]: ...
def assert_type(x: _T, *types: AxisTypes) -> _T: ...
def set_runtime_checks(enabled: bool) -> None: ...
def runtime_checks_enabled() -> bool: ...
def checked(fn: _F) -> _F: ...
def global_spmd(fn: _F) -> _F: ...
def local_region(
    axes: str | tuple[str, ...],
    *,
    in_specs: tuple[PartitionSpec | None, ...],
    out_specs: PartitionSpec | tuple[PartitionSpec | None, ...],
) -> _typed.LocalRegionDecorator[Any]: ...
def runtime_checking(*, raise_errors: bool = True, data: bool = False) -> _GeneratorContextManager[TypeTracker]: ...

class TypeTracker:
    raise_errors: bool
    errors: list[SpmdTypeCheckError]
    def __init__(self, raise_errors: bool = True) -> None: ...
    def type_of(self, x: object) -> _SpmdType | None: ...

class SpmdError(Exception): ...
class SpmdValueError(SpmdError, ValueError): ...
class SpmdRuntimeError(SpmdError, RuntimeError): ...
class CollectiveArgumentError(SpmdValueError):
    violation: _Violation | None
    @classmethod
    def from_violation(cls, where: str, violation: _Violation) -> CollectiveArgumentError: ...

class ShapeError(SpmdValueError): ...

class UnknownAxisError(SpmdValueError):
    known: tuple[str, ...]
    @classmethod
    def with_known(cls, message: str, known: Iterable[str]) -> UnknownAxisError: ...

class NoCurrentMeshError(SpmdRuntimeError): ...
class NotDifferentiableError(SpmdRuntimeError): ...
class SpmdTypeCheckError(SpmdRuntimeError):
    violation: _Violation | None
    @property
    def code(self) -> str | None: ...
    @classmethod
    def from_violation(
        cls, violation: _Violation, where: str, operand_names: tuple[str, ...] = (), value: str = "x"
    ) -> SpmdTypeCheckError: ...
