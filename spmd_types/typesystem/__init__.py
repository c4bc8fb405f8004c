"""The SPMD type system as plain data and pure functions: the single source of truth.

Everything that needs the rules (the mypy plugin, the runtime collectives,
the documentation tables and the tests) reads them from here, and imports
them from this package, never from a submodule: the package exports every
public name (the ``__all__``) of every submodule, and a test fails when code
outside the core imports past it.  This package imports neither torch nor
mypy.  Each name is loaded from its submodule on first use, so a client that
needs one small part (mypy's plugin entry point needs only the error codes)
does not pay for the rest.

Where each rule is:

* :mod:`.local_types`: ``R``, ``I``, ``V``, ``P``, ``S(i)``, constants, duality,
  and the ``R["dp"]`` / ``S["tp", 0]`` markers they build;
* :mod:`.spmd_type`: :class:`SpmdType`, one local type per mesh axis, and its text form;
* :mod:`.annotations`: ``Axis["tp"]``, ``Spmd[...]`` and reading ``Annotated`` metadata;
* :mod:`.partition_spec`: ``PartitionSpec``, the global layout of a tensor's dims;
* :mod:`.layout` and :mod:`.planner`: which elements a rank holds under a spec,
  and the cheapest collectives from one spec to another;
* :mod:`.ops`: the op table (linear, multilinear, non-linear arguments);
* :mod:`.join`: the per-axis join of ordinary ops and the boundary rule;
* :mod:`.shard_dims`: where a shard's tensor dim goes through an op;
* :mod:`.collectives`: collectives and casts, their routes and backwards;
* :mod:`.partial_outputs`: ``out_partial_axes=``, a local op then ``reinterpret(V -> P)``;
* :mod:`.global_rules`: global SPMD, the rules on top of local SPMD and shard propagation of specs;
* :mod:`.summation`: a replicated summand in the input of a reduction;
* :mod:`.size_one`: axes a program has tested to have one rank, where all types coincide;
* :mod:`.numbers`: Python numbers read out of tensors or computed from the rank's index;
* :mod:`.loss`: the ``loss.backward()`` rule;
* :mod:`.ecosystem`: other libraries' communication functions and the calls they are;
* :mod:`.placements`: DTensor placements and the local types they stand for;
* :mod:`.regions`: ``local_region``, a function local SPMD on chosen axes inside a global program;
* :mod:`.local_map`: DTensor's ``local_map``, the types its placements give the function it wraps;
* :mod:`.codes`: the error codes, one per class of mistake;
* :mod:`.memo`: bounded memos, for the answers the checker asks again and again;
* :mod:`.violations`: structured violations with fixes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spmd_types.typesystem.annotations import Axis as Axis
    from spmd_types.typesystem.annotations import Spmd as Spmd
    from spmd_types.typesystem.annotations import axis_of_hint as axis_of_hint
    from spmd_types.typesystem.annotations import markers_from_text as markers_from_text
    from spmd_types.typesystem.annotations import replicated_elsewhere as replicated_elsewhere
    from spmd_types.typesystem.annotations import spmd_type_from_metadata as spmd_type_from_metadata
    from spmd_types.typesystem.annotations import spmd_type_of_hint as spmd_type_of_hint
    from spmd_types.typesystem.codes import Code as Code
    from spmd_types.typesystem.collectives import CALLS as CALLS
    from spmd_types.typesystem.collectives import NO_GRADIENT_REDUCTIONS as NO_GRADIENT_REDUCTIONS
    from spmd_types.typesystem.collectives import CallOutcome as CallOutcome
    from spmd_types.typesystem.collectives import CallSpec as CallSpec
    from spmd_types.typesystem.collectives import Endpoint as Endpoint
    from spmd_types.typesystem.collectives import Transition as Transition
    from spmd_types.typesystem.collectives import backward as backward
    from spmd_types.typesystem.collectives import backward_route as backward_route
    from spmd_types.typesystem.collectives import check_call as check_call
    from spmd_types.typesystem.collectives import check_call_on_axes as check_call_on_axes
    from spmd_types.typesystem.collectives import cost as cost
    from spmd_types.typesystem.collectives import effects as effects
    from spmd_types.typesystem.collectives import endpoint_kind as endpoint_kind
    from spmd_types.typesystem.collectives import fix as fix
    from spmd_types.typesystem.collectives import fixes_between as fixes_between
    from spmd_types.typesystem.collectives import flattened_axes as flattened_axes
    from spmd_types.typesystem.collectives import kind_label as kind_label
    from spmd_types.typesystem.collectives import primitive_transitions as primitive_transitions
    from spmd_types.typesystem.collectives import retargeted as retargeted
    from spmd_types.typesystem.collectives import route as route
    from spmd_types.typesystem.collectives import type_arg as type_arg
    from spmd_types.typesystem.ecosystem import EQUIVALENTS as EQUIVALENTS
    from spmd_types.typesystem.ecosystem import FUNCTIONAL_OPS as FUNCTIONAL_OPS
    from spmd_types.typesystem.ecosystem import GROUP_GETTERS as GROUP_GETTERS
    from spmd_types.typesystem.ecosystem import IN_PLACE as IN_PLACE
    from spmd_types.typesystem.ecosystem import PASS_THROUGH_OPS as PASS_THROUGH_OPS
    from spmd_types.typesystem.ecosystem import RANK_GETTERS as RANK_GETTERS
    from spmd_types.typesystem.ecosystem import REEXPORTS as REEXPORTS
    from spmd_types.typesystem.ecosystem import ROLES as ROLES
    from spmd_types.typesystem.ecosystem import VERIFIED_AGAINST as VERIFIED_AGAINST
    from spmd_types.typesystem.ecosystem import WORLD as WORLD
    from spmd_types.typesystem.ecosystem import Equivalent as Equivalent
    from spmd_types.typesystem.ecosystem import FlagVariant as FlagVariant
    from spmd_types.typesystem.ecosystem import FunctionalOp as FunctionalOp
    from spmd_types.typesystem.ecosystem import InPlace as InPlace
    from spmd_types.typesystem.ecosystem import check_in_place as check_in_place
    from spmd_types.typesystem.ecosystem import reduction_name as reduction_name
    from spmd_types.typesystem.global_rules import GLOBAL_VALUE_TYPES as GLOBAL_VALUE_TYPES
    from spmd_types.typesystem.global_rules import EntryOrders as EntryOrders
    from spmd_types.typesystem.global_rules import check_global_op as check_global_op
    from spmd_types.typesystem.global_rules import einsum_terms as einsum_terms
    from spmd_types.typesystem.global_rules import global_annotation_violation as global_annotation_violation
    from spmd_types.typesystem.global_rules import global_call_violation as global_call_violation
    from spmd_types.typesystem.global_rules import global_cast_violation as global_cast_violation
    from spmd_types.typesystem.global_rules import order_violation as order_violation
    from spmd_types.typesystem.global_rules import propagate as propagate
    from spmd_types.typesystem.global_rules import result_orders as result_orders
    from spmd_types.typesystem.global_rules import result_rank as result_rank
    from spmd_types.typesystem.global_rules import spec_orders as spec_orders
    from spmd_types.typesystem.join import Operand as Operand
    from spmd_types.typesystem.join import OpOutcome as OpOutcome
    from spmd_types.typesystem.join import apply_op as apply_op
    from spmd_types.typesystem.join import check_fits as check_fits
    from spmd_types.typesystem.join import check_fits_one_of as check_fits_one_of
    from spmd_types.typesystem.join import check_group as check_group
    from spmd_types.typesystem.join import fits as fits
    from spmd_types.typesystem.join import merge_paths as merge_paths
    from spmd_types.typesystem.join import paths_disagree as paths_disagree
    from spmd_types.typesystem.join import writes_through as writes_through
    from spmd_types.typesystem.join import written_buffer as written_buffer
    from spmd_types.typesystem.layout import Digit as Digit
    from spmd_types.typesystem.layout import Reorder as Reorder
    from spmd_types.typesystem.layout import change as change
    from spmd_types.typesystem.layout import digits_of as digits_of
    from spmd_types.typesystem.layout import dim_indices as dim_indices
    from spmd_types.typesystem.layout import entry_of as entry_of
    from spmd_types.typesystem.layout import local_indices as local_indices
    from spmd_types.typesystem.layout import pattern as pattern
    from spmd_types.typesystem.local_map import LocalMap as LocalMap
    from spmd_types.typesystem.local_map import local_map_input as local_map_input
    from spmd_types.typesystem.local_map import local_map_output as local_map_output
    from spmd_types.typesystem.local_types import LOCAL_TYPES as LOCAL_TYPES
    from spmd_types.typesystem.local_types import WEAK as WEAK
    from spmd_types.typesystem.local_types import ZERO as ZERO
    from spmd_types.typesystem.local_types import AnnotationError as AnnotationError
    from spmd_types.typesystem.local_types import AxisType as AxisType
    from spmd_types.typesystem.local_types import AxisTypes as AxisTypes
    from spmd_types.typesystem.local_types import Constant as Constant
    from spmd_types.typesystem.local_types import I as I
    from spmd_types.typesystem.local_types import LocalType as LocalType
    from spmd_types.typesystem.local_types import P as P
    from spmd_types.typesystem.local_types import R as R
    from spmd_types.typesystem.local_types import S as S
    from spmd_types.typesystem.local_types import Shard as Shard
    from spmd_types.typesystem.local_types import V as V
    from spmd_types.typesystem.local_types import axis_types_marker as axis_types_marker
    from spmd_types.typesystem.local_types import gradient_type as gradient_type
    from spmd_types.typesystem.local_types import is_varying as is_varying
    from spmd_types.typesystem.local_types import local_type as local_type
    from spmd_types.typesystem.local_types import parse_axis_type as parse_axis_type
    from spmd_types.typesystem.local_types import shard_marker as shard_marker
    from spmd_types.typesystem.loss import AUTOGRAD_FUNCTIONS as AUTOGRAD_FUNCTIONS
    from spmd_types.typesystem.loss import check_backward as check_backward
    from spmd_types.typesystem.memo import bounded_put as bounded_put
    from spmd_types.typesystem.numbers import NUMBER_OPERATORS as NUMBER_OPERATORS
    from spmd_types.typesystem.numbers import arithmetic as arithmetic
    from spmd_types.typesystem.numbers import element_count as element_count
    from spmd_types.typesystem.numbers import global_length as global_length
    from spmd_types.typesystem.numbers import length as length
    from spmd_types.typesystem.numbers import on_a_length as on_a_length
    from spmd_types.typesystem.numbers import rank_index as rank_index
    from spmd_types.typesystem.numbers import read_out as read_out
    from spmd_types.typesystem.numbers import through_function as through_function
    from spmd_types.typesystem.ops import BUILTIN_SUM as BUILTIN_SUM
    from spmd_types.typesystem.ops import MODULE_OPS as MODULE_OPS
    from spmd_types.typesystem.ops import MODULE_PARAMETERS as MODULE_PARAMETERS
    from spmd_types.typesystem.ops import NONLINEAR as NONLINEAR
    from spmd_types.typesystem.ops import OPERATOR_SYMBOLS as OPERATOR_SYMBOLS
    from spmd_types.typesystem.ops import OPS as OPS
    from spmd_types.typesystem.ops import TENSOR_PROPERTIES as TENSOR_PROPERTIES
    from spmd_types.typesystem.ops import OpRule as OpRule
    from spmd_types.typesystem.ops import Result as Result
    from spmd_types.typesystem.ops import absorbed as absorbed
    from spmd_types.typesystem.ops import canonical_param as canonical_param
    from spmd_types.typesystem.ops import display_name as display_name
    from spmd_types.typesystem.ops import lookup as lookup
    from spmd_types.typesystem.ops import method_name as method_name
    from spmd_types.typesystem.ops import passed_literal as passed_literal
    from spmd_types.typesystem.partial_outputs import PARTIAL_OUTPUT_FUNCTIONS as PARTIAL_OUTPUT_FUNCTIONS
    from spmd_types.typesystem.partial_outputs import PartialOutputFunction as PartialOutputFunction
    from spmd_types.typesystem.partial_outputs import check_partial_output as check_partial_output
    from spmd_types.typesystem.partial_outputs import partial_axes as partial_axes
    from spmd_types.typesystem.partial_outputs import partial_output_bias as partial_output_bias
    from spmd_types.typesystem.partition_spec import Entry as Entry
    from spmd_types.typesystem.partition_spec import Factor as Factor
    from spmd_types.typesystem.partition_spec import MeshAxes as MeshAxes
    from spmd_types.typesystem.partition_spec import PartitionSpec as PartitionSpec
    from spmd_types.typesystem.partition_spec import all_specs as all_specs
    from spmd_types.typesystem.partition_spec import dual as dual
    from spmd_types.typesystem.partition_spec import global_shape as global_shape
    from spmd_types.typesystem.partition_spec import mesh_axes as mesh_axes
    from spmd_types.typesystem.partition_spec import per_axis_types as per_axis_types
    from spmd_types.typesystem.partition_spec import spec_type as spec_type
    from spmd_types.typesystem.placements import PLACEMENT_KINDS as PLACEMENT_KINDS
    from spmd_types.typesystem.placements import Placement as Placement
    from spmd_types.typesystem.placements import Placements as Placements
    from spmd_types.typesystem.placements import check_from_local as check_from_local
    from spmd_types.typesystem.placements import default_grad_placement as default_grad_placement
    from spmd_types.typesystem.placements import placement_type as placement_type
    from spmd_types.typesystem.placements import placements_for as placements_for
    from spmd_types.typesystem.placements import retarget_to_local as retarget_to_local
    from spmd_types.typesystem.placements import spell_placements as spell_placements
    from spmd_types.typesystem.placements import to_local_type as to_local_type
    from spmd_types.typesystem.planner import Plan as Plan
    from spmd_types.typesystem.planner import Step as Step
    from spmd_types.typesystem.planner import plan_redistribute as plan_redistribute
    from spmd_types.typesystem.planner import plan_via_replicated as plan_via_replicated
    from spmd_types.typesystem.regions import Region as Region
    from spmd_types.typesystem.regions import region_arity as region_arity
    from spmd_types.typesystem.regions import region_input as region_input
    from spmd_types.typesystem.regions import region_output as region_output
    from spmd_types.typesystem.regions import region_problem as region_problem
    from spmd_types.typesystem.shard_dims import LOST as LOST
    from spmd_types.typesystem.shard_dims import NOT_KNOWN as NOT_KNOWN
    from spmd_types.typesystem.shard_dims import POINTWISE_OPS as POINTWISE_OPS
    from spmd_types.typesystem.shard_dims import SHARD_RULES as SHARD_RULES
    from spmd_types.typesystem.shard_dims import SPLITTING_OPS as SPLITTING_OPS
    from spmd_types.typesystem.shard_dims import Broken as Broken
    from spmd_types.typesystem.shard_dims import LayoutCall as LayoutCall
    from spmd_types.typesystem.shard_dims import Moved as Moved
    from spmd_types.typesystem.shard_dims import Outcome as Outcome
    from spmd_types.typesystem.shard_dims import counted_like as counted_like
    from spmd_types.typesystem.shard_dims import layout_rank as layout_rank
    from spmd_types.typesystem.shard_dims import result_dim as result_dim
    from spmd_types.typesystem.shard_dims import same_dim as same_dim
    from spmd_types.typesystem.size_one import SIZE_GETTERS as SIZE_GETTERS
    from spmd_types.typesystem.size_one import merge_guarded_paths as merge_guarded_paths
    from spmd_types.typesystem.size_one import on_size_one as on_size_one
    from spmd_types.typesystem.size_one import size_one_when as size_one_when
    from spmd_types.typesystem.spmd_type import UNKNOWN as UNKNOWN
    from spmd_types.typesystem.spmd_type import SpmdType as SpmdType
    from spmd_types.typesystem.spmd_type import parse as parse
    from spmd_types.typesystem.summation import BIASED_PRODUCTS as BIASED_PRODUCTS
    from spmd_types.typesystem.summation import SUM_OPS as SUM_OPS
    from spmd_types.typesystem.summation import summed_replicated_term as summed_replicated_term
    from spmd_types.typesystem.summation import sums_over_axis as sums_over_axis
    from spmd_types.typesystem.violations import RETURN_VALUE as RETURN_VALUE
    from spmd_types.typesystem.violations import Fix as Fix
    from spmd_types.typesystem.violations import Message as Message
    from spmd_types.typesystem.violations import Violation as Violation
    from spmd_types.typesystem.violations import argument_site as argument_site

# Where each public name is defined: every name in the ``__all__`` of a submodule.
# tests/typesystem/test_import.py keeps this equal to the imports above, which
# are what type checkers read, and to the submodules' ``__all__``.
_DEFINED_IN: dict[str, str] = {
    **dict.fromkeys(
        ("Axis", "Spmd", "axis_of_hint", "markers_from_text", "replicated_elsewhere", "spmd_type_from_metadata",
         "spmd_type_of_hint"),
        "annotations",
    ),
    **dict.fromkeys(("Code",), "codes"),
    **dict.fromkeys(
        ("CALLS", "CallOutcome", "CallSpec", "Endpoint", "NO_GRADIENT_REDUCTIONS", "Transition", "backward",
         "backward_route", "check_call", "check_call_on_axes", "cost", "effects", "endpoint_kind", "fix",
         "fixes_between", "flattened_axes", "kind_label", "primitive_transitions", "retargeted", "route", "type_arg"),
        "collectives",
    ),
    **dict.fromkeys(
        ("EQUIVALENTS", "Equivalent", "FUNCTIONAL_OPS", "FlagVariant", "FunctionalOp", "GROUP_GETTERS", "IN_PLACE",
         "InPlace", "PASS_THROUGH_OPS", "RANK_GETTERS", "REEXPORTS", "ROLES", "VERIFIED_AGAINST", "WORLD",
         "check_in_place", "reduction_name"),
        "ecosystem",
    ),
    **dict.fromkeys(
        ("OpOutcome", "Operand", "apply_op", "check_fits", "check_fits_one_of", "check_group", "fits", "merge_paths",
         "paths_disagree", "writes_through", "written_buffer"),
        "join",
    ),
    **dict.fromkeys(
        ("Digit", "Reorder", "change", "digits_of", "dim_indices", "entry_of", "local_indices", "pattern"),
        "layout",
    ),
    **dict.fromkeys(("LocalMap", "local_map_input", "local_map_output"), "local_map"),
    **dict.fromkeys(("Region", "region_arity", "region_input", "region_output", "region_problem"), "regions"),
    **dict.fromkeys(
        ("AnnotationError", "AxisType", "AxisTypes", "Constant", "I", "LOCAL_TYPES", "LocalType", "P", "R", "S",
         "Shard", "V", "WEAK", "ZERO", "axis_types_marker", "gradient_type", "is_varying", "local_type",
         "parse_axis_type", "shard_marker"),
        "local_types",
    ),
    **dict.fromkeys(("AUTOGRAD_FUNCTIONS", "check_backward",), "loss"),
    "bounded_put": "memo",
    **dict.fromkeys(
        ("NUMBER_OPERATORS", "arithmetic", "element_count", "global_length", "length", "on_a_length", "rank_index",
         "read_out", "through_function"), "numbers"
    ),
    **dict.fromkeys(
        ("BUILTIN_SUM", "MODULE_OPS", "MODULE_PARAMETERS", "NONLINEAR", "OPERATOR_SYMBOLS", "OPS", "OpRule", "Result",
         "TENSOR_PROPERTIES", "absorbed", "canonical_param", "display_name", "lookup", "method_name",
         "passed_literal"),
        "ops",
    ),
    **dict.fromkeys(
        ("EntryOrders", "GLOBAL_VALUE_TYPES", "check_global_op", "einsum_terms", "global_annotation_violation",
         "global_call_violation", "global_cast_violation", "order_violation", "propagate", "result_orders",
         "result_rank", "spec_orders"),
        "global_rules",
    ),
    **dict.fromkeys(
        ("PARTIAL_OUTPUT_FUNCTIONS", "PartialOutputFunction", "check_partial_output", "partial_axes",
         "partial_output_bias"),
        "partial_outputs",
    ),
    **dict.fromkeys(
        ("Entry", "Factor", "MeshAxes", "PartitionSpec", "all_specs", "dual", "global_shape", "mesh_axes",
         "per_axis_types", "spec_type"),
        "partition_spec",
    ),
    **dict.fromkeys(
        ("PLACEMENT_KINDS", "Placement", "Placements", "check_from_local", "default_grad_placement", "placement_type",
         "placements_for", "retarget_to_local", "spell_placements", "to_local_type"),
        "placements",
    ),
    **dict.fromkeys(("Plan", "Step", "plan_redistribute", "plan_via_replicated",), "planner"),
    **dict.fromkeys(
        ("Broken", "LOST", "LayoutCall", "Moved", "NOT_KNOWN", "Outcome", "POINTWISE_OPS", "SHARD_RULES",
         "SPLITTING_OPS", "counted_like", "layout_rank", "result_dim", "same_dim"),
        "shard_dims",
    ),
    **dict.fromkeys(("SpmdType", "UNKNOWN", "parse",), "spmd_type"),
    **dict.fromkeys(("SIZE_GETTERS", "merge_guarded_paths", "on_size_one", "size_one_when"), "size_one"),
    **dict.fromkeys(("BIASED_PRODUCTS", "SUM_OPS", "summed_replicated_term", "sums_over_axis",), "summation"),
    **dict.fromkeys(("Fix", "Message", "RETURN_VALUE", "Violation", "argument_site",), "violations"),
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
