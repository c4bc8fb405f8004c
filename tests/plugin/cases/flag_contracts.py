"""Contracts that depend on a flag (issue 10, item 1): Megatron-like parallel layers, every configuration checked.

A layer is generic in the SPMD types its flags change, each type variable restricted to one type per flag
value; its constructor overloads say which flag value gives which types. mypy checks each method once per
combination of values (the flags narrowed to that configuration's literal by the plugin), binds each
instance's types where it is built, and types each call by them.
"""
from typing import Annotated, Generic, Literal, TypeVar, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from megatron.core.parallel_state import get_tensor_model_parallel_world_size
from torch.distributed import ProcessGroup

import spmd_types as spmd
from spmd_types import Axis, I, P, R, S, Spmd, V, all_gather, all_reduce, axis_size, convert, reduce_scatter, reinterpret

Whole = Spmd[Tensor, Literal["tp:I"]]  # replicated activations; the layer reduces their gradient itself
SeqSharded = Spmd[Tensor, Literal["tp:S(0)"]]  # sequence parallel: sharded along the sequence
Sharded = Spmd[Tensor, Literal["tp:S(-1)"]]  # sharded along the hidden (or vocabulary) dimension

ColIn = TypeVar("ColIn", Whole, SeqSharded)  # sequence_parallel False / True
ColOut = TypeVar("ColOut", Whole, Sharded)  # gather_output True / False
RowIn = TypeVar("RowIn", Sharded, Whole)  # input_is_parallel True / False
RowOut = TypeVar("RowOut", Whole, SeqSharded)  # sequence_parallel False / True


class ColumnParallelLinear(nn.Module, Generic[ColIn, ColOut]):
    @overload
    def __init__(self: "ColumnParallelLinear[Whole, Sharded]", dim: int, local_out: int, *,
                 gather_output: Literal[False] = ..., sequence_parallel: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: "ColumnParallelLinear[Whole, Whole]", dim: int, local_out: int, *,
                 gather_output: Literal[True], sequence_parallel: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: "ColumnParallelLinear[SeqSharded, Sharded]", dim: int, local_out: int, *,
                 gather_output: Literal[False] = ..., sequence_parallel: Literal[True]) -> None: ...
    def __init__(self, dim: int, local_out: int, *, gather_output: bool = False, sequence_parallel: bool = False) -> None:
        super().__init__()
        self.gather_output = gather_output
        self.sequence_parallel = sequence_parallel
        self.weight = nn.Parameter(torch.empty(local_out, dim))

    def forward(self, x: ColIn) -> ColOut:
        if self.sequence_parallel:
            total = all_gather(x, "tp", src=S(0), dst=R, gather_dim=0)  # OK: reduce-scatter in backward
        else:
            total = reinterpret(x, "tp", src=I, dst=R)  # OK: all-reduce of the input gradient (allreduce_dgrad)
        weight: Annotated[Tensor, S["tp", 0]] = self.weight
        out = F.linear(total, weight)
        if self.gather_output:
            return all_gather(out, "tp", src=V, dst=I, gather_dim=-1)  # OK
        return out  # OK


class RowParallelLinear(nn.Module, Generic[RowIn, RowOut]):
    @overload
    def __init__(self: "RowParallelLinear[Sharded, Whole]", local_in: int, dim: int, *,
                 input_is_parallel: Literal[True], sequence_parallel: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: "RowParallelLinear[Sharded, SeqSharded]", local_in: int, dim: int, *,
                 input_is_parallel: Literal[True], sequence_parallel: Literal[True]) -> None: ...
    @overload
    def __init__(self: "RowParallelLinear[Whole, Whole]", local_in: int, dim: int, *,
                 input_is_parallel: Literal[False], sequence_parallel: Literal[False] = ...) -> None: ...
    def __init__(self, local_in: int, dim: int, *, input_is_parallel: bool, sequence_parallel: bool = False) -> None:
        super().__init__()
        # A whole input with sequence parallelism is no overload: that configuration is not checked,
        # because it cannot be built (Megatron raises for it).
        self.input_is_parallel = input_is_parallel
        self.sequence_parallel = sequence_parallel
        self.weight = nn.Parameter(torch.empty(dim, local_in))

    def forward(self, x: RowIn) -> RowOut:
        if self.input_is_parallel:
            parallel = x
        else:
            parallel = convert(x, "tp", src=I, dst=S(-1))  # OK: split forward, all-gather in backward
        weight: Annotated[Tensor, S["tp", 1]] = self.weight
        partial = spmd.linear(parallel, weight, out_partial_axes="tp")
        if self.sequence_parallel:
            return reduce_scatter(partial, "tp", src=P, dst=S(0), scatter_dim=0)  # OK
        return all_reduce(partial, "tp", src=P, dst=I)  # OK


