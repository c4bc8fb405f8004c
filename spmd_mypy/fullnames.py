"""Every full name the plugin recognizes, as mypy spells it.

mypy names classes and functions by where they are defined (``torch._tensor.Tensor``,
``torch._C._VariableFunctions.matmul``), and hands the plugin those names when it
asks for a hook.  They are collected here, by library, so that a change in torch's
or mypy's layout is fixed in one place.  The rule core names ops by their public
names (``torch.matmul``, ``torch.Tensor.add``); :func:`public_function_name`
translates.  This module imports nothing.
"""

from __future__ import annotations

import functools
from typing import Final

__all__ = [
    "ANNOTATED",
    "ASSERT_TYPE",
    "AUTOGRAD_FUNCTION",
    "AXIS_GROUP",
    "AXIS_INDEX",
    "AXIS_MARKERS",
    "AXIS_SIZE",
    "BUILTIN_SUM",
    "CONSTANTS",
    "DEVICE_MESH",
    "DTENSOR",
    "DTENSOR_RECEIVERS",
    "FALSE",
    "FLOAT",
    "GLOBAL_SPMD",
    "GROUP_RECEIVERS",
    "INFINITIES",
    "INIT_DEVICE_MESH",
    "LEN",
    "LIST",
    "LITERAL",
    "LOCAL_MAP",
    "LOCAL_MAP_DECORATOR",
    "LOCAL_REGION",
    "LOCAL_REGION_DECORATOR",
    "LOCAL_TYPE_MARKERS",
    "MESH_RECEIVERS",
    "MODULE",
    "NAMED_MESH",
    "NONE",
    "NO_GRAD",
    "NUMBERS",
    "PARAMETER",
    "PARTITION_SPEC",
    "PLACED_DTENSOR",
    "PLACEMENT_CLASSES",
    "PROCESS_GROUP",
    "RANK_FUNCTIONS",
    "REDISTRIBUTE_SPEC",
    "REDUCE_OP",
    "SEQUENCES",
    "SHARD_MARKERS",
    "SPMD_ALIAS",
    "SPMD_PACKAGE",
    "SPMD_PARAMETER",
    "SPMD_TENSOR",
    "SPMD_TENSORS",
    "SPMD_TYPED",
    "STR",
    "TENSOR",
    "TENSOR_BASE",
    "TENSOR_PROPERTY_OWNERS",
    "TENSOR_RECEIVERS",
    "TORCH_DISTRIBUTED",
    "TRUE",
    "TYPING_SEQUENCE",
    "WORLD_GROUP_OWNERS",
    "method_of",
    "public_function_name",
    "public_module_name",
    "spmd_function",
]

# -- spmd_types ---------------------------------------------------------------------

SPMD_PACKAGE: Final = "spmd_types"
"""The package whose import makes a module one that uses SPMD types."""

SPMD_TENSOR: Final = "spmd_types._typed.SpmdTensor"
SPMD_PARAMETER: Final = "spmd_types._typed.SpmdParameter"
AXIS_GROUP: Final = "spmd_types._typed.AxisGroup"
NAMED_MESH: Final = "spmd_types._typed.NamedMesh"
PLACED_DTENSOR: Final = "spmd_types._typed.PlacedDTensor"
LOCAL_MAP_DECORATOR: Final = "spmd_types._typed.LocalMapDecorator"
LOCAL_REGION_DECORATOR: Final = "spmd_types._typed.LocalRegionDecorator"
"""The stub-only classes that carry SPMD types (``stubs/spmd_types/_typed.pyi``; see :mod:`spmd_mypy.encoding`)."""

SPMD_TENSORS: Final = frozenset({SPMD_TENSOR, SPMD_PARAMETER})
"""The classes of SPMD-typed tensors."""

SPMD_TYPED: Final = SPMD_TENSORS | {AXIS_GROUP}
"""Every class that carries an SPMD type: the tensors and the process groups of an axis."""

ASSERT_TYPE: Final = "spmd_types.assert_type"
AXIS_INDEX: Final = "spmd_types.axis_index"
AXIS_SIZE: Final = "spmd_types.axis_size"


def spmd_function(name: str) -> str:
    """The full name of ``spmd_types`` function ``name`` (a collective or cast: ``spmd_types.all_reduce``)."""
    return f"{SPMD_PACKAGE}.{name}"


