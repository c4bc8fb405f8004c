"""The SPMD type system as plain data and pure functions: the single source of truth.

Everything that needs the rules (the mypy plugin, the runtime collectives,
the documentation tables and the tests) reads them from here.  This package
imports neither torch nor mypy.

* :mod:`.local_types`: ``R``, ``I``, ``V``, ``P``, ``S(i)``, constants, duality;
* :mod:`.spmd_type`: :class:`SpmdType`, one local type per mesh axis, and its text form;
* :mod:`.annotations`: the ``R["dp"]`` markers and reading ``Annotated`` metadata;
* :mod:`.ops`: the op table (linear, multilinear, non-linear arguments);
* :mod:`.join`: the per-axis join of ordinary ops and the boundary rule;
* :mod:`.collectives`: collectives and casts, their routes and backwards;
* :mod:`.loss`: the ``loss.backward()`` rule;
* :mod:`.violations`: error codes and structured violations with fixes.
"""

from spmd_types.typesystem.annotations import (
    AnnotationError,
    Axis,
    AxisTypes,
    axis_of_hint,
    spmd_type_from_metadata,
    spmd_type_of_hint,
)
from spmd_types.typesystem.collectives import CALLS, CallOutcome, Transition, backward, check_call, route
from spmd_types.typesystem.join import Operand, OpOutcome, apply_op, check_fits, fits
from spmd_types.typesystem.local_types import (
    WEAK,
    ZERO,
    AxisType,
    Constant,
    I,
    LocalType,
    P,
    R,
    S,
    Shard,
    V,
    gradient_type,
    parse_axis_type,
)
from spmd_types.typesystem.loss import check_backward
from spmd_types.typesystem.ops import OPS, OpRule, Result, lookup
from spmd_types.typesystem.spmd_type import UNKNOWN, SpmdType, parse
from spmd_types.typesystem.violations import Code, Fix, Violation

__all__ = [
    "CALLS",
    "OPS",
    "UNKNOWN",
    "WEAK",
    "ZERO",
    "AnnotationError",
    "Axis",
    "AxisType",
    "AxisTypes",
    "CallOutcome",
    "Code",
    "Constant",
    "Fix",
    "I",
    "LocalType",
    "OpOutcome",
    "OpRule",
    "Operand",
    "P",
    "R",
    "Result",
    "S",
    "Shard",
    "SpmdType",
    "Transition",
    "V",
    "Violation",
    "apply_op",
    "axis_of_hint",
    "backward",
    "check_backward",
    "check_call",
    "check_fits",
    "fits",
    "gradient_type",
    "lookup",
    "parse",
    "parse_axis_type",
    "route",
    "spmd_type_from_metadata",
    "spmd_type_of_hint",
]
