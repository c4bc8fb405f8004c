"""spmd_types: SPMD types for distributed PyTorch, checked statically by mypy.

Annotate tensors with one local SPMD type per device-mesh axis::

    from typing import Annotated
    from torch import Tensor
    import spmd_types as spmd
    from spmd_types import R, V

    def mlp(x: Annotated[Tensor, R["dp"], V["tp"]]) -> Annotated[Tensor, R["dp"], V["tp"]]: ...

and change types only through the collectives and casts of this package
(``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all``, ``ppermute``,
``reinterpret``, ``convert``, ``redistribute``; ``redistribute_spec`` between
:class:`PartitionSpec` layouts), whose autograd backwards are
exactly what the types promise; ``einsum``, ``matmul``, ``linear`` and ``sum``
take ``out_partial_axes=``, a local contraction whose result is a pending sum
on those axes.  The mypy plugin ``spmd_mypy`` checks the
annotations; at run time they are erased, unless ``with runtime_checking():``
(or ``SPMD_TYPES_CHECK=1``) checks the same rules on the running program.

Every name is imported on first use: the markers are pure Python, the
collectives load torch.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each public name and the module that provides it, imported on first access:
# the markers come from the rule core's interface and are pure Python, the
# runtime names load torch.  Importing a part of the rule core (as mypy's
# plugin entry point does) loads neither.
_DEFINED_IN = {
    "AnnotationError": "spmd_types.typesystem",
    "Axis": "spmd_types.typesystem",
    "AxisTypes": "spmd_types.typesystem",
    "Spmd": "spmd_types.typesystem",
    "I": "spmd_types.typesystem",
    "LocalType": "spmd_types.typesystem",
    "P": "spmd_types.typesystem",
    "R": "spmd_types.typesystem",
    "S": "spmd_types.typesystem",
    "Shard": "spmd_types.typesystem",
    "V": "spmd_types.typesystem",
    "PartitionSpec": "spmd_types.typesystem",
    "all_reduce": "spmd_types._collectives",
    "all_gather": "spmd_types._collectives",
    "reduce_scatter": "spmd_types._collectives",
    "all_to_all": "spmd_types._collectives",
    "ppermute": "spmd_types._collectives",
    "redistribute": "spmd_types._collectives",
    "redistribute_spec": "spmd_types._redistribute_spec",
    "reinterpret": "spmd_types._local",
    "einsum": "spmd_types._partial_outputs",
    "matmul": "spmd_types._partial_outputs",
    "linear": "spmd_types._partial_outputs",
    "sum": "spmd_types._partial_outputs",
    "convert": "spmd_types._local",
    "set_current_mesh": "spmd_types._mesh",
    "current_mesh": "spmd_types._mesh",
    "axis_index": "spmd_types._mesh",
    "axis_size": "spmd_types._mesh",
    "set_dist": "spmd_types._dist",
    "get_dist": "spmd_types._dist",
    "use_dist": "spmd_types._dist",
    "assert_type": "spmd_types._checks",
    "set_runtime_checks": "spmd_types._checks",
    "runtime_checks_enabled": "spmd_types._checks",
    "runtime_checking": "spmd_types._checking",
    "checked": "spmd_types._checking",
    "global_spmd": "spmd_types._checking",
    "local_region": "spmd_types._regions",
    "TypeTracker": "spmd_types._checking",
    "SpmdError": "spmd_types._errors",
    "SpmdValueError": "spmd_types._errors",
    "SpmdRuntimeError": "spmd_types._errors",
    "CollectiveArgumentError": "spmd_types._errors",
    "ShapeError": "spmd_types._errors",
    "UnknownAxisError": "spmd_types._errors",
    "NoCurrentMeshError": "spmd_types._errors",
    "NotDifferentiableError": "spmd_types._errors",
    "SpmdTypeCheckError": "spmd_types._errors",
}

__all__ = sorted(_DEFINED_IN)


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module 'spmd_types' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_DEFINED_IN))
