"""Other libraries' communication functions, typed as the collective or cast each one is.

Existing training code calls its framework's own differentiable collectives,
such as Megatron-LM's ``copy_to_tensor_model_parallel_region``.  Each of those
moves a tensor between SPMD types exactly as one of this package's calls does,
forward *and* backward: ``copy_to_tensor_model_parallel_region`` is the
identity forward and an all-reduce backward, which is ``reinterpret(x, "tp",
src=I, dst=R)``.  This table says so, one :class:`Equivalent` per function, so
that the checker types a call of the library function as the call it is
equivalent to, and code that keeps calling its framework is checked once its
boundaries are annotated.

Each entry was read off the library's source (the version is in
:data:`VERIFIED_AGAINST`); ``tests/runtime/test_runtime_ecosystem.py`` runs
each library function and its equivalent on real gloo ranks and checks that
their forward and backward agree.

A library function finds its process group in a parameter; when the caller
leaves it out, the library uses a group of its own choosing, named here by a
*role* (``"tp"``: Megatron's tensor-model-parallel group).  Which mesh axis a
role is, is the user's configuration (by default the axis named like the role).
torch's default group is :data:`WORLD`: every rank, which is the flattened
group of all the mesh's axes when the mesh spans every rank.

Where torch's backward differs from the equivalent call's, the entry says so
in a comment, and ``docs/libraries.md`` lists it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from spmd_types.typesystem.codes import Code
from spmd_types.typesystem.collectives import CALLS, Endpoint, fix, route
from spmd_types.typesystem.local_types import AxisType, I, LocalType, P, R, Shard, V
from spmd_types.typesystem.violations import Violation

__all__ = [
    "EQUIVALENTS", "FUNCTIONAL_OPS", "GROUP_GETTERS", "IN_PLACE", "PASS_THROUGH_OPS", "RANK_GETTERS", "REEXPORTS",
    "ROLES", "VERIFIED_AGAINST", "WORLD",
    "Equivalent", "FlagVariant", "FunctionalOp", "InPlace", "check_in_place", "reduction_name",
]

ROLES: Final = ("tp", "cp", "ep")
"""The parallel groups a library can pick by itself, each the default name of its mesh axis."""

WORLD: Final = "world"
"""The role of torch's default group (``group.WORLD``): every rank.

It is no axis of its own: on a mesh that spans every rank it is the flattened
group of all the mesh's axes, in the mesh's order (the plugin takes them from
its ``axes`` option; runtime checking from the current mesh).  Where they are
not known, a call on it is unknown.
"""

VERIFIED_AGAINST: Final = {"megatron-core": "0.16.1", "torch": "2.13.0", "deepspeed": "0.19.8"}


def reduction_name(spelled: str) -> str:
    """The reduction a library names, spelled as the collectives' ``op=``: ``ReduceOp.MAX`` and "MAX" are "max"."""
    return spelled.rpartition(".")[2].lower()


@dataclass(frozen=True)
class FlagVariant:
    """A boolean parameter that changes the equivalent's ``dst`` (``True`` is its default)."""

    parameter: str
    dst_if_false: Endpoint