def vocab_parallel_cross_entropy(logits: Annotated[Tensor, S["tp", -1]], target: Tensor) -> Annotated[Tensor, I["tp"]]:
    raise NotImplementedError


def model(h: Annotated[Tensor, I["tp"]], target: Tensor) -> Annotated[Tensor, I["tp"]]:
    # Per instance: the hidden layers shard their output, the output layer gathers it.
    up = ColumnParallelLinear(8, 16)
    down = RowParallelLinear(16, 8, input_is_parallel=True)
    head = ColumnParallelLinear(8, 32, gather_output=True)
    reveal_type(up(h))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(head(h))  # N: SpmdTensor[Literal['tp:I']]
    h = down(torch.relu(up(h)))  # OK
    reveal_type(down)  # N: RowParallelLinear[spmd_types._typed.SpmdTensor[Literal['tp:V']], spmd_types._typed.SpmdTensor[Literal['tp:I']]]
    # The historical bug: vocabulary-sharded logits gathered, then fed to the vocab-parallel loss.
    return vocab_parallel_cross_entropy(head(h), target)  # E: [spmd-boundary] argument "logits" of "vocab_parallel_cross_entropy" on axis 'tp': expected S(-1), got I


def sequence_parallel_model(h: Annotated[Tensor, S["tp", 0]]) -> Annotated[Tensor, S["tp", 0]]:
    up = ColumnParallelLinear(8, 16, sequence_parallel=True)
    down = RowParallelLinear(16, 8, input_is_parallel=True, sequence_parallel=True)
    return down(torch.relu(up(h)))  # OK


def misconfigured(h: Annotated[Tensor, S["tp", 0]]) -> None:
    ColumnParallelLinear(8, 16, gather_output=True, sequence_parallel=True)  # E: [call-overload]
    up = ColumnParallelLinear(8, 16)
    up(h)  # E: [spmd-boundary] argument "x" of "ColumnParallelLinear.forward" on axis 'tp': expected I, got S(0)


class ForgetfulColumn(nn.Module, Generic[ColIn]):
    """A bug on one flag value: without sequence parallelism, the input gradient is never all-reduced."""

    @overload
    def __init__(self: "ForgetfulColumn[Whole]", *, sequence_parallel: Literal[False]) -> None: ...
    @overload
    def __init__(self: "ForgetfulColumn[SeqSharded]", *, sequence_parallel: Literal[True]) -> None: ...
    def __init__(self, *, sequence_parallel: bool) -> None:
        super().__init__()
        self.sequence_parallel = sequence_parallel
        self.weight = nn.Parameter(torch.empty(4, 4))

    def forward(self, x: ColIn) -> Annotated[Tensor, V["tp"]]:
        weight: Annotated[Tensor, S["tp", 0]] = self.weight
        if self.sequence_parallel:
            total = all_gather(x, "tp", src=S(0), dst=R, gather_dim=0)
            return F.linear(total, weight)  # OK
        return F.linear(x, weight)  # E: [spmd-mix] I does not mix with S(0)


class UnguardedColumn(nn.Module, Generic[ColOut]):
    """A flag read the constructor does not set per configuration is not narrowed: both branches are checked."""

    @overload
    def __init__(self: "UnguardedColumn[Whole]", *, gather_output: Literal[True]) -> None: ...
    @overload
    def __init__(self: "UnguardedColumn[Sharded]", *, gather_output: Literal[False]) -> None: ...
    def __init__(self, *, gather_output: bool) -> None:
        super().__init__()
        self.gather_output = gather_output
        self.gather = gather_output

    def forward(self, out: Annotated[Tensor, V["tp"]]) -> ColOut:
        reveal_type(self.gather_output)  # N: Literal[True] # N: Literal[False]
        if self.gather:
            return all_gather(out, "tp", src=V, dst=I, gather_dim=-1)  # E: [spmd-boundary] on axis 'tp': expected S(-1), got I
        return out  # E: [return-value]


# -- A flag of each call (Megatron's runtime_gather_output): overloads of forward, the plugin types the call by
# the overload its literal picks; None keeps the layer's own configuration.