# The markers R, I, V, P and S are imported from the package, from the rule core's
# interface, or from where the core defines them.
_MARKER_MODULES: Final = ("spmd_types", "spmd_types.typesystem", "spmd_types.typesystem.local_types")

LOCAL_TYPE_MARKERS: Final[dict[str, str]] = {
    f"{module}.{name}": name for module in _MARKER_MODULES for name in ("R", "I", "V", "P")
}
"""The markers of the four local types, by full name, each with the code of its type (its own name)."""

SHARD_MARKERS: Final = frozenset(f"{module}.{name}" for module in _MARKER_MODULES for name in ("S", "Shard"))
AXIS_MARKERS: Final = frozenset({"spmd_types.Axis", "spmd_types.typesystem.Axis",
                                 "spmd_types.typesystem.annotations.Axis"})
SPMD_ALIAS: Final = frozenset({"spmd_types.Spmd", "spmd_types.typesystem.Spmd",
                               "spmd_types.typesystem.annotations.Spmd"})
"""``Spmd[Tensor, Literal["dp:R"]]``, the spelling of an annotation that survives type aliases.

The stubs make ``spmd_types.Spmd`` a generic alias of its first argument, so that
checkers without the plugin accept it; the other two names are the runtime class."""

PARTITION_SPEC: Final = frozenset({"spmd_types.PartitionSpec", "spmd_types.typesystem.PartitionSpec",
                                   "spmd_types.typesystem.partition_spec.PartitionSpec"})
"""``PartitionSpec(...)`` in ``Annotated`` metadata (:mod:`spmd_mypy.partition_specs`)."""

REDISTRIBUTE_SPEC: Final = "spmd_types.redistribute_spec"
"""Typed by the specs it is given (:mod:`spmd_mypy.redistribute_spec`)."""

GLOBAL_SPMD: Final = frozenset({"spmd_types.global_spmd", "spmd_types._checking.global_spmd"})
"""The decorator of a function checked in global SPMD (:mod:`spmd_mypy.global_mode`)."""

LOCAL_REGION: Final = frozenset({"spmd_types.local_region", "spmd_types._regions.local_region"})
"""The decorator of a function local SPMD on chosen axes inside a global one (:mod:`spmd_mypy.regions`)."""

LITERAL: Final = frozenset({"typing.Literal", "typing_extensions.Literal"})

ANNOTATED: Final = ("typing.Annotated", "typing_extensions.Annotated")

# -- torch ----------------------------------------------------------------------------

TENSOR: Final = "torch._tensor.Tensor"
TENSOR_BASE: Final = "torch._C.TensorBase"
PARAMETER: Final = "torch.nn.parameter.Parameter"
PROCESS_GROUP: Final = "torch._C._distributed_c10d.ProcessGroup"
DEVICE_MESH: Final = "torch.distributed.device_mesh.DeviceMesh"
MODULE: Final = "torch.nn.modules.module.Module"
AUTOGRAD_FUNCTION: Final = "torch.autograd.function.Function"

DTENSOR: Final = "torch.distributed.tensor._api.DTensor"
DTENSOR_RECEIVERS: Final = frozenset({DTENSOR, PLACED_DTENSOR})
"""Classes whose ``to_local``/``redistribute`` are DTensor's (mypy keys a method hook by the receiver's class)."""
MESH_RECEIVERS: Final = frozenset({DEVICE_MESH, NAMED_MESH})
GROUP_RECEIVERS: Final = frozenset({PROCESS_GROUP, AXIS_GROUP})
"""Classes whose ``size()`` counts a process group's ranks."""
INIT_DEVICE_MESH: Final = "torch.distributed.device_mesh.init_device_mesh"
LOCAL_MAP: Final = "torch.distributed.tensor.experimental._func_map.local_map"
PLACEMENT_CLASSES: Final = {
    f"torch.distributed.tensor.placement_types.{kind}": kind for kind in ("Shard", "Replicate", "Partial", "Reduced")
}
"""DTensor's placement classes, by full name, with the kind the rule core names them by."""

