"""``redistribute_spec(x, src, dst)`` in the checker: ``x`` must fit ``src``, and the result has ``dst``'s types.

Each spec is read where it is written as a literal ``PartitionSpec(...)``
in the call or bound to one at module level
(:func:`~spmd_mypy.partition_specs.spec_in_code`); per mesh axis it is the
local types :func:`~spmd_types.typesystem.spec_type` gives, ``R`` on the
axes that ``dst`` does not name (those of ``x``'s type and of ``src``).  Where a spec cannot be read
the result is a plain tensor (unknown on every axis), as the stubs type it.
The result also has ``dst``'s rank and the axis orders of its multi-axis
entries; in a global function, an input whose entries order their axes
otherwise than ``src``'s does not fit it (the per-axis types cannot tell them apart).
"""

from __future__ import annotations

from mypy.plugin import FunctionContext

from spmd_mypy import files
from spmd_mypy.collectives import by_name
from spmd_mypy.encoding import Encoder
from spmd_mypy.gradual import unknown_result
from spmd_mypy.partition_specs import spec_in_code
from spmd_mypy.session import Session
from spmd_mypy.source import source
from spmd_mypy.verdict import Verdict
from spmd_types.typesystem import UNKNOWN, SpmdType, check_fits, order_violation, spec_orders, spec_type

__all__ = ["check_redistribute_spec"]


def check_redistribute_spec(session: Session, ctx: FunctionContext) -> Verdict:
    """A call of ``spmd_types.redistribute_spec``."""
    args = by_name(ctx)
    x, src, dst = args.get("x"), args.get("src"), args.get("dst")
    if x is None or src is None or dst is None:
        return Verdict()
    src_spec, dst_spec = spec_in_code(src[0], session.modules), spec_in_code(dst[0], session.modules)
    if src_spec is None or dst_spec is None:
        return unknown_result(session, ctx)
    found = Encoder.read(x[1])
    have = found if isinstance(found, SpmdType) else UNKNOWN
    others = [*have.axes, *src_spec.axes, *src_spec.partial, *dst_spec.axes, *dst_spec.partial]
    verdict = Verdict(result=spec_type(dst_spec, others), rank=len(dst_spec), orders=spec_orders(dst_spec), fit=True)
    value = source(x[0])
    problems = check_fits(have, spec_type(src_spec, others))
    if not problems and (ordered := Encoder.orders(x[1])) and files.place(session, ctx.api, ctx.context).global_mode:
        problems = tuple(v for v in (order_violation(spec_orders(src_spec), ordered, src=True),) if v is not None)
    verdict.report(problems, ctx.context, "redistribute_spec", (value,), value)
    return verdict