@dataclass(frozen=True)
class Equivalent:
    """A library function that is ``call(tensor, axis, src=src, dst=dst)`` on its group's axis.

    ``parameters`` are the library function's parameters in order, so that a
    call's positional arguments can be bound to them.  ``tensor`` and
    ``group`` name the ones that hold the tensor and the process group;
    ``default_role`` is the group the library uses when ``group`` is left out
    or ``None`` (``None``: the group is required).  ``variant`` is a flag that
    selects another ``dst``.  The other parameters have no counterpart in the
    equivalent call: it is equivalent when they are left out.
    ``reshapes_to_2d``: the library first reshapes its input to two dims,
    ``[-1, last dim]`` (and so returns two dims); the equivalent call then
    takes ``x.flatten(0, -2)``.

    ``reduction`` names the parameter that holds the reduction (torch's
    ``op=ReduceOp.SUM``); the equivalent call then has that ``op=``, and a
    reduction that cannot be read makes the result unknown (``None``: always
    a sum).  ``src_dim``/``dst_dim`` name parameters whose literal value ``d``
    makes the table's ``V`` at ``src``/``dst`` the shard ``S(d)``
    (``gather_dim``).  ``tensor_list``: the tensor parameter holds a list of
    tensors of type ``src`` that the equivalent takes stacked on a new dim 0;
    ``returns_tuple``: the library returns the equivalent's result unbound
    along dim 0, each tensor of type ``dst``.  ``shown_as`` is how messages
    name the function where the caller's spelling is not known (by default
    :attr:`name`).
    """

    function: str
    call: str
    src: Endpoint
    dst: Endpoint
    parameters: tuple[str, ...]
    tensor: str
    group: str
    default_role: str | None
    variant: FlagVariant | None = None
    reshapes_to_2d: bool = False
    reduction: str | None = None
    src_dim: str | None = None
    dst_dim: str | None = None
    tensor_list: bool = False
    returns_tuple: bool = False
    shown_as: str = ""

    def __post_init__(self) -> None:
        if self.call not in CALLS:
            raise ValueError(f"{self.function}: {self.call} is not a collective or cast")
        dims = ((self.src_dim, self.src), (self.dst_dim, self.dst))
        if any(parameter is not None and end is not V for parameter, end in dims):
            raise ValueError(f"{self.function}: only a V end takes its shard dim from a parameter")
        optional = (self.variant.parameter if self.variant else None, self.reduction, self.src_dim, self.dst_dim)
        named = (self.tensor, self.group, *(p for p in optional if p is not None))
        if not set(named) <= set(self.parameters):
            raise ValueError(f"{self.function}: {named} are not all among its parameters {self.parameters}")
        for dst in (self.dst, *((self.variant.dst_if_false,) if self.variant else ())):
            if route(self.call, self.src, dst) is None:
                raise ValueError(f"{self.function}: {self.call} does not go from {self.src} to {dst}")

    @property
    def name(self) -> str:
        """The function's own name, as callers write it."""
        return self.function.rpartition(".")[2]

    @property
    def shown(self) -> str:
        """How messages name the function where the caller's spelling is not known."""
        return self.shown_as or self.name

    def endpoints(self, src_dim: int | None = None, dst_dim: int | None = None) -> tuple[Endpoint, Endpoint]:
        """``src`` and ``dst`` of a call whose ``src_dim``/``dst_dim`` arguments are these literals (``None``: not)."""
        return (Shard(src_dim) if src_dim is not None else self.src,
                Shard(dst_dim) if dst_dim is not None else self.dst)

    def spelled(self, dst: Endpoint, src: Endpoint | None = None, op: str = "sum") -> str:
        """The equivalent call, for messages: ``all_reduce(src=P, dst=I)``."""
        reduction = f", op={op!r}" if op != "sum" else ""
        return f"{self.call}(src={(src or self.src).code}, dst={dst.code}{reduction})"


_MEGATRON_MAPPINGS: Final = "megatron.core.tensor_parallel.mappings"


def _megatron(name: str, call: str, src: Endpoint, dst: Endpoint, variant: FlagVariant | None = None,
              *, parameters: tuple[str, ...] = ("input_", "group"), default_role: str | None = "tp",
              reshapes_to_2d: bool = False) -> Equivalent:
    return Equivalent(f"{_MEGATRON_MAPPINGS}.{name}", call, src, dst, parameters, "input_", "group", default_role,
                      variant, reshapes_to_2d)


_MEGATRON_ENTRIES: Final = (
        # Identity forward, all-reduce backward: the input of a column-parallel layer.
        _megatron("copy_to_tensor_model_parallel_region", "reinterpret", I, R),
        # All-reduce forward, identity backward: the output of a row-parallel layer.
        _megatron("reduce_from_tensor_model_parallel_region", "all_reduce", P, I),
        # Keep this rank's slice of the last dim forward, all-gather it backward.
        _megatron("scatter_to_tensor_model_parallel_region", "convert", I, Shard(-1)),
        # All-gather the last dim forward, keep this rank's slice backward.
        _megatron("gather_from_tensor_model_parallel_region", "all_gather", Shard(-1), I),
        # The same pair along the first (sequence) dim.
        _megatron("scatter_to_sequence_parallel_region", "convert", I, Shard(0)),
        # All-gather the sequence forward; backward reduce-scatter, or with
        # tensor_parallel_output_grad=False keep this rank's slice.
        _megatron("gather_from_sequence_parallel_region", "all_gather", Shard(0), R,
                  FlagVariant("tensor_parallel_output_grad", I),
                  parameters=("input_", "tensor_parallel_output_grad", "group", "output_split_sizes",
                              "use_global_buffer")),
        # Reduce-scatter along the sequence forward, all-gather backward.
        _megatron("reduce_scatter_to_sequence_parallel_region", "reduce_scatter", P, Shard(0),
                  parameters=("input_", "group", "input_split_sizes", "use_global_buffer")),
        # The same pair along the last dim.
        _megatron("all_gather_last_dim_from_tensor_parallel_region", "all_gather", Shard(-1), R),
        _megatron("reduce_scatter_last_dim_to_tensor_parallel_region", "reduce_scatter", P, Shard(-1)),
        # Chunk j of the first dim to rank j, received chunks concatenated in rank order (the
        # token exchange of mixture-of-experts layers); the group is required.
        _megatron("all_to_all", "all_to_all", Shard(0), Shard(0), default_role=None,
                  parameters=("group", "input_", "output_split_sizes_", "input_split_sizes")),
        # [tokens/TP, H] to [tokens, H/TP], and back.
        _megatron("all_to_all_sp2hp", "all_to_all", Shard(0), Shard(-1), reshapes_to_2d=True),
        _megatron("all_to_all_hp2sp", "all_to_all", Shard(-1), Shard(0), reshapes_to_2d=True),
)

