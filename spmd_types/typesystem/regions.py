"""Local regions: a function whose chosen mesh axes are local SPMD inside a global program.

``@spmd_types.local_region("tp", in_specs=(...), out_specs=...)`` wraps a
function that drops to local SPMD on the axes ``"tp"``: inside it the global
rules (:mod:`~spmd_types.typesystem.global_rules`) are not applied on those
axes, and values may be ``V`` there; on the other axes it stays global.

* **On entry** each positional argument with a spec in ``in_specs`` must be
  laid out as that spec (its per-axis types,
  :func:`~spmd_types.typesystem.partition_spec.spec_type`, fit the
  argument's), and the parameter receives those types: on the region's axes
  the spec is forgotten and only its per-axis meaning is left, ``S(i)`` on
  an axis that cuts dim ``i``, ``P`` on a partial axis, ``R`` elsewhere
  (:func:`region_input`).
* **On exit** each returned tensor is re-stated as its spec in
  ``out_specs`` (:func:`region_output`).  On a region axis the function
  states how the ranks' local results assemble: ``V`` may be returned where
  the spec cuts a dim (the pieces are that dim's shards) or is partial (the
  ranks hold summands), as ``shard_map`` and DTensor's ``local_map`` read
  their output specs; otherwise the returned type must fit the spec's
  (``V`` where the spec replicates is an error, ``P`` only where it is
  partial).  On the other axes the returned type must fit the spec's, and
  ``V`` is an error there (``spmd-global``: the region is global on them).

The caller sees the specs' types.  A :class:`Region` is one such call whose
specs are known; ``str`` writes it as one line that :meth:`Region.parse`
reads back (the plugin carries it in a type from the decorator to the
function).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from spmd_types.typesystem.collectives import fixes_between
from spmd_types.typesystem.join import check_fits, fits
from spmd_types.typesystem.local_types import AxisType, LocalType, P, Shard, V
from spmd_types.typesystem.partition_spec import PartitionSpec, spec_type
from spmd_types.typesystem.spmd_type import SpmdType, parse
from spmd_types.typesystem.violations import Code, Violation

__all__ = ["Region", "region_arity", "region_input", "region_output", "region_problem"]

_Types = tuple[SpmdType | None, ...]


@dataclass(frozen=True)
class Region:
    """The axes a ``local_region`` makes local, and the per-axis types of its specs.

    ``inputs`` has one entry per positional parameter that ``in_specs``
    names (``None``: not a tensor, passed as it is); ``outputs`` one per
    returned tensor, and ``one_output`` says that ``out_specs`` was one spec
    (the function returns one tensor) rather than a tuple of them.
    """

    axes: tuple[str, ...]
    inputs: _Types
    outputs: _Types
    one_output: bool

    @staticmethod
    def of(axes: tuple[str, ...], in_specs: Sequence[PartitionSpec | None],
           out_specs: PartitionSpec | Sequence[PartitionSpec | None], mesh: Sequence[str] = ()) -> Region:
        """The region of well-formed arguments (see :func:`region_problem`); ``mesh``: the mesh's axes, if known.

        Each spec's types are ``R`` on the region's axes and ``mesh``'s that it
        does not name; other axes are left unknown.
        """
        others = (*axes, *mesh)
        one = isinstance(out_specs, PartitionSpec)
        outs: Sequence[PartitionSpec | None] = (out_specs,) if isinstance(out_specs, PartitionSpec) else out_specs
        return Region(axes, tuple(spec_type(s, others) if s is not None else None for s in in_specs),
                      tuple(spec_type(s, others) if s is not None else None for s in outs), one)

    def __str__(self) -> str:
        return " | ".join((", ".join(self.axes), _spell(self.inputs), _spell(self.outputs),
                           "one" if self.one_output else "many"))

    @staticmethod
    def parse(text: str) -> Region:
        axes, inputs, outputs, count = text.split(" | ")
        return Region(tuple(axes.split(", ")), _read(inputs), _read(outputs), count == "one")


def region_problem(
    axes: object, in_specs: object, out_specs: object, mesh: Sequence[str] | None = None
) -> Violation | None:
    """Why ``local_region(axes, in_specs=..., out_specs=...)`` is malformed, or ``None``.

    ``axes`` is a mesh-axis name or a non-empty tuple of distinct ones;
    ``in_specs`` a tuple of :class:`PartitionSpec` or ``None``; ``out_specs``
    a spec or such a tuple.  With ``mesh`` (the mesh's axis names) known,
    every axis named must be one of them (an ``spmd-axis`` error).
    """
    names = (axes,) if isinstance(axes, str) else axes
    if not (isinstance(names, tuple) and names and all(isinstance(a, str) and a for a in names)):
        return _malformed(f"axes takes a mesh-axis name or a non-empty tuple of them, got {axes!r}")
    if len(set(names)) != len(names):
        return _malformed(f"axes names a mesh axis twice: {names!r}")
    if not (isinstance(in_specs, tuple) and all(s is None or isinstance(s, PartitionSpec) for s in in_specs)):
        return _malformed(f"in_specs takes a tuple with one PartitionSpec (or None) per positional parameter, "
                          f"got {in_specs!r}")
    outs = (out_specs,) if isinstance(out_specs, PartitionSpec) else out_specs
    if not (isinstance(outs, tuple) and all(s is None or isinstance(s, PartitionSpec) for s in outs)):
        return _malformed(f"out_specs takes a PartitionSpec, or a tuple with one (or None) per returned value, "
                          f"got {out_specs!r}")
    if mesh is None:
        return None
    named = [*names, *(a for s in (*in_specs, *outs) if s is not None for a in (*s.axes, *s.partial))]
    unknown = [a for a in dict.fromkeys(named) if a not in mesh]
    if unknown:
        return Violation(Code.AXIS, unknown[0], f"local_region names axis {unknown[0]!r}, which is not an axis of "
                                                f"the mesh ({', '.join(mesh)})")
    return None


def region_arity(region: Region, parameters: int, outputs: int | None) -> Violation | None:
    """Why a function of ``parameters`` positional parameters returning ``outputs`` tensors (``None``: not known
    as a tuple) does not match the region's specs, or ``None``."""
    if len(region.inputs) != parameters:
        return _malformed(f"in_specs has {len(region.inputs)} entries for a function of {parameters} positional "
                          f"parameters: give one PartitionSpec (or None for a non-tensor) per parameter")
    if not region.one_output and outputs is not None and len(region.outputs) != outputs:
        return _malformed(f"out_specs has {len(region.outputs)} entries for a function returning {outputs} values")
    if not region.one_output and outputs is None:
        return _malformed("out_specs is a tuple, but the function does not return a tuple: give one PartitionSpec")
    return None


def region_input(region: Region, k: int, argument: SpmdType | None, declared: SpmdType | None
                 ) -> tuple[Violation, ...]:
    """How positional argument ``k`` (of type ``argument``, where known) and the parameter (declared ``declared``)
    break the entry of ``in_specs``.

    The argument must fit the spec's types (it is laid out as the spec says);
    the spec's types must fit the parameter's declaration (what the function
    body receives).
    """
    spec = region.inputs[k] if k < len(region.inputs) else None
    if spec is None:
        return ()
    found: list[Violation] = []
    if argument is not None:
        for v in check_fits(argument, spec):
            found.append(replace(v, reason=f"in_specs[{k}] says {_code(spec.get(v.axis or ''))}, the argument is "
                                           f"{_code(argument.get(v.axis or ''))}: {v.reason}"))
    if declared is not None:
        found.extend(_varying_off_region(region, declared, "the parameter declares V on {axis!r}", spec))
        for v in check_fits(spec, declared):
            reason = (f"in_specs[{k}] gives {_code(spec.get(v.axis or ''))} on {v.axis!r}, but the parameter "
                      f"declares {_code(declared.get(v.axis or ''))}; declare the type the spec gives, or change "
                      f"in_specs[{k}]")
            found.append(replace(v, reason=reason, fixes=()))
    return tuple(found)


def region_output(region: Region, j: int, have: SpmdType) -> tuple[Violation, ...]:
    """How returned tensor ``j`` of type ``have`` breaks its entry of ``out_specs`` (see the module docstring).

    Where a collective would make the returned value fit, the message names
    it (with its cost), as a change inside the function: a violation carries
    no fix, because it is reported where the region is made.
    """
    spec = region.outputs[j] if j < len(region.outputs) else None
    if spec is None:
        return ()
    found = []
    for axis, want in spec.items():
        got = have.get(axis)
        local = axis in region.axes
        if got is V and not local:
            continue  # see below
        if got is None or fits(got, want) or (local and got is V and (isinstance(want, Shard) or want is P)):
            continue
        (v,) = check_fits(SpmdType({axis: got}), SpmdType({axis: want}))
        if local and got is V:
            reason = (f"out_specs says {want.code} on {axis!r}, a local axis of the region, but the function returns "
                      f"V (per-rank data): all_reduce it if the ranks hold summands, all_gather it if they hold "
                      f"pieces, or declare the output cut (S(i)) or partial there")
        elif local and isinstance(got, Shard) and isinstance(want, Shard):
            reason = (f"out_specs says {want.code} on {axis!r}, but the function returns pieces of dim {got.dim}: the "
                      f"spec would assemble them along dim {want.dim}")
        elif local and got is P:
            reason = (f"out_specs says {want.code} on {axis!r}, but the function returns a pending sum (P); reduce it "
                      f"first, or declare the output partial on {axis!r} (partial=\"{axis}\")")
        else:
            reason = f"out_specs says {want.code} on {axis!r}, but the function returns {got.code}"
        fixes = fixes_between(got, want, axis) if isinstance(got, (LocalType, Shard)) and got is not V and isinstance(
            want, (LocalType, Shard)) else ()
        # The fix is a change inside the function, not at the region where this is reported.
        inside = " or ".join(f.render("out") for f in fixes)
        reason += f"; the function could instead return {inside}" if inside else ""
        found.append(replace(v, code=Code.BOUNDARY, reason=reason, fixes=()))
    return _varying_off_region(region, have, "the function returns V on {axis!r}", spec) + tuple(found)


def _varying_off_region(region: Region, declared: SpmdType, what: str, spec: SpmdType) -> tuple[Violation, ...]:
    """``V`` in ``declared`` on an axis the region keeps global, where ``spec`` says what is wanted there."""
    local = ", ".join(region.axes)
    found = []
    for axis, kind in declared.items():
        want = spec.get(axis)
        if kind is V and axis not in region.axes and want is not None:
            reason = (f"{what.format(axis=axis)}, which the region keeps global (only {local} "
                      f"{'is' if len(region.axes) == 1 else 'are'} local inside it): V has no global meaning; "
                      f"declare {want.code} there, as the spec says, or add {axis!r} to the region's axes")
            found.append(Violation(Code.GLOBAL, axis, reason, ("V", want.code)))
    return tuple(found)


def _malformed(reason: str) -> Violation:
    return Violation(Code.ANNOTATION, None, reason)


def _code(t: AxisType | None) -> str:
    return t.code if t is not None else "unknown"


def _spell(types: _Types) -> str:
    return "; ".join(str(t) if t is not None else "None" for t in types)


def _read(text: str) -> _Types:
    return tuple(None if item == "None" else parse(item) for item in text.split("; ")) if text else ()
