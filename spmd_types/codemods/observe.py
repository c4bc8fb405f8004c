"""Observing the SPMD types at module boundaries and parameters, by running a model on simulated ranks.

:func:`observe` runs ``run()`` (a function that builds a model and calls it)
on every rank of a simulated mesh in one process (``LocalTensorMode`` over a
``fake`` process group, the mesh made current for ``spmd_types``), under
runtime checking (:mod:`spmd_types._checking`), which follows the SPMD type of
every tensor from the types the program declares (the inputs of the top
module, through ``assert_type``, a collective or an annotation) through every
op and collective.  A forward hook records, at each call of an ``nn.Module``,
the tracked types and local shapes of ``forward``'s tensor arguments and
result and of the module's own parameters.

A parameter is a leaf: no op computes it, so its type is found in two steps.

1. **Shapes.** The model is built again with each mesh axis at one rank. A
   parameter one of whose dims is ``n`` times larger there is a shard of that
   dim, ``S(d)``; one whose shape does not change is the same tensor on every
   rank, ``R`` or ``I``.  (Activations use the same probe: a ``V`` value
   with such a dim is ``S(d)``.)
2. **Trials.** For a parameter that is ``R`` or ``I`` on an axis, the run is
   repeated with each of the two assumed: the rule core decides, through
   the errors the checker reports; the one that adds no error is the type.
   (``I`` does not mix with the ``R`` and ``V`` activations of a
   column-parallel layer; an ``R`` bias added to an ``I`` reduction is an
   error.)  When both or neither fit, the parameter is reported.

The last run assumes every parameter type found, and its records are the
observation: per module class, each position's value over all calls
(:func:`~spmd_types.codemods.observations.settle`).  Positions whose class
already declares an SPMD type are not written; one whose observed type does
not fit its declaration is reported.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import torch
import torch.distributed as dist
from torch.distributed._local_tensor import LocalTensorMode
from torch.distributed.device_mesh import init_device_mesh
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

from spmd_types import _checks, _mesh
from spmd_types._checking import TypeTracker, runtime_checking
from spmd_types._declarations import Declarations, Tree, annotations_of, declared_trees
from spmd_types.codemods.observations import (
    RESULT,
    ClassTypes,
    Note,
    Observation,
    Shape,
    Value,
    known_part,
    refine,
    scaled_dim,
    settle,
)
from spmd_types.typesystem import UNKNOWN, I, LocalType, R, Shard, SpmdType, check_fits, markers_from_text

__all__ = ["observe"]

_Key = tuple[str, str]
"""A module class, as the source knows it: its file and qualified name (re-executing a script makes new classes)."""


@dataclass(frozen=True)
class _Seen:
    """A tensor at one position of one call: its tracked type and its local shape."""

    spmd: SpmdType
    shape: Shape


_Recorded: TypeAlias = "_Seen | tuple[_Seen | None, ...]"


@dataclass
class _Trace:
    """One run: what each class's forward calls saw, in order (position -> what was seen), and its parameters.

    ``attributes`` and ``forwards`` are what the classes already declare (the
    tensors in the class body, ``forward``'s annotations); ``errors`` counts the
    checker's reports by message.
    """

    calls: dict[_Key, list[dict[str, _Recorded]]] = field(default_factory=dict)
    parameters: dict[_Key, dict[str, list[_Seen]]] = field(default_factory=dict)
    attributes: dict[_Key, dict[str, Tree]] = field(default_factory=dict)
    forwards: dict[_Key, Declarations] = field(default_factory=dict)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)


def _class_key(cls: type) -> _Key:
    return inspect.getsourcefile(cls) or "", cls.__qualname__


def _forward_owner(cls: type) -> type:
    """The class whose body defines the ``forward`` that instances of ``cls`` run."""
    return next(c for c in cls.__mro__ if "forward" in vars(c))


@functools.cache
def _forward_declarations(owner: type) -> Declarations:
    return Declarations.of(vars(owner)["forward"], f"{owner.__name__}.forward")


class _Recorder:
    """The module hooks of one run: declares the assumed parameter types, records every call of a kept class."""

    def __init__(self, tracker: TypeTracker, keep: Callable[[type], bool],
                 assumed: Mapping[tuple[_Key, str], SpmdType]) -> None:
        self.tracker = tracker
        self.keep = keep
        self.assumed = assumed
        self.trace = _Trace()

    @contextlib.contextmanager
    def hooked(self) -> Iterator[_Trace]:
        handles = [register_module_forward_pre_hook(self._before),
                   register_module_forward_hook(self._after, with_kwargs=True)]
        try:
            yield self.trace
        finally:
            for handle in handles:
                handle.remove()
            self.trace.errors.update(str(error) for error in self.tracker.errors)

    def _before(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        cls = type(module)
        if not self.keep(cls):
            return
        key = _class_key(cls)
        for name, parameter in module._parameters.items():
            assumed = self.assumed.get((key, name))
            if parameter is not None and assumed is not None and not assumed.is_unknown:
                _checks.assert_type(parameter, *markers_from_text(str(assumed)))

    def _after(self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: object) -> None:
        cls = type(module)
        if not self.keep(cls) or self.tracker._paused:
            return
        key = _class_key(cls)
        seen = self.trace.parameters.setdefault(key, {})
        for name, parameter in module._parameters.items():
            if parameter is not None:
                seen.setdefault(name, []).append(self._seen(parameter))
        if key not in self.trace.attributes:
            self.trace.attributes[key] = declared_trees(annotations_of(cls))
        owner = _forward_owner(cls)
        if owner is torch.nn.Module:
            return
        declarations = _forward_declarations(owner)
        try:
            bound = declarations.signature.bind(module, *args, **kwargs).arguments
        except TypeError:
            return
        call: dict[str, _Recorded] = {}
        for name, value in list(bound.items())[1:]:  # after self
            if isinstance(value, torch.Tensor):
                call[name] = self._seen(value)
        result = self._record(output)
        if result is not None:
            call[RESULT] = result
        owner_key = _class_key(owner)
        self.trace.calls.setdefault(owner_key, []).append(call)
        self.trace.forwards[owner_key] = declarations

    def _seen(self, tensor: torch.Tensor) -> _Seen:
        return _Seen(self.tracker.type_of(tensor) or UNKNOWN, tuple(tensor.shape))

    def _record(self, output: object) -> _Recorded | None:
        if isinstance(output, torch.Tensor):
            return self._seen(output)
        if isinstance(output, tuple) and any(isinstance(item, torch.Tensor) for item in output):
            return tuple(self._seen(item) if isinstance(item, torch.Tensor) else None for item in output)
        return None


@contextlib.contextmanager
def _simulated_ranks(sizes: Mapping[str, int]) -> Iterator[None]:
    """Every rank of a mesh of these named axes, run in this process, with the mesh current for ``spmd_types``.

    A ``fake`` process group of the right size is created for the block (an
    existing one of the same size is used as it is; one of another size is
    replaced) and destroyed after it if the block created it.
    """
    world = math.prod(sizes.values())
    created = False
    if dist.is_initialized() and dist.get_world_size() != world:
        dist.destroy_process_group()
    if not dist.is_initialized():
        dist.init_process_group("fake", rank=0, world_size=world)
        created = True
    try:
        mesh = init_device_mesh("cpu", tuple(sizes.values()), mesh_dim_names=tuple(sizes))
        with LocalTensorMode(world), _mesh.set_current_mesh(mesh):
            yield
    finally:
        if created:
            dist.destroy_process_group()


def _trace(run: Callable[[], object], sizes: Mapping[str, int], keep: Callable[[type], bool],
           assumed: Mapping[tuple[_Key, str], SpmdType]) -> _Trace:
    """Run ``run()`` on a simulated mesh of ``sizes`` under runtime checking, recording each kept module call."""
    with _simulated_ranks(sizes), runtime_checking(raise_errors=False) as tracker:
        recorder = _Recorder(tracker, keep, assumed)
        with recorder.hooked() as trace:
            run()
    return trace


def _not_torch(cls: type) -> bool:
    """By default torch's own modules (``nn.Linear``, ...) are not observed: their source is not yours to annotate."""
    return not cls.__module__.startswith("torch.")


def observe(run: Callable[[], object], mesh: Mapping[str, int], *,
            keep: Callable[[type], bool] = _not_torch) -> Observation:
    """Run ``run()`` on a simulated mesh (axis name -> ranks) and observe the SPMD types of its modules.

    ``run`` builds the model inside the call (its parameters must be created
    on the simulated mesh) and calls it, giving the top module's inputs their
    types (with ``assert_type`` or a collective of ``spmd_types``); it is
    called several times (see the module documentation).  ``keep`` selects the
    module classes to observe.  Returns the types to write, class by class,
    and the notes on positions left alone.
    """
    sizes = dict(mesh)
    probes = {axis: _trace(run, {**sizes, axis: 1}, keep, {}) for axis, n in sizes.items() if n > 1}
    notes: list[Note] = []
    candidates = _parameter_candidates(_trace(run, sizes, keep, {}), probes, sizes, notes)
    final = _trace(run, sizes, keep, _parameter_trials(run, sizes, keep, candidates, notes))
    classes = [_class_types(key, final, probes, sizes, notes) for key in _keys(final)]
    return Observation(tuple(c for c in classes if c.arguments or c.result is not None or c.parameters), tuple(notes))


def _keys(trace: _Trace) -> list[_Key]:
    return list(dict.fromkeys([*trace.parameters, *trace.calls]))


Candidates = dict[tuple[_Key, str], dict[str, tuple[LocalType | Shard, ...]]]


def _parameter_candidates(base: _Trace, probes: Mapping[str, _Trace], sizes: Mapping[str, int],
                      notes: list[Note]) -> Candidates:
    """What each undeclared parameter can be on each axis, from its shapes: one shard, or ``R`` and ``I``."""
    candidates: Candidates = {}
    for key, parameters in base.parameters.items():
        for name, seen in parameters.items():
            if name in base.attributes.get(key, {}):
                continue
            options: dict[str, tuple[LocalType | Shard, ...]] = {}
            for axis, n in sizes.items():
                whole = probes[axis].parameters.get(key, {}).get(name) if axis in probes else None
                if whole is None:
                    continue  # an axis of one rank says nothing
                local_shapes, whole_shapes = {s.shape for s in seen}, {s.shape for s in whole}
                if len(local_shapes) != 1 or len(whole_shapes) != 1:
                    notes.append(Note(*key, name, f"instances of the class differ in shape on {axis!r}"))
                    continue
                local, full = local_shapes.pop(), whole_shapes.pop()
                dim = scaled_dim(local, full, n)
                if dim is not None:
                    options[axis] = (Shard(dim),)
                elif local == full:
                    options[axis] = (R, I)
                else:
                    notes.append(Note(*key, name, f"its shape {list(local)} on {n} ranks of {axis!r} is no shard of "
                                                  f"its shape {list(full)} on one rank: not annotated on {axis!r}"))
            candidates[key, name] = options
    return candidates


def _parameter_trials(run: Callable[[], object], sizes: Mapping[str, int], keep: Callable[[type], bool],
                      candidates: Candidates, notes: list[Note]) -> dict[tuple[_Key, str], SpmdType]:
    """Each parameter's type: its shards, and on each other axis the one of ``R`` and ``I`` that adds no error."""
    assumed = {parameter: SpmdType({axis: options[0] for axis, options in by_axis.items() if len(options) == 1})
               for parameter, by_axis in candidates.items()}
    baseline = _trace(run, sizes, keep, assumed).errors
    for parameter, by_axis in candidates.items():
        for axis, options in by_axis.items():
            if len(options) == 1:
                continue
            fitting = {}
            for option in options:
                trial = {**assumed, parameter: assumed[parameter].with_axis(axis, option)}
                errors = _trace(run, sizes, keep, trial).errors
                if not errors - baseline:
                    fitting[option] = errors
            if len(fitting) == 1:
                ((option, errors),) = fitting.items()
                assumed[parameter] = assumed[parameter].with_axis(axis, option)
                baseline = errors
            else:
                why = "both R and I fit every use in the run" if fitting else "neither R nor I fits its uses"
                notes.append(Note(*parameter[0], parameter[1], f"{why} on {axis!r}: not annotated on {axis!r}"))
    return {parameter: t for parameter, t in assumed.items() if not t.is_unknown}


def _class_types(key: _Key, final: _Trace, probes: Mapping[str, _Trace], sizes: Mapping[str, int],
                 notes: list[Note]) -> ClassTypes:
    """What to write into the class ``key``: the settled value of every undeclared position."""
    parameters: dict[str, SpmdType] = {}
    for name, seen in final.parameters.get(key, {}).items():
        if name in final.attributes.get(key, {}):
            continue
        value = settle([known_part(s.spmd) for s in seen])
        if isinstance(value, SpmdType):
            parameters[name] = value
        elif isinstance(value, str) and len(set(seen)) > 1:  # an unknown one was reported where it was looked for
            notes.append(Note(*key, name, value))
    forward = final.forwards.get(key)
    calls = final.calls.get(key, [])
    wholes = {axis: probe.calls.get(key, []) for axis, probe in probes.items()}
    positions = list(dict.fromkeys(name for call in calls for name in call))
    arguments: dict[str, SpmdType] = {}
    result: Value | None = None
    for position in positions:
        spelled = f"forward -> {RESULT}" if position == RESULT else f"forward({position})"
        values = [_value(call[position], k, position, wholes, sizes) for k, call in enumerate(calls)
                  if position in call]
        value = settle(values)
        tree = None
        if forward is not None:
            tree = forward.returns if position == RESULT else forward.parameters.get(position)
        if isinstance(tree, SpmdType) and isinstance(value, SpmdType):
            problems = check_fits(value, tree)
            if problems:
                notes.append(Note(*key, spelled, f"declared {tree.describe()}, observed {value.describe()}: "
                                                 "the declaration is kept"))
            continue
        if tree is not None:
            continue
        if isinstance(value, str):
            notes.append(Note(*key, spelled, value))
        elif position == RESULT:
            result = value
        elif isinstance(value, SpmdType):
            arguments[position] = value
    return ClassTypes(key[0], key[1], arguments, result, parameters)


def _value(recorded: _Recorded, k: int, position: str, wholes: Mapping[str, list[dict[str, _Recorded]]],
           sizes: Mapping[str, int]) -> Value:
    """The value recorded in call ``k`` at ``position``, its ``V`` axes refined to shards by the probes' shapes."""

    def shapes(seen: _Seen, index: int | None) -> dict[str, tuple[int, Shape]]:
        out = {}
        for axis, calls in wholes.items():
            other = calls[k].get(position) if k < len(calls) else None
            if index is not None and isinstance(other, tuple) and index < len(other):
                other = other[index]
            if isinstance(other, _Seen):
                out[axis] = (sizes[axis], other.shape)
        return out

    if isinstance(recorded, _Seen):
        return refine(known_part(recorded.spmd), recorded.shape, shapes(recorded, None))
    return tuple(None if item is None else refine(known_part(item.spmd), item.shape, shapes(item, i))
                 for i, item in enumerate(recorded))