REEXPORTS: Final[dict[str, str]] = {
    "megatron.core.tensor_parallel": _MEGATRON_MAPPINGS,
    "torch.distributed.nn": "torch.distributed.nn.functional",
}
"""Packages that import all of a module's functions in :data:`EQUIVALENTS` into their own namespace, by package.

``megatron.core.tensor_parallel.copy_to_tensor_model_parallel_region`` is the
function of ``megatron.core.tensor_parallel.mappings``.  (mypy follows such
imports itself; a source rewrite, which sees only names, reads them here.)
"""

GROUP_GETTERS: Final[dict[str, str]] = {
    "megatron.core.parallel_state.get_tensor_model_parallel_group": "tp",
    "megatron.core.parallel_state.get_context_parallel_group": "cp",
    "megatron.core.parallel_state.get_expert_model_parallel_group": "ep",
}
"""Library functions that return the process group of a role.

(Megatron's ``get_data_parallel_group`` is left out: with
``with_context_parallel=True`` it returns the group of two axes at once.)
"""

RANK_GETTERS: Final[dict[str, str]] = {
    "megatron.core.parallel_state.get_tensor_model_parallel_rank": "tp",
    "megatron.core.parallel_state.get_context_parallel_rank": "cp",
    "megatron.core.parallel_state.get_expert_model_parallel_rank": "ep",
}
"""Library functions that return this rank's index in the process group of a role (a number that varies on it)."""


@dataclass(frozen=True)
class InPlace:
    """A library collective that overwrites its tensor argument, outside autograd.

    After ``torch.distributed.all_reduce(x, group=g)`` the data of ``x`` is the
    sum over the group's ranks, but ``x`` keeps its SPMD type, and autograd
    records nothing: no gradient flows back through the sum.  ``call`` is the
    differentiable call to use instead, to ``dst``.
    """

    function: str
    call: str
    dst: LocalType
    tensor: str
    group: str

    @property
    def name(self) -> str:
        """How callers usually write it: ``torch.distributed.all_reduce``."""
        return f"torch.distributed.{self.function.rpartition('.')[2]}"


IN_PLACE: Final[dict[str, InPlace]] = {
    e.function: e
    for e in (InPlace("torch.distributed.distributed_c10d.all_reduce", "all_reduce", R, "tensor", "group"),)
}
"""Library collectives that change their argument's data in place, by full name."""


def check_in_place(entry: InPlace, axis: str, have: AxisType) -> Violation:
    """The call of ``entry`` on a tensor of type ``have`` on the group's ``axis``: always a mistake.

    The fix is the differentiable call, assigned back to the name, when it
    accepts the tensor's type; a replicated tensor gets none, since summing it
    over the axis was not what its author meant either.
    """
    reason = (f"the tensor is {have.code} and is overwritten in place with its {entry.call.replace('_', '-')}, "
              "outside autograd: it keeps its SPMD type though its data changed, and no gradient flows back "
              "through the communication")
    better = fix(entry.call, have, entry.dst, axis) if isinstance(have, (LocalType, Shard)) else None
    if better is None and have in (R, I):
        reason += f"; summing {have.code} data over the axis also multiplies it by the axis size"
    fixes = (replace(better, call=f"{{x}} = {better.call}"),) if better is not None else ()
    return Violation(Code.INPLACE, axis, reason, (have.code,), (0,), fixes)


# -- torch's functional collectives --------------------------------------------------


