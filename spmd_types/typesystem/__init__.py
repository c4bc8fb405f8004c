"""The SPMD type system as plain data and pure functions: the single source of truth.

Everything that needs the rules (the mypy plugin, the runtime collectives,
the documentation tables and the tests) reads them from here.  This package
imports neither torch nor mypy.  Each name is loaded from its submodule on
first use, so a client that needs one small part (mypy's plugin entry point
needs only the error codes) does not pay for the rest.

* :mod:`.local_types`: ``R``, ``I``, ``V``, ``P``, ``S(i)``, constants, duality;
* :mod:`.spmd_type`: :class:`SpmdType`, one local type per mesh axis, and its text form;
* :mod:`.annotations`: the ``R["dp"]`` markers and reading ``Annotated`` metadata;
* :mod:`.ops`: the op table (linear, multilinear, non-linear arguments);
* :mod:`.join`: the per-axis join of ordinary ops and the boundary rule;
* :mod:`.collectives`: collectives and casts, their routes and backwards;
* :mod:`.loss`: the ``loss.backward()`` rule;
* :mod:`.ecosystem`: other libraries' communication functions and the calls they are;
* :mod:`.partition_spec`: :class:`PartitionSpec`, global SPMD layouts over several axes, and their per-axis types;
* :mod:`.layout`: where a spec puts each element (the denotation) and the local block reorders plans need;
* :mod:`.planner`: the collectives from one spec to another (``plan_redistribute``);
* :mod:`.codes`: the error codes, one per class of mistake;
* :mod:`.violations`: structured violations with fixes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spmd_types.typesystem.annotations import AnnotationError as AnnotationError
    from spmd_types.typesystem.annotations import Axis as Axis
    from spmd_types.typesystem.annotations import AxisTypes as AxisTypes
    from spmd_types.typesystem.annotations import axis_of_hint as axis_of_hint
    from spmd_types.typesystem.annotations import spmd_type_from_metadata as spmd_type_from_metadata
    from spmd_types.typesystem.annotations import spmd_type_of_hint as spmd_type_of_hint
    from spmd_types.typesystem.codes import Code as Code
    from spmd_types.typesystem.collectives import CALLS as CALLS
    from spmd_types.typesystem.collectives import CallOutcome as CallOutcome
    from spmd_types.typesystem.collectives import Transition as Transition
    from spmd_types.typesystem.collectives import backward as backward
    from spmd_types.typesystem.collectives import check_call as check_call
    from spmd_types.typesystem.collectives import check_call_on_axes as check_call_on_axes
    from spmd_types.typesystem.collectives import flattened_axes as flattened_axes
    from spmd_types.typesystem.collectives import route as route
    from spmd_types.typesystem.ecosystem import EQUIVALENTS as EQUIVALENTS
    from spmd_types.typesystem.ecosystem import GROUP_GETTERS as GROUP_GETTERS
    from spmd_types.typesystem.ecosystem import IN_PLACE as IN_PLACE
    from spmd_types.typesystem.ecosystem import REEXPORTS as REEXPORTS
    from spmd_types.typesystem.ecosystem import ROLES as ROLES
    from spmd_types.typesystem.ecosystem import Equivalent as Equivalent
    from spmd_types.typesystem.ecosystem import InPlace as InPlace
    from spmd_types.typesystem.ecosystem import check_in_place as check_in_place
    from spmd_types.typesystem.join import Operand as Operand
    from spmd_types.typesystem.join import OpOutcome as OpOutcome
    from spmd_types.typesystem.join import apply_op as apply_op
    from spmd_types.typesystem.join import check_fits as check_fits
    from spmd_types.typesystem.join import fits as fits
    from spmd_types.typesystem.layout import Reorder as Reorder
    from spmd_types.typesystem.layout import local_indices as local_indices
    from spmd_types.typesystem.local_types import WEAK as WEAK
    from spmd_types.typesystem.local_types import ZERO as ZERO
    from spmd_types.typesystem.local_types import AxisType as AxisType
    from spmd_types.typesystem.local_types import Constant as Constant
    from spmd_types.typesystem.local_types import I as I
    from spmd_types.typesystem.local_types import LocalType as LocalType
    from spmd_types.typesystem.local_types import P as P
    from spmd_types.typesystem.local_types import R as R
    from spmd_types.typesystem.local_types import S as S
    from spmd_types.typesystem.local_types import Shard as Shard
    from spmd_types.typesystem.local_types import V as V
    from spmd_types.typesystem.local_types import gradient_type as gradient_type
    from spmd_types.typesystem.local_types import parse_axis_type as parse_axis_type
    from spmd_types.typesystem.loss import check_backward as check_backward
    from spmd_types.typesystem.ops import OPS as OPS
    from spmd_types.typesystem.ops import OpRule as OpRule
    from spmd_types.typesystem.ops import Result as Result
    from spmd_types.typesystem.ops import lookup as lookup
    from spmd_types.typesystem.partition_spec import MeshAxes as MeshAxes
    from spmd_types.typesystem.partition_spec import PartitionSpec as PartitionSpec
    from spmd_types.typesystem.partition_spec import all_specs as all_specs
    from spmd_types.typesystem.partition_spec import dual as dual
    from spmd_types.typesystem.partition_spec import global_shape as global_shape
    from spmd_types.typesystem.partition_spec import mesh_axes as mesh_axes
    from spmd_types.typesystem.partition_spec import per_axis_types as per_axis_types
    from spmd_types.typesystem.planner import Plan as Plan
    from spmd_types.typesystem.planner import Step as Step
    from spmd_types.typesystem.planner import plan_redistribute as plan_redistribute
    from spmd_types.typesystem.planner import plan_via_replicated as plan_via_replicated
    from spmd_types.typesystem.spmd_type import UNKNOWN as UNKNOWN
    from spmd_types.typesystem.spmd_type import SpmdType as SpmdType
    from spmd_types.typesystem.spmd_type import parse as parse
    from spmd_types.typesystem.summation import summed_replicated_term as summed_replicated_term
    from spmd_types.typesystem.summation import sums_over_axis as sums_over_axis
    from spmd_types.typesystem.violations import Fix as Fix
    from spmd_types.typesystem.violations import Violation as Violation

# Where each public name is defined.  tests/typesystem/test_import.py keeps this
# equal to the imports above, which are what type checkers read.
_DEFINED_IN: dict[str, str] = {
    **dict.fromkeys(
        ("WEAK", "ZERO", "AxisType", "Constant", "I", "LocalType", "P", "R", "S", "Shard", "V", "gradient_type",
         "parse_axis_type"),
        "local_types",
    ),
    **dict.fromkeys(("UNKNOWN", "SpmdType", "parse"), "spmd_type"),
    **dict.fromkeys(
        ("AnnotationError", "Axis", "AxisTypes", "axis_of_hint", "spmd_type_from_metadata", "spmd_type_of_hint"),
        "annotations",
    ),
    **dict.fromkeys(("Code",), "codes"),
    **dict.fromkeys(("Fix", "Violation"), "violations"),
    **dict.fromkeys(("OPS", "OpRule", "Result", "lookup"), "ops"),
    **dict.fromkeys(("Operand", "OpOutcome", "apply_op", "check_fits", "fits"), "join"),
    **dict.fromkeys(
        ("CALLS", "CallOutcome", "Transition", "backward", "check_call", "check_call_on_axes", "flattened_axes",
         "route"),
        "collectives",
    ),
    **dict.fromkeys(("check_backward",), "loss"),
    **dict.fromkeys(("Reorder", "local_indices"), "layout"),
    **dict.fromkeys(
        ("MeshAxes", "PartitionSpec", "all_specs", "dual", "global_shape", "mesh_axes", "per_axis_types"),
        "partition_spec",
    ),
    **dict.fromkeys(("Plan", "Step", "plan_redistribute", "plan_via_replicated"), "planner"),
    **dict.fromkeys(("summed_replicated_term", "sums_over_axis"), "summation"),
    **dict.fromkeys(
        ("EQUIVALENTS", "GROUP_GETTERS", "IN_PLACE", "REEXPORTS", "ROLES", "Equivalent", "InPlace", "check_in_place"),
        "ecosystem",
    ),
}

__all__ = sorted(_DEFINED_IN)


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module 'spmd_types.typesystem' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"spmd_types.typesystem.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_DEFINED_IN))