class RuntimeGatheredColumn(nn.Module, Generic[ColOut]):
    @overload
    def __init__(self: "RuntimeGatheredColumn[Sharded]", *, gather_output: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: "RuntimeGatheredColumn[Whole]", *, gather_output: Literal[True]) -> None: ...
    def __init__(self, *, gather_output: bool = False) -> None:
        super().__init__()
        self.gather_output = gather_output
        self.weight = nn.Parameter(torch.empty(4, 4))

    @overload
    def forward(self, x: Whole, runtime_gather_output: None = ...) -> ColOut: ...
    @overload
    def forward(self, x: Whole, runtime_gather_output: Literal[True]) -> Whole: ...
    @overload
    def forward(self, x: Whole, runtime_gather_output: Literal[False]) -> Sharded: ...
    def forward(self, x: Whole, runtime_gather_output: bool | None = None) -> Whole | Sharded:
        weight: Annotated[Tensor, S["tp", 0]] = self.weight
        out = F.linear(reinterpret(x, "tp", src=I, dst=R), weight)
        gather_output: bool = self.gather_output
        if runtime_gather_output is not None:
            gather_output = runtime_gather_output
        if gather_output:
            return all_gather(out, "tp", src=V, dst=I, gather_dim=-1)  # OK
        return out  # OK


def per_call(h: Annotated[Tensor, I["tp"]], s: Annotated[Tensor, S["tp", 0]], flag: bool, target: Tensor) -> None:
    hidden = RuntimeGatheredColumn()
    output = RuntimeGatheredColumn(gather_output=True)
    reveal_type(hidden(h))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(output(h))  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(hidden(h, runtime_gather_output=True))  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(output(h, runtime_gather_output=False))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(output(h, None))  # N: SpmdTensor[Literal['tp:I']]
    vocab_parallel_cross_entropy(hidden(h), target)  # OK
    vocab_parallel_cross_entropy(hidden(h, runtime_gather_output=True), target)  # E: [spmd-boundary] argument "logits" of "vocab_parallel_cross_entropy" on axis 'tp': expected S(-1), got I
    hidden(s, runtime_gather_output=True)  # E: [spmd-boundary] argument "x" of "RuntimeGatheredColumn.forward" on axis 'tp': expected I, got S(0)
    hidden(h, flag)  # E: [call-overload]

# -- A submodule that some configurations lack (torchtitan's pipeline stages): typed None in their overloads, it
# is a flag too, read as present or None in each copy of forward.

Ids = Spmd[Tensor, Literal["tp:R"]]
StageIn = TypeVar("StageIn", Ids, Whole)


class Embed(nn.Module):
    def forward(self, ids: Ids) -> Whole:
        raise NotImplementedError


class Stage(nn.Module, Generic[StageIn]):
    @overload
    def __init__(self: "Stage[Ids]", embed: Embed) -> None: ...
    @overload
    def __init__(self: "Stage[Whole]", embed: None) -> None: ...
    def __init__(self, embed: Embed | None) -> None:
        super().__init__()
        self.embed = embed

    def forward(self, tokens: StageIn) -> Whole:
        reveal_type(self.embed)  # N: Embed # N: None
        return self.embed(tokens) if self.embed is not None else tokens  # OK


class ForgetfulStage(Stage[StageIn]):
    def forward(self, tokens: StageIn) -> Whole:
        return tokens  # E: [return-value]


def stages(ids: Annotated[Tensor, R["tp"]], h: Annotated[Tensor, I["tp"]]) -> None:
    first, later = Stage(Embed()), Stage(None)
    reveal_type(first.embed)  # N: Embed
    reveal_type(later.embed)  # N: None
    later(h)  # OK
    first(h)  # E: [spmd-boundary] argument "tokens" of "Stage.forward" on axis 'tp': expected R, got I

# -- Megatron's explicit_expert_comm (the MoE experts' RowParallelLinear): the output is left un-reduced,
# summands on tp, for the token dispatcher to reduce; Megatron requires skip_bias_add with it, which returns
# the bias for the caller to add instead of adding it.

Summands = Spmd[Tensor, Literal["tp:P"]]
ExpertOut = TypeVar("ExpertOut", Whole, Summands)  # explicit_expert_comm False / True


