# The types the spmd_mypy plugin gives to SPMD-annotated values. Stub-only: nothing
# here exists at run time, and user code never names these classes; it writes
# `Annotated[Tensor, R["dp"], V["tp"]]` and the plugin turns that into
# `SpmdTensor[Literal["dp:R", "tp:V"]]`.
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from torch import Tensor
from torch.distributed import ProcessGroup
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor
from torch.nn import Parameter

_L_co = TypeVar("_L_co", covariant=True)
_A_co = TypeVar("_A_co", covariant=True)

class SpmdTensor(Tensor, Generic[_L_co]):
    """A tensor whose SPMD type is known on some mesh axes.

    The argument is a union of ``Literal["axis:type"]``, one per known axis; an axis
    not listed is unknown. Without mypy's allow_redefinition, values the plugin
    computes are ``SpmdTensor[Any]`` (their type rides in a side channel), so that a
    variable can be re-bound to a value of another SPMD type.
    """

class SpmdParameter(Parameter, SpmdTensor[_L_co]):
    """An ``nn.Parameter`` whose SPMD type is known."""

class AxisGroup(ProcessGroup, Generic[_A_co]):
    """The process group of one mesh axis, named by a ``Literal`` argument."""

class NamedMesh(DeviceMesh, Generic[_A_co]):
    """A device mesh whose dim names are known, in order: ``NamedMesh[Literal["dp, tp"]]``."""

class PlacedDTensor(DTensor, Generic[_L_co]):
    """A DTensor whose placements on named mesh dims are known.

    Written ``PlacedDTensor[Literal["dp:Replicate(), tp:Shard(0)"]]``.

    A DTensor is a global tensor: ops on it are DTensor's, and the plugin gives their
    results no type. Its placements are what ``to_local`` turns into a local type.
    """

class LocalMapDecorator(Generic[_L_co]):
    """``local_map(out_placements=..., ...)`` without its function: a decorator whose placements are known.

    Written ``LocalMapDecorator[Literal["tp | Replicate(); None | - | Shard(0) | one"]]`` (see
    ``spmd_types.typesystem.LocalMap``); the plugin checks the function it decorates.
    """

    def __call__(self, func: Callable[..., Any], /) -> Any: ...

_F = TypeVar("_F", bound=Callable[..., Any])

class LocalRegionDecorator(Generic[_L_co]):
    """``local_region(axes, in_specs=..., out_specs=...)`` without its function: a decorator whose specs are known.

    Written ``LocalRegionDecorator[Literal["tp | dp:S(0), tp:S(1) | dp:S(0), tp:R | one"]]`` (see
    ``spmd_types.typesystem.Region``); the plugin checks the function it decorates and gives
    its result the types of ``out_specs``.
    """

    def __call__(self, func: _F, /) -> _F: ...
