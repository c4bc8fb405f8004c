"""Run-time type checking: the SPMD types of tensors, followed while the program runs.

The mypy plugin checks the types without running anything.  This module
checks the same rules on a running program, with the same rule core
(:mod:`spmd_types.typesystem`) and the same error codes and messages::

    with spmd_types.runtime_checking():
        loss = model(batch)
        loss.backward()

Inside the block every tensor may carry a tracked SPMD type (one local type
per mesh axis).  Types enter where they are declared:

* the SPMD annotations of ``forward`` of every ``nn.Module`` that is called
  (its positional arguments and its result), and of the tensors declared in
  a module's class body (``weight: Annotated[nn.Parameter, S["tp", 0]]``);
* the annotations of functions decorated with :func:`checked`;
* ``assert_type(x, R["dp"])``;
* the result of a collective or cast of this package (``dst`` on its axis),
  and of ``einsum``, ``matmul``, ``linear`` and ``sum`` with
  ``out_partial_axes`` (``P`` on those axes, by the core's
  :func:`~spmd_types.typesystem.check_partial_output`);
* constants (``torch.zeros``, ``torch.ones``, Python numbers).

From there the op table gives every torch op's result type
(``torch.*``, ``torch.nn.functional.*``, tensor methods, operators and
properties), the collectives' tables check each ``src=`` against the input's
tracked type before the collective runs, functional collectives
(``torch.distributed._functional_collectives``) are typed as the collectives
they are, so are other libraries' mapping functions (Megatron's, by the
core's ecosystem table; see :mod:`spmd_types._rebinding`), a raw
``torch.distributed.all_reduce`` of a typed tensor is
reported as the plugin reports it, ``loss.backward()`` (and
``torch.autograd.backward``/``grad``) checks the loss and its seed, and
declared boundaries check what crosses them.  A tensor with no tracked type
is unknown: nothing is checked on it (gradual typing, as in the plugin).

A broken rule raises :class:`~spmd_types._errors.SpmdTypeCheckError` (before
the op or collective runs, where it can be decided before), whose ``code``
is the plugin's error code for the same mistake.

Checking is off by default and costs nothing then.  It is on inside
``with runtime_checking():``, and for the whole process (its main thread)
when the environment variable ``SPMD_TYPES_CHECK=1`` is set when the runtime
part of ``spmd_types`` is first imported; ``SPMD_TYPES_CHECK=0`` turns every
``runtime_checking()`` block off.  While ``torch.compile`` traces, nothing is
checked; a compiled function's torch calls are checked when they run as
torch functions (the ``eager`` backend), not when they run as the compiled
kernels of ``aot_eager`` or ``inductor`` (their results are unknown).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import typing
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, ParamSpec, TypeVar

import torch
from torch.distributed.device_mesh import DeviceMesh
from torch.overrides import TorchFunctionMode, resolve_name

from spmd_types import _dist, _dtensor, _mesh, _rebinding
from spmd_types._declarations import (
    Configurations,
    Declarations,
    Tree,
    annotations_of,
    callee_name,
    declared_trees,
    declared_values,
)
from spmd_types._errors import SpmdTypeCheckError
from spmd_types._op_params import Signatures, signatures
from spmd_types.typesystem import (
    AUTOGRAD_FUNCTIONS,
    BIASED_PRODUCTS,
    CALLS,
    EQUIVALENTS,
    FUNCTIONAL_OPS,
    IN_PLACE,
    OPERATOR_SYMBOLS,
    OPS,
    PASS_THROUGH_OPS,
    RETURN_VALUE,
    SUM_OPS,
    UNKNOWN,
    WEAK,
    WORLD,
    ZERO,
    AnnotationError,
    AxisTypes,
    Code,
    Constant,
    Endpoint,
    Equivalent,
    FunctionalOp,
    InPlace,
    LocalType,
    Operand,
    OpOutcome,
    OpRule,
    PartialOutputFunction,
    Placement,
    Shard,
    SpmdType,
    V,
    Violation,
    absorbed,
    apply_op,
    argument_site,
    canonical_param,
    check_backward,
    check_call_on_axes,
    check_fits,
    check_from_local,
    check_global_op,
    check_in_place,
    check_partial_output,
    counted_like,
    display_name,
    flattened_axes,
    global_cast_violation,
    is_varying,
    lookup,
    passed_literal,
    reduction_name,
    retargeted,
    route,
    spell_placements,
    spmd_type_from_metadata,
    summed_replicated_term,
    sums_over_axis,
    to_local_type,
)

__all__ = ["TypeTracker", "checked", "collective", "partial_output", "runtime_checking"]

_P = ParamSpec("_P")
_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])

ENVIRONMENT: Final = "SPMD_TYPES_CHECK"
_ON: Final = frozenset({"1", "true", "yes", "on"})
_OFF: Final = frozenset({"0", "false", "no", "off"})

_WEAK_NUMBER: Final = SpmdType(default=WEAK)
_ZERO_NUMBER: Final = SpmdType(default=ZERO)


class _Producer(typing.NamedTuple):
    """The collective or cast that computed a tensor: ``call(x, axis, src=src, ...)``."""

    call: str
    axis: str
    src: Endpoint


_Summands = tuple[tuple[str, SpmdType], ...]
"""The summands a tensor was computed as (``v + bias``): how to name each, and its type."""


class _Tag(weakref.ref):  # type: ignore[type-arg]
    """A tensor's tracked type, held by a weak reference that forgets it when the tensor dies."""

    __slots__ = ("key", "producer", "spmd", "summands")

    key: int
    spmd: SpmdType
    producer: _Producer | None
    summands: _Summands | None  # how a sum was built, for a reduction of it (see :mod:`.summation`)


