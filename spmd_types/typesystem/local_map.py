"""DTensor's ``local_map``: the local types its placements give the wrapped function, and what they expect back.

``local_map(func, out_placements, in_placements, in_grad_placements,
device_mesh)`` (torch 2.13, ``torch/distributed/tensor/experimental/
_func_map.py``) runs ``func`` on local tensors.  Its flattened positional
arguments are matched one to one with ``in_placements``: a DTensor argument
(redistributed to, or checked against, its entry) becomes
``arg.to_local(grad_placements=in_grad_placements[k])``, or ``arg.to_local()``
when ``in_grad_placements`` is left out; every other argument is passed as it
is (its entry is ``None``).  Each tensor ``func`` returns becomes
``DTensor.from_local(out, device_mesh, out_placements[j])``, with DTensor's
default gradient placements (there is no way to give others).

So the parameters of ``func`` have the types :func:`~.placements.to_local_type`
gives those pairs, and each output must be the type its placements stand for
with default gradients (:func:`~.placements.check_from_local`): ``S(i)`` as
``Shard(i)``, ``I`` as ``Replicate()``, ``P`` as ``Partial()``.  An output
declared ``R`` has no such placement in torch 2.13 (``Replicate()`` reads its
gradient as the full value on every rank, where ``R``'s gradient is each
rank's share): it must be made ``I`` before it is returned.

A :class:`LocalMap` is one ``local_map`` call whose mesh dims and placements
are known; ``str`` writes it as one line that :meth:`LocalMap.parse` reads
back (the plugin carries it in a type from the decorator to the function).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from spmd_types.typesystem.join import check_fits
from spmd_types.typesystem.local_types import AxisType, LocalType, Shard
from spmd_types.typesystem.placements import (
    Placement,
    Placements,
    check_from_local,
    default_grad_placement,
    placements_for,
    retarget_to_local,
    spell_placements,
    to_local_type,
)
from spmd_types.typesystem.spmd_type import SpmdType
from spmd_types.typesystem.violations import Fix, Violation

__all__ = ["LocalMap", "local_map_input", "local_map_output"]

_Entry = tuple[Placement, ...] | None
"""The placements of one flattened argument or output, one per mesh dim; ``None`` for a non-tensor."""


@dataclass(frozen=True)
class LocalMap:
    """The placements of one ``local_map`` call on a mesh whose dims are ``dims``.

    ``inputs`` is ``in_placements`` (``None``: left out, the arguments'
    own placements are used); ``grads`` is ``in_grad_placements`` (``None``:
    left out, DTensor's defaults); ``outputs`` has one entry per flattened
    output, and ``one_output`` says that ``out_placements`` was written as one
    list of placements rather than a tuple of entries.
    """

    dims: tuple[str, ...]
    inputs: tuple[_Entry, ...] | None
    grads: tuple[_Entry, ...] | None
    outputs: tuple[_Entry, ...]
    one_output: bool

    def __post_init__(self) -> None:
        for entry in (*(self.inputs or ()), *(self.grads or ()), *self.outputs):
            if entry is not None and len(entry) != len(self.dims):
                raise ValueError(f"placements {spell_placements(entry)} on the mesh dims {self.dims}")
        if self.one_output and len(self.outputs) != 1:
            raise ValueError("one output written as a list, but several entries")

    def __str__(self) -> str:
        return " | ".join((", ".join(self.dims), _entries(self.inputs), _entries(self.grads), _entries(self.outputs),
                           "one" if self.one_output else "many"))

    @staticmethod
    def parse(text: str) -> LocalMap:
        dims, inputs, grads, outputs, count = text.split(" | ")
        return LocalMap(tuple(dims.split(", ")), _parse_entries(inputs), _parse_entries(grads),
                        _parse_entries(outputs) or (), count == "one")

    def spell_grads(self, k: int, new: tuple[Placement, ...]) -> str:
        """``in_grad_placements`` with entry ``k`` replaced by ``new``, the others as given or defaulted."""
        entries = list(self.grads if self.grads is not None else (
            tuple(map(default_grad_placement, e)) if e is not None else None for e in self.inputs or ()))
        entries[k] = new
        return _spell_tuple(entries)

    def spell_outputs(self, j: int, new: tuple[Placement, ...]) -> str:
        """``out_placements`` with entry ``j`` replaced by ``new``."""
        if self.one_output:
            return spell_placements(new)
        entries = list(self.outputs)
        entries[j] = new
        return _spell_tuple(entries)


Rewrite = Callable[[str, str], str]
"""``(parameter, value)``: the checked ``local_map`` call with that argument written as ``value``, as a fix."""


def local_map_input(
    spec: LocalMap, k: int, declared: SpmdType, rewrite: Rewrite
) -> tuple[SpmdType, tuple[Violation, ...]]:
    """The local type that ``local_map`` passes as flattened argument ``k``, and how it breaks ``declared``.

    Unknown (and nothing reported) when ``in_placements`` or its entry
    ``k`` is ``None``, or ``in_grad_placements`` is given with ``None`` there.
    A pair of placements that is no local type, or a type that does not fit
    the declared parameter, is fixed by the ``in_grad_placements`` entry that
    makes it the declared type when the data is already right; otherwise the
    message names the placement the parameter needs (a pair without a type
    on an axis the parameter does not declare is reported as at
    ``to_local``).
    """
    forward = spec.inputs[k] if spec.inputs is not None and k < len(spec.inputs) else None
    given = spec.grads[k] if spec.grads is not None and k < len(spec.grads) else None
    if forward is None or (spec.grads is not None and given is None):
        return SpmdType({}), ()
    layout = Placements(spec.dims, forward)

    def respell(new: tuple[Placement, ...]) -> str:
        return rewrite("in_grad_placements", spec.spell_grads(k, new))

    local, no_type = to_local_type(layout, given, respell)
    grads = layout.grads(given)
    out = []
    for violation in no_type + check_fits(local, declared):
        axis = violation.axis or ""
        want, dim = declared.get(axis), spec.dims.index(axis)
        if want is None:  # a pair without a type, on an axis the parameter does not declare
            out.append(replace(violation, fixes=_replacing(violation.fixes)))
            continue
        if violation in no_type:
            reason = f"declared {want.code}, but {violation.reason}"
        else:
            how = "in_grad_placements" if given is not None else "default gradient placement"
            reason = (f"declared {want.code}, but in_placements {forward[dim].code} with {how} {grads[dim].code} "
                      f"gives {_code(local.get(axis))}")
        retargeted = retarget_to_local(replace(violation, fixes=()), layout, given, want, respell)
        if retargeted.fixes:
            out.append(replace(retargeted, reason=reason, fixes=_replacing(retargeted.fixes)))
            continue
        needed = placements_for(want) if isinstance(want, (LocalType, Shard)) else None
        needs = f"; a parameter of type {want.code} needs placement {needed[0].code}" if needed else ""
        out.append(replace(violation, reason=reason + needs, fixes=()))
    return local, tuple(out)


def local_map_output(spec: LocalMap, j: int, declared: SpmdType, rewrite: Rewrite) -> tuple[Violation, ...]:
    """How flattened output ``j`` of type ``declared`` breaks its ``out_placements`` entry (default gradients).

    Fixed by the placement that stands for the declared type with default
    gradients, where there is one; the message also names the cast that
    would make the value the function returns the type of its placements
    (a change inside the function, not at this call).
    """
    entry = spec.outputs[j] if j < len(spec.outputs) else None
    if entry is None:
        return ()
    layout = Placements(spec.dims, entry)
    out = []
    for violation in check_from_local(declared, layout, None, None):
        have = declared.get(violation.axis or "")
        found = placements_for(have) if isinstance(have, (LocalType, Shard)) else None
        fixes: tuple[Fix, ...] = ()
        if found is not None and found[1] == default_grad_placement(found[0]):
            k = spec.dims.index(violation.axis or "")
            new = entry[:k] + (found[0],) + entry[k + 1:]
            fixes = _replacing((Fix(rewrite("out_placements", spec.spell_outputs(j, new)),
                                    "no-op forward, no-op in backward"),))
        casts = " or ".join(f.call.format(x="out") for f in violation.fixes)
        inside = f"; the function could instead return {casts}" if casts else ""
        out.append(replace(violation, reason=violation.reason + inside, fixes=fixes))
    return tuple(out)


def _replacing(fixes: tuple[Fix, ...]) -> tuple[Fix, ...]:
    """Fixes written as the whole ``local_map`` call, each replacing it."""
    return tuple(replace(f, operands=(), replaces="local_map") for f in fixes)


def _code(t: AxisType | None) -> str:
    return t.code if t is not None else "unknown"


def _entries(entries: Sequence[_Entry] | None) -> str:
    if entries is None:
        return "-"
    return "; ".join(", ".join(p.code for p in e) if e is not None else "None" for e in entries)


def _parse_entries(text: str) -> tuple[_Entry, ...] | None:
    if text == "-":
        return None
    if not text:
        return ()
    return tuple(None if item == "None" else tuple(map(Placement.parse, item.split(", ")))
                 for item in text.split("; "))


def _spell_tuple(entries: Sequence[_Entry]) -> str:
    items = [spell_placements(e) if e is not None else "None" for e in entries]
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