class ExpertRowParallelLinear(nn.Module, Generic[ExpertOut]):
    bias: Annotated[nn.Parameter, I["tp"]]

    @overload
    def __init__(self: "ExpertRowParallelLinear[Whole]", local_in: int, dim: int, *,
                 explicit_expert_comm: Literal[False] = ..., skip_bias_add: bool = ...) -> None: ...
    @overload
    def __init__(self: "ExpertRowParallelLinear[Summands]", local_in: int, dim: int, *,
                 explicit_expert_comm: Literal[True], skip_bias_add: Literal[True]) -> None: ...
    def __init__(self, local_in: int, dim: int, *, explicit_expert_comm: bool = False,
                 skip_bias_add: bool = False) -> None:
        super().__init__()
        self.explicit_expert_comm = explicit_expert_comm
        self.skip_bias_add = skip_bias_add
        self.weight = nn.Parameter(torch.empty(dim, local_in))
        self.bias = nn.Parameter(torch.empty(dim))

    def forward(self, input_: Sharded) -> tuple[ExpertOut, Whole | None]:
        weight: Annotated[Tensor, S["tp", 1]] = self.weight
        output_parallel = spmd.linear(input_, weight, out_partial_axes="tp")
        if self.explicit_expert_comm:
            output_ = output_parallel  # OK: P, reduced by the token dispatcher
        else:
            output_ = all_reduce(output_parallel, "tp", src=P, dst=I)  # OK
        output_bias: Whole | None
        if not self.skip_bias_add:
            output = output_ + self.bias  # OK: checked where the output is reduced only
            output_bias = None
        else:
            output = output_
            output_bias = self.bias
        return output, output_bias  # OK


class ReducingExpert(ExpertRowParallelLinear[Summands]):
    def forward(self, input_: Sharded) -> tuple[Summands, Whole | None]:
        weight: Annotated[Tensor, S["tp", 1]] = self.weight
        output_parallel = spmd.linear(input_, weight, out_partial_axes="tp")
        return all_reduce(output_parallel, "tp", src=P, dst=I), self.bias  # E@recommended: [spmd-boundary] on axis 'tp': expected P, got I


def experts(x: Sharded) -> Whole:
    dense = ExpertRowParallelLinear(16, 8)
    expert = ExpertRowParallelLinear(16, 8, explicit_expert_comm=True, skip_bias_add=True)
    reveal_type(dense(x)[0])  # N@recommended: SpmdTensor[Literal['tp:I']]
    reveal_type(expert(x)[0])  # N@recommended: SpmdTensor[Literal['tp:P']]
    return expert(x)[0]  # E@recommended: [return-value] (got "SpmdTensor[Literal['tp:P']]", expected "SpmdTensor[Literal['tp:I']]")


def expert_without_skip_bias_add() -> None:
    ExpertRowParallelLinear(16, 8, explicit_expert_comm=True)  # E: [call-overload]


# -- Size-1 axes: on one rank every collective is the identity, and the axis's types coincide.


def gather_last_dim(x: Annotated[Tensor, V["tp"], R["dp"]]) -> Annotated[Tensor, R["tp"], R["dp"]]:
    world_size = get_tensor_model_parallel_world_size()
    if world_size == 1:
        return x  # OK: one rank on tp
    return all_gather(x, "tp", src=V, dst=R, gather_dim=-1)  # OK


def reduce(partial: Annotated[Tensor, P["tp"]], group: Annotated[ProcessGroup, Axis["tp"]]) -> Annotated[Tensor, I["tp"]]:
    if group.size() > 1:
        return all_reduce(partial, "tp", src=P, dst=I)  # OK
    else:
        output = partial
    reveal_type(output)  # N: SpmdTensor[Literal['tp:P']]
    return output  # OK: only reached with one rank on tp


def scatter(x: Annotated[Tensor, I["tp"], R["dp"]]) -> Annotated[Tensor, S["tp", -1], R["dp"]]:
    if axis_size("tp") == 1:
        y = x * 2  # OK
        return y + torch.relu(x)  # OK: on one rank I and S(-1) are the same
    return convert(x, "tp", src=I, dst=S(-1))  # OK


def only_that_axis(x: Annotated[Tensor, V["tp"], V["dp"]]) -> Annotated[Tensor, R["tp"], R["dp"]]:
    if axis_size("tp") == 1:
        return x  # E: [return-value]
    if axis_size("dp") <= 1:
        return all_gather(x, "tp", src=V, dst=R)  # OK
    return x  # E: [return-value]


def unguarded(x: Annotated[Tensor, V["tp"]], n: int) -> Annotated[Tensor, R["tp"]]:
    if n == 1:
        return x  # E: [return-value]
    return all_gather(x, "tp", src=V, dst=R)  # OK