@dataclass(frozen=True)
class FunctionalOp:
    """An op of torch's functional collectives, typed as ``call(x, axis, src=src, dst=dst)``.

    ``torch.distributed._functional_collectives.all_reduce(x, "sum", group)``
    and its siblings compute out of place by calling one op each of the
    ``_c10d_functional`` operator library; torch registers an autograd formula
    for each, which is the backward of the equivalent call (the backward of
    the all-reduce is an all-reduce, that of the gather a reduce-scatter, and
    so on).  The op sees the tensor as the collective does: gathers and
    scatters work on dim 0 (the Python wrappers move other dims there first),
    so a shard is only known to be varying: ``V``.

    ``op`` is the operator's qualified name (``"_c10d_functional::all_reduce"``);
    ``group_name`` and ``reduce_op`` are the positions of the arguments that
    hold the process group's name and the reduction (``None``: always a sum).
    """

    op: str
    call: str
    src: Endpoint
    dst: Endpoint
    group_name: int
    reduce_op: int | None = None

    def __post_init__(self) -> None:
        if route(self.call, self.src, self.dst) is None:
            raise ValueError(f"{self.op}: {self.call} does not go from {self.src} to {self.dst}")

    @property
    def name(self) -> str:
        """How messages name the op: ``torch.ops._c10d_functional.all_reduce``."""
        return "torch.ops." + self.op.replace("::", ".")


def _functional(namespace: str) -> tuple[FunctionalOp, ...]:
    return (
        FunctionalOp(f"{namespace}::all_gather_into_tensor", "all_gather", V, R, group_name=2),
        FunctionalOp(f"{namespace}::reduce_scatter_tensor", "reduce_scatter", P, V, group_name=3, reduce_op=1),
        FunctionalOp(f"{namespace}::all_to_all_single", "all_to_all", V, V, group_name=3),
    )


FUNCTIONAL_OPS: Final[dict[str, FunctionalOp]] = {
    e.op: e
    for e in (
        FunctionalOp("_c10d_functional::all_reduce", "all_reduce", P, R, group_name=2, reduce_op=1),
        *_functional("_c10d_functional"),
        # The older names of the differentiable variants, registered with the same formulas.
        *_functional("_c10d_functional_autograd"),
    )
}
"""The functional collectives' ops (torch 2.13.0: ``torch/distributed/_functional_collectives.py``), by qualified name.

``tests/runtime/test_runtime_checking_dist.py`` runs each op and its
equivalent call on the same simulated ranks and compares forward and backward.
"""

PASS_THROUGH_OPS: Final = frozenset({"_c10d_functional::wait_tensor", "_c10d_functional::_wrap_tensor_autograd"})
"""Functional-collective ops that return their input's data, with an identity gradient: the type passes through."""


# -- torch's differentiable collectives ------------------------------------------------

_TORCH_NN: Final = "torch.distributed.nn.functional"


def _torch_nn(name: str, call: str, src: Endpoint, dst: Endpoint, parameters: tuple[str, ...], tensor: str, *,
              reduction: str | None = None, tensor_list: bool = False, returns_tuple: bool = False) -> Equivalent:
    return Equivalent(f"{_TORCH_NN}.{name}", call, src, dst, parameters, tensor, "group", WORLD,
                      reduction=reduction, tensor_list=tensor_list, returns_tuple=returns_tuple,
                      shown_as=f"{_TORCH_NN}.{name}")


_TORCH_NN_ENTRIES: Final = (
    # Sum forward, and the backward all-reduces the gradient with the same op.  For op=SUM that is
    # ours; for MAX or MIN torch all-reduces the gradients with that op, which is not the max's
    # derivative, while all_reduce(op="max") has no gradient: its result is a constant.
    _torch_nn("all_reduce", "all_reduce", P, R, ("tensor", "op", "group"), "tensor", reduction="op"),
    # A tuple of every rank's tensor; backward reduce-scatter (NCCL) or all-to-all then sum (other
    # backends), both the reduce-scatter of ours.
    _torch_nn("all_gather", "all_gather", V, R, ("tensor", "group"), "tensor", returns_tuple=True),
    # Rank r gets the sum of every rank's input_list[r]; backward all-gathers the gradient.
    _torch_nn("reduce_scatter", "reduce_scatter", P, V, ("output", "input_list", "op", "group"), "input_list",
              reduction="op", tensor_list=True),
    # out[i] is rank i's input[this rank]; backward the same exchange.
    _torch_nn("all_to_all", "all_to_all", V, V, ("output_tensor_list", "input_tensor_list", "group"),
              "input_tensor_list", tensor_list=True, returns_tuple=True),
    # Chunk j of dim 0 to rank j, received chunks concatenated; backward the exchange with the sizes swapped.
    _torch_nn("all_to_all_single", "all_to_all", Shard(0), Shard(0),
              ("output", "input", "output_split_sizes", "input_split_sizes", "group"), "input"),
    # Concatenate on dim 0.  The backward reduce-scatters on NCCL and XCCL; on any other
    # backend (gloo) torch's backward raises "Backend not supported!".
    _torch_nn("_all_gather_base", "all_gather", Shard(0), R, ("output_tensor", "input_tensor", "group"),
              "input_tensor"),
)
"""torch 2.13's ``torch.distributed.nn.functional``: each ``torch.autograd.Function`` that has an equivalent.

``broadcast``, ``reduce``, ``gather`` and ``scatter`` have none (their results
depend on the rank of a root, and their backwards send every gradient to one
rank): their results are unknown.  The functions that take an ``output``
buffer write into it and return it; the result is typed, the buffer keeps its
type: use the result.
"""