class TypeTracker:
    """The SPMD types that run-time checking follows, and the violations it found.

    ``with runtime_checking() as tracker:`` yields it.  :meth:`type_of` tells
    the tracked type of a tensor (``None``: unknown).  With
    ``raise_errors=False`` a broken rule does not raise; its
    :class:`~spmd_types._errors.SpmdTypeCheckError` is appended to
    :attr:`errors` and the program goes on, the result unknown on the axis
    of the violation (as the plugin continues after an error).
    """

    def __init__(self, raise_errors: bool = True) -> None:
        self.raise_errors = raise_errors
        self.errors: list[SpmdTypeCheckError] = []
        self._tags: dict[int, _Tag] = {}
        self._paused = 0
        self._frames: list[tuple[object, list[tuple[torch.Tensor, tuple[SpmdType, _Producer | None] | None]]]] = []
        self._mode: _Mode | None = None
        self._hooks: list[Any] = []
        self._unbind: list[Callable[[], None]] = []
        self._global = 0  # how many global_spmd functions the program is in
        self._local_axes: frozenset[str] = frozenset()  # the axes local_region made local SPMD (see _regions)

    # -- tracked types ---------------------------------------------------------------

    def type_of(self, x: object) -> SpmdType | None:
        """The tracked SPMD type of tensor ``x``; ``None`` when nothing is known about it."""
        tag = self._tags.get(id(x))
        return tag.spmd if tag is not None else None

    def _known(self, x: object) -> SpmdType:
        """:meth:`type_of`, with ``UNKNOWN`` for an untracked tensor."""
        tag = self._tags.get(id(x))
        return tag.spmd if tag is not None else UNKNOWN

    def _set(self, x: torch.Tensor, spmd: SpmdType, producer: _Producer | None = None,
             summands: _Summands | None = None) -> None:
        key = id(x)
        tag = self._tags.get(key)
        if tag is None:
            tag = _Tag(x, self._forget_dead)
            tag.key = key
            self._tags[key] = tag
        tag.spmd = spmd
        tag.producer = producer
        tag.summands = summands

    def _forget_dead(self, tag: _Tag) -> None:
        if self._tags.get(tag.key) is tag:
            del self._tags[tag.key]

    def _forget(self, x: object) -> None:
        self._tags.pop(id(x), None)

    def _tag_outputs(self, out: object, spmd: SpmdType, producer: _Producer | None = None) -> None:
        """Give every tensor ``out`` is or holds (an op with several outputs) the type ``spmd``."""
        if isinstance(out, torch.Tensor):
            self._set(out, spmd, producer)
        elif isinstance(out, (tuple, list)):
            for item in out:
                if isinstance(item, torch.Tensor):
                    self._set(item, spmd, producer)

    # -- reporting -------------------------------------------------------------------

    def _report(
        self, violations: Iterable[Violation], where: str, operand_names: tuple[str, ...] = (), value: str = "x"
    ) -> None:
        for violation in violations:
            error = SpmdTypeCheckError.from_violation(violation, where, operand_names, value)
            if self.raise_errors:
                raise error
            self.errors.append(error)

    # -- switching on and off ---------------------------------------------------------

    def _start(self) -> None:
        global _ACTIVE
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self._mode = _Mode(self)
        self._mode.__enter__()  # type: ignore[no-untyped-call]
        self._hooks = [
            register_module_forward_pre_hook(_module_pre_hook),
            register_module_forward_hook(_module_post_hook, always_call=True),
        ]
        self._unbind = [_rebinding.rebind({name: functools.partial(_library_function, entry)
                                           for name, entry in EQUIVALENTS.items()}),
                        _dtensor.replace_boundaries(self._to_local, self._from_local)]
        _ACTIVE = self

    def _stop(self) -> None:
        global _ACTIVE
        _ACTIVE = None
        for undo in reversed(self._unbind):
            undo()
        self._unbind = []
        for handle in self._hooks:
            handle.remove()
        self._hooks = []
        if self._mode is not None:
            self._mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
            self._mode = None

    # -- collectives and casts ---------------------------------------------------------

    def _collective(self, call: str, fn: Callable[..., torch.Tensor], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> torch.Tensor:
        """``fn(*args, **kwargs)``, the collective or cast ``call``, checked and its result typed."""
        x = args[0] if args else kwargs.get("x")
        axes = _axis_names(args[1] if len(args) > 1 else kwargs.get("axis"))
        spec = CALLS[call]
        src, dst = kwargs.get("src", spec.src_default), kwargs.get("dst", spec.dst_default)
        op = kwargs.get("op", "sum")
        if not (isinstance(x, torch.Tensor) and axes and isinstance(src, (LocalType, Shard))
                and isinstance(dst, (LocalType, Shard)) and isinstance(op, str) and route(call, src, dst) is not None):
            # An axis that names no mesh axis leaves the result unknown; a bad argument is the call's to reject.
            return self._unchecked(fn, args, kwargs)
        return self._typed_call(call, axes, x, src, dst, op, lambda: self._unchecked(fn, args, kwargs), call, "x")

    def _typed_call(self, call: str, axes: tuple[str, ...], x: torch.Tensor, src: Endpoint, dst: Endpoint, op: str,
                    run: Callable[[], _T], where: str, value: str) -> _T:
        """``run()``, which computes ``call(x, axes, src=src, dst=dst, op=op)``: checked first, its result typed.

        ``where`` and ``value`` are how a report names the call and its input.
        """
        # The input's shards counted as src counts its dim: S(2) is src=S(-1) in a 3-D tensor.
        have = counted_like(self._known(x), SpmdType(dict.fromkeys(axes, src)), x.dim())
        result, violations = _check_call_on_axes(call, axes, have, src, dst, op)
        self._report(violations, where, (value,), value)
        if self._global:
            found = (global_cast_violation(call, axis, src, dst, have.get(axis)) for axis in axes
                     if axis not in self._local_axes)
            self._report(tuple(v for v in found if v is not None), where, (value,), value)
        self._check_summed(call, axes, x, src, dst, op)
        out = run()
        if not result.is_unknown:
            self._tag_outputs(out, result, _Producer(call, axes[0], src) if len(axes) == 1 else None)
        return out

    def _library_call(self, entry: Equivalent, fn: Callable[..., Any], args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        """A call of another library's function ``fn``, checked and typed as its ``entry`` in the core's table.

        Nothing inside it is tracked: the library's own ops and in-place
        collectives are its implementation of the call.  A list of tensors
        (``entry.tensor_list``) is checked when its tensors share one type;
        a reduction that is not a sum, max, min or average by name leaves
        the result unknown.  A call that leaves the group out is checked on
        the mesh axis its library's default group stands for, and runs on
        that axis's group: what is checked is what runs, also where the
        library's own parallel state was never set up (on simulated ranks).
        torch's default group, the world, is left as it is.
        """
        arguments = _bind(fn, args, kwargs)
        x = arguments.get(entry.tensor)
        if entry.tensor_list and isinstance(x, (list, tuple)) and x:
            x = x[0] if len({str(self._known(t)) for t in x}) == 1 else None
        group = arguments.get(entry.group)
        axes = _library_axes(group, entry.default_role)
        mesh = _mesh.current_mesh()
        if group is None and entry.default_role != WORLD and axes is not None and mesh is not None and arguments:
            args, kwargs = _with_argument(fn, args, kwargs, entry.group, mesh.get_group(axes[0]))
        op = _reduction(arguments.get(entry.reduction, "sum")) if entry.reduction is not None else "sum"
        src, dst = entry.endpoints(*(_literal_dim(arguments.get(p)) if p else None
                                     for p in (entry.src_dim, entry.dst_dim)))
        if entry.variant is not None and arguments.get(entry.variant.parameter, True) is False:
            dst = entry.variant.dst_if_false
        run = functools.partial(self._unchecked, fn, args, kwargs)
        if not isinstance(x, torch.Tensor) or axes is None or op is None:
            return run()
        where = f"{entry.shown} (that is, {entry.spelled(dst, src, op)})"
        return self._typed_call(entry.call, axes, x, src, dst, op, run, where, entry.tensor)

    def _partial_output(self, function: PartialOutputFunction, op: Callable[..., torch.Tensor],
                        args: tuple[Any, ...], kwargs: dict[str, Any], axes: tuple[str, ...],
                        run: Callable[[], torch.Tensor]) -> torch.Tensor:
        """``run()``, which computes ``function(..., out_partial_axes=axes)`` as ``op(*args, **kwargs)`` then
        ``reinterpret(V -> P)`` on ``axes``: checked by the core's rule first, its result typed."""
        handler = _PARTIAL_OUTPUT_OPS.get(function.op)
        if handler is None:
            handler = _PARTIAL_OUTPUT_OPS[function.op] = _Op(function.op, op)
        operands, literals = handler.operands(self._tags, args, kwargs)
        passed = frozenset(name for name in literals if name not in handler.mentioned)
        outcome = check_partial_output(function, operands, axes, passed, autograd=torch.is_grad_enabled(),
                                       args=literals)
        self._report(outcome.violations, function.where, tuple(o.param for o in operands))
        if self._global:
            outcome = check_global_op(function.op, operands, outcome.result, literals, axes, self._local_axes)
            self._report(outcome.violations, function.where, tuple(o.param for o in operands))
        out = self._unchecked(run, (), {})
        if not outcome.result.is_unknown:
            self._tag_outputs(out, outcome.result)
        return out

    def _to_local(self, to_local: Callable[..., Any], d: Any, grad_placements: Any) -> Any:
        """``d.to_local(grad_placements=...)``: typed by the pair of placements on each mesh dim (the core's table)."""
        found = None if self._paused or torch.compiler.is_compiling() else _dtensor.layout(
            d.device_mesh, d.placements, grad_placements)
        if found is None:
            return to_local(d, grad_placements=grad_placements)
        layout, given = found

        def respell(new: tuple[Placement, ...]) -> str:
            return f"{{x}}.to_local(grad_placements={spell_placements(new)})"

        result, violations = to_local_type(layout, given, respell)
        self._report(violations, "to_local", ("d",), "d")
        out = to_local(d, grad_placements=grad_placements)
        if isinstance(out, torch.Tensor) and not result.is_unknown:
            self._set(out, result)
        return out

    def _from_local(self, from_local: Callable[..., Any], arguments: inspect.BoundArguments) -> Any:
        """``DTensor.from_local(x, mesh, placements, grad_placements=...)``: ``x``'s type checked against the pairs."""
        named = arguments.arguments
        x = named.get("local_tensor")
        found = None if self._paused or torch.compiler.is_compiling() else _dtensor.layout(
            named.get("device_mesh"), named.get("placements"), named.get("grad_placements"))
        have = self.type_of(x)
        if found is not None and have is not None:
            layout, given = found
            call = f"DTensor.from_local({{x}}, mesh, {spell_placements(layout.placements)}, grad_placements="
            self._report(check_from_local(have, layout, given, lambda new: call + spell_placements(new) + ")"),
                         "DTensor.from_local", ("x",), "x")
        return from_local(*arguments.args, **arguments.kwargs)

    def _check_summed(self, call: str, axes: Sequence[str], x: torch.Tensor, src: Endpoint, dst: Endpoint,
                      op: str) -> None:
        """A reduction of a sum with a replicated summand counts that summand once per rank (the core's rule)."""
        tag = self._tags.get(id(x))
        if tag is None or not tag.summands or not sums_over_axis(call, src, dst, op):
            return
        names = tuple(name for name, _ in tag.summands)
        for axis in axes:
            violation = summed_replicated_term(call, axis, [(name, t.get(axis)) for name, t in tag.summands])
            if violation is not None:
                self._report([violation], call, names, "x")

    def _unchecked(self, fn: Callable[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _T:
        """``fn(*args, **kwargs)`` with nothing inside it tracked: the ops a collective runs are its own.

        When the checker's mode is the innermost torch function mode (the
        usual case) it leaves the stack for the call, so those ops do not
        even reach it; otherwise it lets them through untouched.
        """
        self._paused += 1
        mode = self._mode
        depth = torch._C._len_torch_function_stack()
        popped = mode is not None and depth > 0 and torch._C._get_function_stack_at(depth - 1) is mode
        if popped:
            torch._C._pop_torch_function_stack()
        try:
            return fn(*args, **kwargs)
        finally:
            if popped:
                torch._C._push_on_torch_function_stack(mode)
            self._paused -= 1

    # -- declared boundaries ------------------------------------------------------------

    def _enter(self, owner: object, declared: Mapping[str, Tree], arguments: Mapping[str, Any],
               callee: str) -> None:
        """Check the arguments against their declared types, which they then have until :meth:`_leave`."""
        saved: list[tuple[torch.Tensor, tuple[SpmdType, _Producer | None] | None]] = []
        self._frames.append((owner, saved))
        for name, tree in declared.items():
            if name not in arguments:
                continue
            for tensor, spmd in declared_values(arguments[name], tree):
                tag = self._tags.get(id(tensor))
                saved.append((tensor, (tag.spmd, tag.producer) if tag is not None else None))
                self._check_value(tensor, spmd, argument_site(name, callee), name)
                self._set(tensor, spmd)

    def _leave(self, owner: object) -> None:
        """Give the arguments of the innermost boundary of ``owner`` back the types they had before."""
        for k in range(len(self._frames) - 1, -1, -1):
            if self._frames[k][0] is owner:
                _, saved = self._frames.pop(k)
                break
        else:
            return
        for tensor, previous in reversed(saved):
            if previous is None:
                self._forget(tensor)
            else:
                self._set(tensor, *previous)

    def _check_value(self, tensor: torch.Tensor, declared: SpmdType, where: str, value: str) -> None:
        have = self.type_of(tensor)
        if have is not None:
            # S(-1) and S(2) are one dim of a 3-D tensor.
            self._report(check_fits(counted_like(have, declared, tensor.dim()), declared), where, value=value)

    def _returned(self, out: object, tree: Tree | None) -> None:
        """Check a returned value against the declared return type, which it then has."""
        if tree is None:
            return
        for tensor, declared in declared_values(out, tree):
            tag = self._tags.get(id(tensor))
            if tag is not None:
                violations = check_fits(tag.spmd, declared)
                producer = tag.producer
                operands: tuple[str, ...] = ()
                if producer is not None:
                    violations = tuple(
                        retargeted(v, producer.call, producer.axis, producer.src, declared.get(v.axis or ""))
                        for v in violations
                    )
                    operands = ("x",)
                self._report(violations, RETURN_VALUE, operands, "x")
            self._set(tensor, declared)

    def _call_checked(self, fn: Callable[..., Any], info: Declarations, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        try:
            bound = info.signature.bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)  # the call itself reports the wrong arguments
        if args and isinstance(args[0], torch.nn.Module):
            self._declared_attributes(args[0])
        marker = object()
        self._enter(marker, info.parameters, bound.arguments, info.callee)
        try:
            out = fn(*args, **kwargs)
        finally:
            self._leave(marker)
        self._returned(out, info.returns)
        return out

    def _declared_attributes(self, module: torch.nn.Module) -> None:
        """Tag the tensors a module's class declares (its parameters and buffers) with their declared types."""
        cls = type(module)
        for name, tree in _module_declarations(cls).attributes.items():
            value: object = module._parameters.get(name)
            if value is None:
                value = module._buffers.get(name)
            if value is None:
                value = module.__dict__.get(name)
            for tensor, spmd in declared_values(value, tree):
                self._check_value(tensor, spmd, f'attribute "{name}" of "{cls.__name__}"', name)
                self._set(tensor, spmd)

    def _assert_type(self, x: object, markers: tuple[object, ...]) -> None:
        if not isinstance(x, torch.Tensor):
            return
        try:
            declared = spmd_type_from_metadata(m for m in markers if isinstance(m, AxisTypes))
        except AnnotationError as error:
            self._report([Violation(Code.ANNOTATION, None, str(error))], "assert_type")
            return
        if declared is None:
            return
        self._check_value(x, declared, "assert_type", "x")
        self._set(x, declared)


_ACTIVE: TypeTracker | None = None


# -- the torch function mode ---------------------------------------------------------------

_Handler = Callable[[TypeTracker, Any, tuple[Any, ...], dict[str, Any]], Any]


class _Mode(TorchFunctionMode):
    """Sees every torch function call and hands it to the handler for its op."""

    def __init__(self, tracker: TypeTracker) -> None:
        super().__init__()
        self.tracker = tracker

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        if kwargs is None:
            kwargs = {}
        tracker = self.tracker
        if tracker._paused or torch.compiler.is_compiling():
            return func(*args, **kwargs)
        try:
            handler = _HANDLERS.get(func)
        except TypeError:  # an unhashable callable
            return _handler_for(func)(tracker, func, args, kwargs)
        if handler is None:
            handler = _HANDLERS[func] = _handler_for(func)
        return handler(tracker, func, args, kwargs)


_HANDLERS: dict[Any, _Handler] = {}


_check_call_on_axes: Final = functools.lru_cache(maxsize=4096)(check_call_on_axes)
"""The core's typing of a call, remembered: a program makes the same few calls on the same few types."""


def _untracked(tracker: TypeTracker, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Not an op of the table (``x.shape``, ``x.grad``, ``copy.deepcopy(x)``): the result is unknown."""
    return func(*args, **kwargs)


def _public_name(func: Any) -> str | None:
    """The op's public name as the op table spells it (``torch.Tensor.add``), or another full name."""
    if isinstance(func, torch._ops.OpOverloadPacket):
        return str(func._qualified_op_name)
    if isinstance(func, torch._ops.OpOverload):
        return str(func.overloadpacket._qualified_op_name)
    name: str | None = resolve_name(func)
    if name is None:
        module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
        if not (isinstance(module, str) and isinstance(qualname, str)):
            return None
        name = f"{module}.{qualname}"
    for prefix, public in _NAMESPACES:
        if name.startswith(prefix):
            return public + name[len(prefix):]
    return name


# Where torch defines the functions of its public namespaces (as the plugin maps them).
_NAMESPACES: Final = (
    ("torch.functional.", "torch."),
    ("torch._C._VariableFunctions.", "torch."),
    ("torch._C._nn.", "torch.nn.functional."),
    ("torch._tensor.Tensor.", "torch.Tensor."),
)
_PROPERTIES: Final = frozenset(("T", "mT", "H", "mH", "real", "imag"))
_DISTRIBUTED: Final = "torch.distributed."


def _handler_for(func: Any) -> _Handler:
    name = _public_name(func)
    if name is None:
        return _untracked
    if name in FUNCTIONAL_OPS:
        return functools.partial(_functional_op, FUNCTIONAL_OPS[name])
    if name in PASS_THROUGH_OPS:
        return _pass_through
    if name in IN_PLACE:
        return functools.partial(_in_place_collective, IN_PLACE[name])
    if name.startswith(_DISTRIBUTED):
        return _overwrites_arguments
    if name == "torch.Tensor.backward":
        return _seeding("self", "gradient", "loss.backward()", "loss")
    if name in AUTOGRAD_FUNCTIONS:
        outputs, seeds = AUTOGRAD_FUNCTIONS[name]
        return _seeding(outputs, seeds, f"{name}(...)", outputs)
    if name.endswith(".__get__"):
        owner, _, attribute = name[: -len(".__get__")].rpartition(".")
        if owner != "torch.Tensor" or attribute not in _PROPERTIES:
            return _untracked
        return _Op(f"{owner}.{attribute}", func, ((("input",), None),))
    if not _is_op(name):
        return _untracked
    return _Op(name, func)


def _is_op(name: str) -> bool:
    """Whether ``name`` is in a namespace whose functions the op table types (an unlisted one is non-linear)."""
    for namespace in ("torch.Tensor.", "torch.nn.functional.", "torch."):
        if name.startswith(namespace):
            short = name[len(namespace):]
            if "." in short:
                return False
            # Dunders other than operators are protocols (copying, pickling, printing), not ops.
            return not (short.startswith("__") and short not in OPERATOR_SYMBOLS and name not in OPS)
    return False


class _Op:
    """The handler of one torch op: reads the operands, applies the op table's rule, types the result."""

    __slots__ = ("bias", "display", "mentioned", "name", "names", "outcomes", "rest", "rule", "sums", "tabled")

    def __init__(self, name: str, func: Any, overloads: Signatures | None = None) -> None:
        self.name = name
        self.rule: OpRule = lookup(name)
        self.mentioned = self.rule.params
        self.display = display_name(name)
        self.tabled = name in OPS  # a table op returns tensors; another is typed only if it does
        self.sums = name in SUM_OPS  # its result is remembered as a sum of its arguments
        self.bias = BIASED_PRODUCTS.get(name)  # or as a product plus this argument
        found = overloads if overloads is not None else signatures(name, func)
        self.names, self.rest = _bind_positions(found, self.rule)
        self.outcomes: dict[tuple[tuple[object, ...], tuple[str, ...], bool], tuple[OpOutcome, tuple[str, ...]]] = {}

    def __call__(self, tracker: TypeTracker, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tags = tracker._tags
        target = args[0] if self.rule.inplace and args else kwargs.get("out")
        tag = tags.get(id(target)) if target is not None else None
        if tag is not None and _is_constant(tag.spmd):
            # What a constant buffer holds once written into is what was written: the plugin gives
            # such a buffer no type, nor is it checked here: a zero is a zero only while it is one.
            tracker._forget(target)
        elif tag is not None:
            tag.summands = None  # written in place: no longer the sum it was built as
        items: list[object] = []
        passed: list[str] = []
        mentioned = self.mentioned
        tracked = False
        names, rest = self.names, self.rest
        for i, value in enumerate(args):
            tracked |= _read(tags, names[i] if i < len(names) else rest, value, items, passed, mentioned, self.rule)
        out_target = None
        for key, value in kwargs.items():
            if key == "out":
                out_target = value
                continue
            tracked |= _read(tags, canonical_param(key), value, items, passed, mentioned, self.rule)
        constant = self.rule.makes_constants
        if not (tracked or constant or (out_target is not None and id(out_target) in tags)):
            return func(*args, **kwargs)
        out = None
        if not self.tabled:
            out = func(*args, **kwargs)
            if not _has_tensor(out):
                return out  # size(), item(), tolist() and the like
        if any(isinstance(t, SpmdType) and _has_shard(t) for t in items[1::2]):
            outcome, params = self._sharded_outcome(tags, args, kwargs, tuple(passed), torch.is_grad_enabled())
            if tracker._global:
                operands, literals = self.operands(tags, args, kwargs)
                tracker._report(outcome.violations, self.display, params)
                outcome = check_global_op(self.name, operands, outcome.result, literals,
                                          local_axes=tracker._local_axes)
        else:
            outcome, params = self._outcome(tuple(items), tuple(passed), torch.is_grad_enabled())
        tracker._report(outcome.violations, self.display, params)
        result = outcome.result
        if out_target is not None:
            target = tracker.type_of(out_target)
            if target is not None:
                tracker._report(check_fits(result, target, code=Code.INPLACE), f"{self.display}(out=...)",
                                value="out")
        if self.tabled:
            out = func(*args, **kwargs)
        if out_target is None and not self.rule.inplace and not result.is_unknown:
            tracker._tag_outputs(out, result)
            if (self.sums or self.bias) and isinstance(out, torch.Tensor):
                summands = self._summands(tags, args, kwargs)
                if summands:
                    tracker._set(out, result, summands=summands)
        return out

    def _summands(self, tags: dict[int, _Tag], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Summands:
        """The summands of this op's result: its tensor arguments (a sum), or the product and the bias."""
        bound = {**{self.names[i] if i < len(self.names) else self.rest: a for i, a in enumerate(args)},
                 **{canonical_param(k): a for k, a in kwargs.items()}}

        def kind(value: object) -> SpmdType:
            tag = tags.get(id(value))
            return tag.spmd if tag is not None else UNKNOWN

        if self.bias is not None:
            bias = bound.get(self.bias)
            if not isinstance(bias, torch.Tensor):
                return ()
            factors = [kind(v) for name, v in bound.items() if name != self.bias and isinstance(v, torch.Tensor)]
            varying = SpmdType({axis: V for t in factors for axis, k in t.items() if is_varying(k)})
            return (f"{self.display}(...) without its {self.bias}", varying), (self.bias, kind(bias))
        summands: list[tuple[str, SpmdType]] = []
        for name in ("input", "other"):
            value = bound.get(name)
            if isinstance(value, torch.Tensor):
                tag = tags.get(id(value))
                summands += tag.summands if tag is not None and tag.summands else [(name, kind(value))]
        return tuple(summands)

    def _outcome(self, items: tuple[object, ...], passed: tuple[str, ...], autograd: bool
                 ) -> tuple[OpOutcome, tuple[str, ...]]:
        """The core's outcome for these operands; ``autograd`` is off under ``torch.no_grad()`` and in the
        ``forward`` of an autograd Function, where R and I coincide (see :func:`apply_op`)."""
        key = (items, passed, autograd)
        found = self.outcomes.get(key)
        if found is None:
            operands = [Operand(str(items[k]), _as_type(items[k + 1])) for k in range(0, len(items), 2)]
            outcome = apply_op(self.rule, operands, frozenset(passed), autograd=autograd)
            found = (outcome, tuple(op.param for op in operands))
            if len(self.outcomes) > 4096:
                self.outcomes.clear()
            self.outcomes[key] = found
        return found


    def _sharded_outcome(self, tags: dict[int, _Tag], args: tuple[Any, ...], kwargs: dict[str, Any],
                         passed: tuple[str, ...], autograd: bool) -> tuple[OpOutcome, tuple[str, ...]]:
        """The outcome where an operand is a shard: its dim follows the op, which needs the
        operands' shapes and the op's arguments (see :mod:`spmd_types.typesystem.shard_dims`)."""
        operands, literals = self.operands(tags, args, kwargs)
        outcome = apply_op(self.rule, operands, frozenset(passed), autograd=autograd, op=self.name, args=literals)
        return outcome, tuple(op.param for op in operands)

    def operands(self, tags: dict[int, _Tag], args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> tuple[list[Operand], dict[str, object]]:
        """A call's operands, with their tracked types and shapes, and its non-tensor arguments by name."""
        operands: list[Operand] = []
        literals: dict[str, object] = {}
        mentioned = self.mentioned
        bound = [(self.names[i] if i < len(self.names) else self.rest, a) for i, a in enumerate(args)]
        bound += [(canonical_param(k), a) for k, a in kwargs.items() if k != "out"]
        for param, value in bound:
            if not isinstance(value, torch.Tensor):
                if param == self.rest and param in literals:
                    literals[param] = (*_as_tuple(literals[param]), value)  # ``permute(2, 0, 1)``
                else:
                    literals[param] = value  # ``dim=1``, or an index such as ``(slice(None), None)``
                if param not in mentioned:
                    continue
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, str):
                    literals["equation"] = item  # einsum(equation, *operands) passes it among the operands
                elif isinstance(item, torch.Tensor):
                    tag = tags.get(id(item))
                    operands.append(Operand(param, tag.spmd if tag is not None else UNKNOWN, shape=tuple(item.shape)))
                elif type(item) in (int, float, bool):
                    operands.append(Operand(param, _ZERO_NUMBER if item == 0 else _WEAK_NUMBER, ndim=0))
        return operands, literals


def _as_tuple(value: object) -> tuple[object, ...]:
    return value if isinstance(value, tuple) else (value,)


def _has_shard(t: SpmdType) -> bool:
    return any(isinstance(kind, Shard) for _, kind in t.items())


def _is_constant(t: SpmdType) -> bool:
    """Whether ``t`` is a constant's type (weak or zero on every axis)."""
    return t.default is not None and all(isinstance(kind, Constant) for _, kind in t.items())


def _as_type(value: object) -> SpmdType:
    assert isinstance(value, SpmdType)
    return value


def _bind_positions(overloads: Sequence[tuple[tuple[str, ...], str | None]], rule: OpRule) -> tuple[
        tuple[str, ...], str]:
    """One parameter name per position over all overloads, preferring a name the rule mentions."""
    mentioned = set(rule.params)
    rests = [canonical_param(r) for _, r in overloads if r is not None]
    rest = next((r for r in rests if r in mentioned), rests[0] if rests else "")
    width = max((len(names) for names, _ in overloads), default=0)
    names: list[str] = []
    for k in range(width):
        options = list(dict.fromkeys(canonical_param(n[k]) for n, _ in overloads if k < len(n)))
        # A name the rule reads first; then the variadic one (``view(*size)`` over ``view(dtype)``).
        names.append(next((o for o in options if o in mentioned), rest if rest in options else options[0]))
    return tuple(names), rest


def _read(tags: dict[int, _Tag], param: str, value: object, items: list[object], passed: list[str],
          mentioned: tuple[str, ...], rule: OpRule) -> bool:
    """Record ``value`` passed as ``param`` of an op with ``rule``: a tensor (its tracked type), a number, or a
    sequence of them; a number the rule's join leaves out (:func:`absorbed`) and a string are *passed*.

    Returns whether a tracked tensor was found.
    """
    if isinstance(value, torch.Tensor):
        tag = tags.get(id(value))
        items += (param, tag.spmd if tag is not None else UNKNOWN)
        return tag is not None
    if value is None:
        return False
    kind = type(value)
    if kind is int or kind is float or kind is bool:
        if param in mentioned and not absorbed(rule, param, float(value)):  # type: ignore[arg-type]
            items += (param, _ZERO_NUMBER if value == 0 else _WEAK_NUMBER)
        else:
            passed.append(param)
            if kind is bool:
                passed.append(passed_literal(param, value))  # type: ignore[arg-type]
        return False
    if kind is list or kind is tuple:
        found = False
        for item in value:  # type: ignore[attr-defined]
            found |= _read(tags, param, item, items, passed, mentioned, rule)
        return found
    if kind is str:
        passed.append(passed_literal(param, value))  # type: ignore[arg-type]
    if param in mentioned and isinstance(value, (torch.SymInt, torch.SymFloat)):
        items += (param, UNKNOWN)  # a number that may differ per rank: unknown
        return False
    passed.append(param)
    return False


def _has_tensor(out: object) -> bool:
    if isinstance(out, torch.Tensor):
        return True
    return isinstance(out, (tuple, list)) and any(isinstance(item, torch.Tensor) for item in out)


def _seeding(outputs: str, seeds: str, where: str, value: str) -> _Handler:
    """The handler of a call that starts a backward pass from ``outputs``, seeded by ``seeds`` (``None``: ones).

    Each output with a known type is checked with its seed by the core's
    :func:`check_backward`; a seed whose type is unknown says nothing.
    Outputs and seeds given as sequences are paired up.
    """

    def handler(tracker: TypeTracker, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        arguments = _bind(func, args, kwargs)
        losses = _as_list(arguments.get(outputs))
        given = arguments.get(seeds)
        gradients = _as_list(given) if given is not None else [None] * len(losses)
        if len(gradients) == len(losses):
            for loss, gradient in zip(losses, gradients):
                loss_type = tracker.type_of(loss)
                seed = tracker.type_of(gradient) if gradient is not None else None
                if loss_type is not None and (gradient is None or seed is not None):
                    tracker._report(check_backward(loss_type, seed), where, value=value)
        return func(*args, **kwargs)

    return handler


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else [] if value is None else [value]


def _functional_op(entry: FunctionalOp, tracker: TypeTracker, func: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """An op of the functional collectives, checked and typed as the call the core says it is."""
    x = args[0] if args else kwargs.get("input")
    group = args[entry.group_name] if len(args) > entry.group_name else kwargs.get("group_name")
    op: object = "sum"
    if entry.reduce_op is not None:
        op = args[entry.reduce_op] if len(args) > entry.reduce_op else kwargs.get("reduce_op", "sum")
    axes = _group_axes(group)
    if not isinstance(x, torch.Tensor) or axes is None or not isinstance(op, str):
        return func(*args, **kwargs)
    run = functools.partial(func, *args, **kwargs)
    return tracker._typed_call(entry.call, axes, x, entry.src, entry.dst, op.lower(), run, entry.name, "input")


def _pass_through(tracker: TypeTracker, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Waiting for a functional collective's result, or wrapping it: the same data, the same type."""
    out = func(*args, **kwargs)
    tag = tracker._tags.get(id(args[0])) if args else None
    if tag is not None:
        tracker._tag_outputs(out, tag.spmd, tag.producer)
    return out


def _in_place_collective(entry: InPlace, tracker: TypeTracker, func: Any, args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> Any:
    """An in-place collective such as ``torch.distributed.all_reduce`` on a tensor typed on its group's axes: reported.

    ``group=None`` is the default group, which is an axis of the current mesh
    when the mesh has one axis.
    """
    arguments = _bind(func, args, kwargs)
    tensor = arguments.get(entry.tensor)
    group = arguments.get(entry.group)
    if group is None:
        group = _dist.world_group()
    axes = _group_axes(group) if group is not None else None
    have = tracker.type_of(tensor)
    known = [(axis, kind) for axis in axes or () if have is not None and (kind := have.get(axis)) is not None]
    tracker._report([check_in_place(entry, axis, kind) for axis, kind in known], entry.name, ("tensor",), "tensor")
    out = func(*args, **kwargs)
    if isinstance(tensor, torch.Tensor) and have is not None:
        if axes is None:
            tracker._forget(tensor)  # overwritten over a group that is no mesh axis: nothing is known any more
        for axis, _ in known:  # reported, going on: now the same on every rank of the axis
            have = have.with_axis(axis, entry.dst)
        tracker._set(tensor, have)
    return out


def _overwrites_arguments(tracker: TypeTracker, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Another ``torch.distributed`` function: it may write into its tensors, whose types are then unknown."""
    out = func(*args, **kwargs)
    for value in (*args, *kwargs.values()):
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, torch.Tensor):
                tracker._forget(item)
    return out


@functools.lru_cache(maxsize=64)
def _signature_of(func: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(func)


def _bind(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        return dict(_signature_of(func).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {}


def _with_argument(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
                   value: object) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` of a call of ``func`` that binds them, with parameter ``name`` set to ``value``."""
    bound = _signature_of(func).bind(*args, **kwargs)
    bound.arguments[name] = value
    return bound.args, bound.kwargs


# -- axes ----------------------------------------------------------------------------------


def _axis_names(axis: object) -> tuple[str, ...] | None:
    """The mesh-axis names an ``axis`` argument stands for, or ``None`` when it names none.

    A name; a tuple of names (the flattened group of those axes); a mesh (its
    axes); a process group that is the group of some axes of the current mesh.
    """
    if isinstance(axis, str):
        return (str(axis),)
    if isinstance(axis, tuple):
        names, _ = flattened_axes(axis)
        return names
    if isinstance(axis, DeviceMesh):
        names = axis.mesh_dim_names
        return tuple(names) if names else None
    return _group_axes(axis)


def _group_axes(group: object) -> tuple[str, ...] | None:
    """The axes of the current mesh whose (flattened) group is ``group``, a process group or its name.

    The functional collectives pass the group's name; the innermost mesh that
    has such a group wins.
    """
    if isinstance(group, _dist.ProcessGroup):
        group = group.group_name
    if not isinstance(group, str):
        return None
    for entry in reversed(_mesh._STACK):
        for key, found in entry.groups.items():
            if found.pg.group_name == group:
                return key if isinstance(key, tuple) else (key,)
    return None


def _library_axes(group: object, default_role: str | None) -> tuple[str, ...] | None:
    """The axes of the group a library function is called with, or of its default group when that is ``None``.

    torch's default group (``group.WORLD``) is every axis of the current
    mesh, when the mesh spans every rank.
    """
    world = _dist.world_group()
    role = WORLD if group is not None and group is world else default_role if group is None else None
    if role is None:
        return None if group is None else _group_axes(group)
    mesh = _mesh.current_mesh()
    names = mesh.mesh_dim_names if mesh is not None else None
    if not names:
        return None
    if role == WORLD:
        spans = mesh is not None and mesh.size() == _dist.world_size()
        return tuple(names) if spans else None
    return (role,) if role in names else None


def _reduction(op: object) -> str | None:
    """The ``op=`` a library's reduction argument is (``"sum"``, ``ReduceOp.MAX``); ``None`` for another kind."""
    name = op if isinstance(op, str) else getattr(op, "name", None)
    return reduction_name(name) if isinstance(name, str) else None


def _literal_dim(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def global_spmd(fn: _F) -> _F:
    """``@global_spmd``: check the function in global SPMD, statically and, while runtime checking is on, at run time.

    Inside it every value must stay global (:mod:`spmd_types.typesystem.global_rules`):
    an op on shards must keep them (a sum over a sharded dim only with
    ``out_partial_axes=``), a collective or cast only in its shard-preserving
    variants.  Its annotations are checked at every call as :func:`checked`
    checks them.  Without runtime checking it only pays two extra calls.
    """
    inner = checked(fn)

    @functools.wraps(fn)
    def global_call(*args: Any, **kwargs: Any) -> Any:
        tracker = _ACTIVE
        if tracker is None:
            return inner(*args, **kwargs)
        tracker._global += 1
        try:
            return inner(*args, **kwargs)
        finally:
            tracker._global -= 1

    return typing.cast(_F, global_call)


def checked(fn: _F) -> _F:
    """``@checked``: check the function's SPMD annotations at every call while runtime checking is on.

    Each argument whose parameter is annotated with an SPMD type
    (``Annotated[Tensor, R["dp"]]``, also inside ``Optional``, ``tuple``,
    ``list`` and ``Sequence``, and on ``*args``; a ``PartitionSpec`` there
    also declares ``R`` on each axis of the current mesh that neither it nor
    a marker names) must fit that type, and has it
    inside the call (a ``V`` argument of an ``S(0)`` parameter is ``S(0)``
    there); afterwards it has its own type again.  The result must fit the
    declared return type, and has that type in the caller.  A method of an
    ``nn.Module`` also gives the tensors its class declares their types.  A
    mismatch raises :class:`~spmd_types._errors.SpmdTypeCheckError` with code
    ``spmd-boundary``, the message the plugin gives for the same call.

    Without runtime checking the decorated function only pays one extra
    call.  For mypy the decorated function has its own signature.
    """
    info: list[Declarations] = []  # read at the first checked call: annotations may refer to later names

    @functools.wraps(fn)
    def checked_call(*args: Any, **kwargs: Any) -> Any:
        tracker = _ACTIVE
        if tracker is None or tracker._paused or torch.compiler.is_compiling():
            return fn(*args, **kwargs)
        if not info:
            info.append(Declarations.of(fn, callee_name(fn)))
        return tracker._call_checked(fn, info[0], args, kwargs)

    checked_call.__spmd_checked__ = True  # type: ignore[attr-defined]
    return typing.cast(_F, checked_call)


# -- modules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ModuleDeclarations:
    """What a module class declares: tensors in its class body, and ``forward``'s types (``None``: none).

    ``configurations``: for a class generic in its SPMD types, which
    constructor flags bind its type variables (``forward``'s declarations
    then depend on the instance, see :meth:`forward_of`).
    """

    attributes: dict[str, Tree]
    forward: Declarations | None
    configurations: Configurations | None = None

    def forward_of(self, module: object) -> tuple[dict[str, Tree], Tree | None]:
        """``forward``'s declared parameters and result for ``module``, its type variables bound by its flags."""
        assert self.forward is not None
        if not self.forward.variables or self.configurations is None:
            return self.forward.parameters, self.forward.returns
        return self.forward.configured(self.configurations.arguments(module))


_MODULES: dict[type, _ModuleDeclarations] = {}


def _module_declarations(cls: type) -> _ModuleDeclarations:
    found = _MODULES.get(cls)
    if found is None:
        attributes = declared_trees(annotations_of(cls))
        forward = getattr(cls, "forward", None)
        declared = None
        if inspect.isfunction(forward) and not getattr(forward, "__spmd_checked__", False):
            declared = Declarations.of(forward, f"{cls.__name__}.forward")
        configurations = Configurations.of(cls) if declared is not None and declared.variables else None
        if declared is not None and not declared.parameters and declared.returns is None and configurations is None:
            declared = None
        found = _MODULES[cls] = _ModuleDeclarations(attributes, declared, configurations)
    return found


def _module_pre_hook(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
    tracker = _ACTIVE
    if tracker is None or tracker._paused or torch.compiler.is_compiling():
        return
    info = _module_declarations(type(module))
    if info.attributes:
        tracker._declared_attributes(module)
    if info.forward is None:
        return
    try:
        arguments = info.forward.signature.bind_partial(module, *args).arguments
    except TypeError:
        arguments = {}
    tracker._enter(module, info.forward_of(module)[0], arguments, info.forward.callee)


def _module_post_hook(module: torch.nn.Module, args: tuple[Any, ...], output: object) -> None:
    tracker = _ACTIVE
    if tracker is None or tracker._paused or torch.compiler.is_compiling():
        return
    info = _MODULES.get(type(module))
    if info is None or info.forward is None:
        return
    tracker._leave(module)
    tracker._returned(output, info.forward_of(module)[1])


# -- the hook in the collectives --------------------------------------------------------


def collective(call: str) -> Callable[[Callable[_P, _T]], Callable[_P, _T]]:
    """Decorates the collective or cast ``call`` of this package, for runtime checking.

    With checking on, the call's ``src`` is checked against the input's
    tracked type before it runs, the ops it runs inside are not tracked,
    and its result gets the type the rule core gives it.
    """

    def decorate(fn: Callable[_P, _T]) -> Callable[_P, _T]:
        @functools.wraps(fn)
        def checked_collective(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            tracker = _ACTIVE
            if tracker is None or tracker._paused or torch.compiler.is_compiling():
                return fn(*args, **kwargs)
            return typing.cast(_T, tracker._collective(call, fn, args, dict(kwargs)))  # type: ignore[arg-type]

        return checked_collective

    return decorate


_PARTIAL_OUTPUT_OPS: dict[str, _Op] = {}
"""The handler of the torch op each function with ``out_partial_axes=`` runs, made at its first checked call."""


def partial_output(function: PartialOutputFunction, op: Callable[..., torch.Tensor], args: tuple[Any, ...],
                   kwargs: dict[str, Any], axes: tuple[str, ...], run: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``run()``, the body of ``function(..., out_partial_axes=axes)``, checked while runtime checking is on.

    ``op(*args, **kwargs)`` is the torch call it makes; with checking on, its
    operands' tracked types go through the core's
    :func:`~spmd_types.typesystem.check_partial_output` before it runs, nothing
    inside it is tracked, and its result gets the type the rule gives.
    """
    tracker = _ACTIVE
    if tracker is None or tracker._paused or torch.compiler.is_compiling():
        return run()
    return tracker._partial_output(function, op, args, kwargs, axes, run)


def _library_function(entry: Equivalent, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, the library function of ``entry``, checked and typed as its equivalent call while checking is on."""

    @functools.wraps(fn)
    def checked_library_call(*args: Any, **kwargs: Any) -> Any:
        tracker = _ACTIVE
        if tracker is None or tracker._paused or torch.compiler.is_compiling():
            return fn(*args, **kwargs)
        return tracker._library_call(entry, fn, args, kwargs)

    return checked_library_call


def assert_declared(x: object, markers: tuple[object, ...]) -> None:
    """``assert_type(x, *markers)`` under runtime checking: ``x`` must fit, and has that type afterwards."""
    tracker = _ACTIVE
    if tracker is not None and not tracker._paused and not torch.compiler.is_compiling():
        tracker._assert_type(x, markers)


# -- switching it on -------------------------------------------------------------------------

_SETTING: Final = os.environ.get(ENVIRONMENT, "").strip().lower()


@contextlib.contextmanager
def runtime_checking(*, raise_errors: bool = True, data: bool = False) -> Iterator[TypeTracker]:
    """``with runtime_checking(*, raise_errors=True, data=False) as tracker:`` track and check SPMD types.

    Inside the block the SPMD types of tensors are followed through every
    torch op, collective and declared boundary, and each rule the mypy
    plugin checks is checked on the running program (see the module
    documentation for what is tracked and what is not).  A broken rule
    raises :class:`~spmd_types._errors.SpmdTypeCheckError`, whose ``code``
    is the plugin's error code.  Yields the :class:`TypeTracker`.

    Args:
        raise_errors: ``False`` collects the errors in ``tracker.errors``
            instead of raising the first one.
        data: also turn on the data checks of ``assert_type`` and the
            cross-rank check of every collective
            (:func:`~spmd_types._checks.set_runtime_checks`) inside the block.

    A block inside another one (or inside a process checked through
    ``SPMD_TYPES_CHECK=1``) joins it: it yields the same tracker and its
    arguments are ignored.  With ``SPMD_TYPES_CHECK=0`` in the environment
    the block checks nothing (its tracker stays empty), so that checks can
    stay in the code and be switched off without editing it.  The tracking
    is per thread: the block covers the thread that entered it.
    """
    if _SETTING in _OFF:
        yield TypeTracker(raise_errors)
        return
    if _ACTIVE is not None:
        yield _ACTIVE
        return
    from spmd_types import _checks

    previous = _checks.runtime_checks_enabled()
    tracker = TypeTracker(raise_errors)
    if data:
        _checks.set_runtime_checks(True)
    tracker._start()
    try:
        yield tracker
    finally:
        tracker._stop()
        _checks.set_runtime_checks(previous)


if _SETTING in _ON:
    TypeTracker()._start()  # for the whole process: the main thread, from here on