# Where the branches meet, a branch that runs only with one rank on tp does not constrain the type on tp:
# Megatron's VocabParallelEmbedding masks the ids only with more than one rank.


def masked_lookup(input_: Annotated[Tensor, R["tp"]], weight: Annotated[Tensor, S["tp", 0]],
                  group: Annotated[ProcessGroup, Axis["tp"]], rows: int) -> Annotated[Tensor, P["tp"]]:
    vocab_start_index = convert(torch.arange(group.size()) * rows, "tp", src=R, dst=V)
    if group.size() > 1:
        input_mask = (input_ < vocab_start_index) | (input_ >= vocab_start_index + rows)
        masked_input = input_.clone() - vocab_start_index
        masked_input[input_mask] = 0
    else:
        masked_input = input_  # R, taken as V: the same on one rank
    output_parallel = F.embedding(masked_input, weight)  # OK
    reveal_type(output_parallel)  # N@recommended: SpmdTensor[Literal['tp:V']]
    if group.size() > 1:
        output_parallel[input_mask, :] = 0.0
    return reinterpret(output_parallel, "tp", src=V, dst=P)  # OK


def masked_unless_two(input_: Annotated[Tensor, R["tp"]], start: Annotated[Tensor, V["tp"]],
                      weight: Annotated[Tensor, S["tp", 0]]) -> None:
    if axis_size("tp") > 2:  # the else branch may run on two ranks
        masked_input = input_ - start
    else:
        masked_input = input_
    F.embedding(masked_input, weight)  # E@recommended: [spmd-branch] "masked_input": has SPMD type tp:R or tp:V


def masked_unless_flag(input_: Annotated[Tensor, R["tp"]], start: Annotated[Tensor, V["tp"]], masked: bool) -> None:
    if masked:  # not a test of the axis's size
        masked_input = input_ - start
    else:
        masked_input = input_
    all_reduce(masked_input, "tp", src=V, dst=I)  # E@recommended: [spmd-branch] "masked_input": has SPMD type tp:R or tp:V


def guarded_on_tp_only(x: Annotated[Tensor, R["tp"], V["dp"]], y: Annotated[Tensor, V["tp"], R["dp"]]) -> None:
    if axis_size("tp") == 1:
        z = x  # dp still differs from the other branch
    else:
        z = y  # E@no-redefinition: [assignment]
    torch.relu(z)  # E@recommended: [spmd-branch] "z": has SPMD type


# -- Polymorphic modules: written once, checked once per listed type, the restriction checked at each use.

Replicated = Spmd[Tensor, Literal["tp:R"]]
Varying = Spmd[Tensor, Literal["tp:V"]]
Unreduced = TypeVar("Unreduced", Replicated, Whole, Varying)


class LayerNorm(nn.Module):
    def forward(self, x: Unreduced) -> Unreduced:
        return F.layer_norm(x, (8,))  # OK: checked as R, as I and as V; no cast


class Dropout(nn.Module):
    def forward(self, x: Unreduced) -> Unreduced:
        return F.dropout(x, 0.1)  # OK


def residual(x: Unreduced, y: Unreduced) -> Unreduced:
    return x + y  # OK: both the same listed type


def block(h: Annotated[Tensor, S["tp", 0], R["dp"]], p: Annotated[Tensor, P["tp"]], u: Annotated[Tensor, R["dp"]]) -> None:
    reveal_type(LayerNorm()(h))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(Dropout()(u))  # N: SpmdTensor[Literal['dp:R']]
    LayerNorm()(p)  # E: [spmd-boundary] argument "x" of "LayerNorm.forward" on axis 'tp': expected one of R, I, V, got P


class DeclaredColumn(nn.Module, Generic[ColOut]):
    """Parameters declared in the class body: their analysis reads no flag too early."""

    weight: Annotated[nn.Parameter, S["tp", 0]]

    @overload
    def __init__(self: "DeclaredColumn[Whole]", *, gather_output: Literal[True]) -> None: ...
    @overload
    def __init__(self: "DeclaredColumn[Sharded]", *, gather_output: Literal[False]) -> None: ...
    def __init__(self, *, gather_output: bool) -> None:
        super().__init__()
        self.gather_output = gather_output
        self.weight = nn.Parameter(torch.empty(4, 4))

    def forward(self, x: Annotated[Tensor, R["tp"]]) -> ColOut:
        out = F.linear(x, self.weight)
        if self.gather_output:
            return all_gather(out, "tp", src=S(-1), dst=I)  # OK
        return out  # OK