NO_GRAD: Final = frozenset({"torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})
"""Context managers and decorators under which torch records no autograd graph."""

TENSOR_RECEIVERS: Final = frozenset({TENSOR, TENSOR_BASE, PARAMETER, SPMD_TENSOR, SPMD_PARAMETER})
"""Classes whose methods are tensor methods (mypy keys a method hook by the receiver's class)."""

TENSOR_PROPERTY_OWNERS: Final = frozenset({TENSOR_BASE, TENSOR})
"""The classes that define the tensor properties (mypy keys an attribute hook by the defining class)."""

TORCH_DISTRIBUTED: Final = "torch.distributed."
REDUCE_OP: Final = frozenset({"torch._C._distributed_c10d.ReduceOp", "torch._C._distributed_c10d.ReduceOp.RedOpType"})
"""torch's reductions: ``ReduceOp.MAX`` (or ``ReduceOp.RedOpType.MAX``) is a member of one of these."""
WORLD_GROUP_OWNERS: Final = frozenset(
    {"torch.distributed.distributed_c10d.group", "torch.distributed.distributed_c10d.GroupMember"})
"""The classes whose ``WORLD`` is torch's default process group (``dist.group.WORLD``)."""
"""The prefix of torch.distributed's functions."""

RANK_FUNCTIONS: Final = frozenset({"torch.distributed.distributed_c10d.get_rank", "torch.distributed.get_rank"})
"""torch.distributed's ``get_rank(group)``: this rank's index in a process group."""

_TORCH_MODULES: Final = "torch.nn.modules."

# Where mypy finds torch's functions, and the public namespace each belongs to.
_FUNCTION_NAMESPACES: Final = (
    ("torch._C._VariableFunctions.", "torch."),
    ("torch.functional.", "torch."),
    ("torch._C._nn.", "torch.nn.functional."),
    ("torch.nn.functional.", "torch.nn.functional."),
    ("torch.nn.parameter.", "torch.nn."),
)


@functools.lru_cache(maxsize=4096)  # mypy asks at every call site, for few distinct names
def public_function_name(fullname: str) -> str | None:
    """``torch.matmul`` for ``torch._C._VariableFunctions.matmul``; ``None`` if not a torch function."""
    for prefix, public in _FUNCTION_NAMESPACES:
        if fullname.startswith(prefix):
            return public + fullname[len(prefix):]
    return None


def public_module_name(owner: str) -> str | None:
    """``torch.nn.GELU`` for ``torch.nn.modules.activation.GELU``; ``None`` if not a torch module class."""
    if not owner.startswith(_TORCH_MODULES):
        return None
    return f"torch.nn.{owner.rpartition('.')[2]}"


_RECEIVERS_BY_NAME: Final = {name.rpartition(".")[2]: name for name in TENSOR_RECEIVERS}


def method_of(fullname: str) -> tuple[str, str]:
    """The class and the method a method hook's ``fullname`` names: ``("torch._tensor.Tensor", "add")``.

    mypy names a reflected operator that it tries first (``r + h`` with ``h`` a
    tensor subclass, or a union of them) by its message name, ``__radd__ of
    TensorBase``; the class is then found among :data:`TENSOR_RECEIVERS`, and is
    empty for any other class.
    """
    owner, _, method = fullname.rpartition(".")
    if not owner and " of " in fullname:
        method, _, cls = fullname.partition(" of ")
        owner = _RECEIVERS_BY_NAME.get(cls, "")
    return owner, method


# -- builtins and typing ---------------------------------------------------------------

STR: Final = "builtins.str"
LIST: Final = "builtins.list"
LEN: Final = "builtins.len"
FLOAT: Final = "builtins.float"
INFINITIES: Final = frozenset({"math.inf", "torch.inf", "numpy.inf"})
"""Names of the positive infinity."""
BUILTIN_SUM: Final = "builtins.sum"
TRUE: Final = "builtins.True"
FALSE: Final = "builtins.False"
NONE: Final = "builtins.None"
CONSTANTS: Final[dict[str, object]] = {NONE: None, TRUE: True, FALSE: False}
"""The builtin constants, by full name, with their values."""
NUMBERS: Final = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex"})
TYPING_SEQUENCE: Final = "typing.Sequence"
SEQUENCES: Final = frozenset({LIST, "builtins.tuple", TYPING_SEQUENCE, "collections.abc.Sequence"})
"""Containers whose elements an op reads one by one (``torch.cat([a, b])``)."""