_FUNCOL: Final = "torch.distributed._functional_collectives"


def _funcol(name: str, op: str, parameters: tuple[str, ...], *, reduction: str | None = None,
            src_dim: str | None = None, dst_dim: str | None = None, dim_0: bool = False) -> tuple[Equivalent, ...]:
    """The Python wrapper ``name`` of the op ``op``, and its ``_autograd`` alias if any: typed as the op is.

    ``dim_0``: the wrapper exchanges chunks of dim 0, so the op's ``V`` ends are ``S(0)``.
    """
    entry = FUNCTIONAL_OPS[f"_c10d_functional::{op}"]
    src, dst = (Shard(0), Shard(0)) if dim_0 else (entry.src, entry.dst)
    return tuple(
        Equivalent(f"{_FUNCOL}.{function}", entry.call, src, dst, parameters, "self", "group", None,
                   reduction=reduction, src_dim=src_dim, dst_dim=dst_dim, shown_as=f"{_FUNCOL}.{function}")
        for function in (name, f"{name}_autograd") if function != "all_reduce_autograd"
    )


_FUNCOL_ENTRIES: Final = (
    *_funcol("all_reduce", "all_reduce", ("self", "reduceOp", "group", "tag"), reduction="reduceOp"),
    *_funcol("all_gather_single", "all_gather_into_tensor", ("self", "gather_dim", "group", "tag"),
             src_dim="gather_dim"),
    *_funcol("all_gather_tensor", "all_gather_into_tensor", ("self", "gather_dim", "group", "tag"),
             src_dim="gather_dim"),
    *_funcol("reduce_scatter_single", "reduce_scatter_tensor", ("self", "reduceOp", "scatter_dim", "group", "tag"),
             reduction="reduceOp", dst_dim="scatter_dim"),
    *_funcol("reduce_scatter_tensor", "reduce_scatter_tensor", ("self", "reduceOp", "scatter_dim", "group", "tag"),
             reduction="reduceOp", dst_dim="scatter_dim"),
    *_funcol("all_to_all_single", "all_to_all_single",
             ("self", "output_split_sizes", "input_split_sizes", "group", "tag"), dim_0=True),
)
"""The Python wrappers of torch 2.13's functional collectives, typed as the op each one runs (:data:`FUNCTIONAL_OPS`).

In 2.13 every one is differentiable: the ops have autograd formulas, and
each ``*_autograd`` function calls the function without the suffix.  A
literal ``gather_dim``/``scatter_dim`` makes the gathered or scattered dim
a shard of that dim.
"""

# -- DeepSpeed's sequence parallelism (Ulysses) ------------------------------------------

_DEEPSPEED_LAYER: Final = "deepspeed.sequence.layer"

_DEEPSPEED_ENTRIES: Final = (
    # Sharded on gather_idx (the sequence) in, on scatter_idx (the heads) out; the backward is the
    # same exchange with the indices swapped, as ours.  (single_all_to_all, which its forward calls,
    # writes into a fresh buffer with c10d: it has no backward, and is not in the table.)
    Equivalent(f"{_DEEPSPEED_LAYER}._SeqAllToAll.apply", "all_to_all", V, V,
               ("group", "input", "scatter_idx", "gather_idx", "batch_dim_idx", "stream", "handle", "type", "is_fwd",
                "num_kv_heads"),
               "input", "group", None, src_dim="gather_idx", dst_dim="scatter_idx", shown_as="_SeqAllToAll.apply"),
)
"""DeepSpeed 0.19.8's all-to-all between sequence and head shards (``deepspeed/sequence/layer.py``)."""

EQUIVALENTS: Final[dict[str, Equivalent]] = {
    e.function: e for e in (*_MEGATRON_ENTRIES, *_TORCH_NN_ENTRIES, *_FUNCOL_ENTRIES, *_DEEPSPEED_ENTRIES)
}
"""Each library function's equivalent, by the function's full name (a method's: ``module.Class.method``)."""
