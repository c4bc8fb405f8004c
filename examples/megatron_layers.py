"""Megatron-LM's ColumnParallelLinear, RowParallelLinear and VocabParallelEmbedding, with the flags that change their contracts.

The three layers follow ``megatron/core/tensor_parallel/layers.py`` (megatron-core
0.16.1), activations ``[sequence, batch, hidden]``.  Their SPMD contract on
``tp`` depends on how each instance is built:

=========================  ==================  ==========  ==========
layer                      flags               input       output
=========================  ==================  ==========  ==========
ColumnParallelLinear       (defaults)          I           S(-1)
ColumnParallelLinear       gather_output       I           I
ColumnParallelLinear       sequence_parallel   S(0)        S(-1)
ColumnParallelLinear       both                S(0)        I
RowParallelLinear          input_is_parallel   S(-1)       I
RowParallelLinear          + sequence_parallel S(-1)       S(0)
RowParallelLinear          (input whole)       I           I
VocabParallelEmbedding     (defaults)          R (ids)     I
VocabParallelEmbedding     reduce_scatter_...  R (ids)     S(0)
=========================  ==================  ==========  ==========

(Megatron refuses a whole input with sequence parallelism, so no overload
builds it.)  Each layer is generic in its boundary types, each a type
variable restricted to the types a flag chooses between, and has one
``__init__`` overload per configuration (docs/adopting.md, "Contracts that
depend on a flag").  mypy checks ``forward`` once per combination, with the
plugin reading each flag as the literal of that configuration, so every
branch is checked in the configuration where it runs, and each instance's
calls are typed by the flags it was built with.

The communication, and Megatron's name for it:

* column, no sequence parallelism: ``reinterpret(x, I->R)``, nothing forward,
  the input gradient all-reduced backward (the fused linear's
  ``allreduce_dgrad``);
* column, sequence parallel: ``all_gather(S(0)->R)`` of the tokens forward,
  reduce-scatter of the input gradient backward (inside the fused linear);
* ``gather_output``: ``all_gather(S(-1)->I)``, the features concatenated,
  ``gather_from_tensor_model_parallel_region``;
* row, whole input: ``convert(I->S(-1))``,
  ``scatter_to_tensor_model_parallel_region``;
* row output: ``all_reduce(P->I)`` (``reduce_from_tensor_model_parallel_region``)
  or, sequence parallel, ``reduce_scatter(P->S(0))``
  (``reduce_scatter_to_sequence_parallel_region``);
* the row layer's bias is one tensor on every rank (``I``).  With sequence
  parallelism it is added to the rank's own tokens, so the ranks' parts of
  its gradient must be summed: Megatron marks it ``sequence_parallel`` and
  all-reduces its gradient after backward; here ``reinterpret(bias, I->R)``
  puts that all-reduce into the backward pass;
* embedding: each rank looks up the ids in its slice of the vocabulary and
  zeroes the rows of the others, so the ranks hold summands
  (``reinterpret(V->P)`` says so), then ``all_reduce(P->I)``
  (``reduce_from_tensor_model_parallel_region``) or, with
  ``reduce_scatter_embeddings``, the ``[b, s, h]`` lookup transposed to
  ``[s, b, h]`` and ``reduce_scatter(P->S(0))``.

``ColumnParallelLinear.forward`` also takes Megatron's per-call flag
``runtime_gather_output``, which overrides ``gather_output`` for one call:
``forward`` has one overload per value (``None``: the layer's own flag,
``ColOut``; ``True``: ``I``; ``False``: ``S(-1)``), and the plugin types each
call of the layer by the overload its literal picks.  The implementation is
checked against the union of the overloads' results.

The embedding keeps Megatron's one-rank shortcut: with one rank on ``tp``
it looks the ids up unmasked (``R`` where the masked ids are ``V``), and the
two branches meet as ``V`` because a branch that runs only with one rank
does not constrain the type on that axis (docs/adopting.md, "Axes of size
one").

Left out: ``skip_bias_add`` (the layers return the output alone, not
Megatron's ``(output, bias)`` pair), ``explicit_expert_comm``
(the expert layers' own communication; its contract is checked in
``tests/plugin/cases/flag_contracts.py``), weights passed to ``forward``,
and the fused kernels' buffers and deferred weight gradients.

``MegatronStack`` starts from token ids with both embedding configurations,
chains all seven linear configurations and ends in a GPT output layer
(column parallel over the vocabulary, sequence parallel input) and the
vocabulary-parallel loss of ``examples/vocab_parallel_cross_entropy.py``.
It runs on 4 simulated ranks against the same embeddings, chain of linear
layers and plain cross entropy on one device::

    python -m examples.megatron_layers

Its buggy twins are ``examples/bugs/megatron_*``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Annotated, Generic, Literal, TypeVar, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import spmd_types as spmd
from examples.comparison import ModuleExample
from examples.vocab_parallel_cross_entropy import vocab_parallel_cross_entropy
from spmd_types import I, P, R, S, Spmd, V, all_gather, all_reduce, axis_size, convert, reduce_scatter, reinterpret

Whole = Spmd[Tensor, Literal["tp:I"]]  # the same tensor on every rank
SeqSharded = Spmd[Tensor, Literal["tp:S(0)"]]  # sequence parallel: each rank has its slice of the tokens
Sharded = Spmd[Tensor, Literal["tp:S(-1)"]]  # each rank has its slice of the features

ColIn = TypeVar("ColIn", Whole, SeqSharded)  # sequence_parallel False / True
ColOut = TypeVar("ColOut", Sharded, Whole)  # gather_output False / True
RowIn = TypeVar("RowIn", Sharded, Whole)  # input_is_parallel True / False
RowOut = TypeVar("RowOut", Whole, SeqSharded)  # sequence_parallel False / True
EmbOut = TypeVar("EmbOut", Whole, SeqSharded)  # reduce_scatter_embeddings False / True


class ColumnParallelLinear(nn.Module, Generic[ColIn, ColOut]):
    """``Y = XA + b`` with ``A``'s output features (and ``b``) split over ``tp``."""

    weight: Annotated[nn.Parameter, S["tp", 0]]  # [output_size / tp, input_size]
    bias: Annotated[nn.Parameter, S["tp", 0]]  # [output_size / tp]

    @overload
    def __init__(self: ColumnParallelLinear[Whole, Sharded], input_size: int, output_size: int, *,
                 gather_output: Literal[False] = ..., sequence_parallel: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: ColumnParallelLinear[Whole, Whole], input_size: int, output_size: int, *,
                 gather_output: Literal[True], sequence_parallel: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: ColumnParallelLinear[SeqSharded, Sharded], input_size: int, output_size: int, *,
                 gather_output: Literal[False] = ..., sequence_parallel: Literal[True]) -> None: ...
    @overload
    def __init__(self: ColumnParallelLinear[SeqSharded, Whole], input_size: int, output_size: int, *,
                 gather_output: Literal[True], sequence_parallel: Literal[True]) -> None: ...
    def __init__(self, input_size: int, output_size: int, *,
                 gather_output: bool = False, sequence_parallel: bool = False) -> None:
        super().__init__()
        self.gather_output = gather_output
        self.sequence_parallel = sequence_parallel
        output_size_per_partition = output_size // axis_size("tp")
        self.weight = nn.Parameter(torch.empty(output_size_per_partition, input_size))
        self.bias = nn.Parameter(torch.empty(output_size_per_partition))

    @overload
    def forward(self, input_: ColIn, runtime_gather_output: None = ...) -> ColOut: ...
    @overload
    def forward(self, input_: ColIn, runtime_gather_output: Literal[True]) -> Whole: ...
    @overload
    def forward(self, input_: ColIn, runtime_gather_output: Literal[False]) -> Sharded: ...
    def forward(self, input_: ColIn, runtime_gather_output: bool | None = None) -> Sharded | Whole:
        output_parallel = self._forward_impl(input_)
        gather_output: bool = self.gather_output
        if runtime_gather_output is not None:  # a flag of the call overrides the layer's
            gather_output = runtime_gather_output
        if gather_output:
            output = all_gather(output_parallel, "tp", src=S(-1), dst=I)
        else:
            output = output_parallel
        return output

    def _forward_impl(self, input_: ColIn) -> Sharded:
        """The fused linear (``linear_with_grad_accumulation_and_async_allreduce``) and its communication."""
        if self.sequence_parallel:
            total_input = all_gather(input_, "tp", src=S(0), dst=R, gather_dim=0)
        else:
            total_input = reinterpret(input_, "tp", src=I, dst=R)  # allreduce_dgrad
        return F.linear(total_input, self.weight, self.bias)


class RowParallelLinear(nn.Module, Generic[RowIn, RowOut]):
    """``Y = XA + b`` with ``A``'s input features split over ``tp``; ``b`` whole on every rank."""

    weight: Annotated[nn.Parameter, S["tp", 1]]  # [output_size, input_size / tp]
    bias: Annotated[nn.Parameter, I["tp"]]  # [output_size]

    @overload
    def __init__(self: RowParallelLinear[Sharded, Whole], input_size: int, output_size: int, *,
                 input_is_parallel: Literal[True], sequence_parallel: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: RowParallelLinear[Sharded, SeqSharded], input_size: int, output_size: int, *,
                 input_is_parallel: Literal[True], sequence_parallel: Literal[True]) -> None: ...
    @overload
    def __init__(self: RowParallelLinear[Whole, Whole], input_size: int, output_size: int, *,
                 input_is_parallel: Literal[False], sequence_parallel: Literal[False] = ...) -> None: ...
    def __init__(self, input_size: int, output_size: int, *,
                 input_is_parallel: bool, sequence_parallel: bool = False) -> None:
        super().__init__()
        if sequence_parallel and not input_is_parallel:
            raise RuntimeError("To enable `sequence_parallel`, `input_is_parallel` must be `True`")
        self.input_is_parallel = input_is_parallel
        self.sequence_parallel = sequence_parallel
        self.weight = nn.Parameter(torch.empty(output_size, input_size // axis_size("tp")))
        self.bias = nn.Parameter(torch.empty(output_size))

    def forward(self, input_: RowIn) -> RowOut:
        if self.input_is_parallel:
            input_parallel = input_
        else:
            input_parallel = convert(input_, "tp", src=I, dst=S(-1))
        output_parallel = spmd.linear(input_parallel, self.weight, out_partial_axes="tp")
        if self.sequence_parallel:
            output_ = reduce_scatter(output_parallel, "tp", src=P, dst=S(0), scatter_dim=0)
            return output_ + reinterpret(self.bias, "tp", src=I, dst=R)
        return all_reduce(output_parallel, "tp", src=P, dst=I) + self.bias


class VocabParallelEmbedding(nn.Module, Generic[EmbOut]):
    """``embedding(ids)`` with the table's rows (the vocabulary) split over ``tp``; ids ``[batch, sequence]``."""

    weight: Annotated[nn.Parameter, S["tp", 0]]  # [num_embeddings / tp, embedding_dim]

    @overload
    def __init__(self: VocabParallelEmbedding[Whole], num_embeddings: int, embedding_dim: int, *,
                 reduce_scatter_embeddings: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: VocabParallelEmbedding[SeqSharded], num_embeddings: int, embedding_dim: int, *,
                 reduce_scatter_embeddings: Literal[True]) -> None: ...
    def __init__(self, num_embeddings: int, embedding_dim: int, *, reduce_scatter_embeddings: bool = False) -> None:
        super().__init__()
        self.reduce_scatter_embeddings = reduce_scatter_embeddings
        self.num_embeddings_per_partition = num_embeddings // axis_size("tp")
        self.weight = nn.Parameter(torch.empty(self.num_embeddings_per_partition, embedding_dim))

    def masked_lookup(self, input_: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, P["tp"]]:
        """This rank's rows' embeddings of ``input_``, zero where another rank owns the id: ``[b, s, h]`` summands."""
        first = torch.arange(axis_size("tp")) * self.num_embeddings_per_partition
        vocab_start_index = convert(first, "tp", src=R, dst=V)  # Megatron's vocab_range_from_global_vocab_size
        vocab_end_index = vocab_start_index + self.num_embeddings_per_partition
        if axis_size("tp") > 1:
            input_mask = (input_ < vocab_start_index) | (input_ >= vocab_end_index)
            masked_input = input_.clone() - vocab_start_index
            masked_input[input_mask] = 0
        else:
            masked_input = input_  # one rank owns every id (R, taken as the other branch's V: one rank)
        output_parallel = F.embedding(masked_input, self.weight)
        if axis_size("tp") > 1:
            output_parallel[input_mask, :] = 0.0  # pyright: ignore[reportPossiblyUnboundVariable]  # set when tp > 1
        # Each id is found on exactly one rank, so the ranks' lookups sum to the embedding.
        return reinterpret(output_parallel, "tp", src=V, dst=P)

    def forward(self, input_: Annotated[Tensor, R["tp"]]) -> EmbOut:
        output_parallel = self.masked_lookup(input_)
        if self.reduce_scatter_embeddings:
            output_parallel = output_parallel.transpose(0, 1).contiguous()  # [b, s, h] -> [s, b, h]
            output = reduce_scatter(output_parallel, "tp", src=P, dst=S(0), scatter_dim=0)
        else:
            output = all_reduce(output_parallel, "tp", src=P, dst=I)
        return output


class MegatronStack(nn.Module):
    """Every configuration of the three layers, chained from token ids to a GPT output layer and its loss.

    Two embedding tables are looked up: one reduce-scattered straight to the
    sequence-parallel layout, one all-reduced, then transposed and scattered
    to it as Megatron's ``LanguageModelEmbedding`` does without
    ``reduce_scatter_embeddings``; their sum starts the chain.  The middle is
    tensor parallel with whole activations between the blocks; the end is
    sequence parallel again, and the output layer's logits stay sharded over
    the vocabulary for the vocabulary-parallel loss.
    """

    def __init__(self, hidden: int, ffn: int, vocab: int) -> None:
        super().__init__()
        self.sp_embedding = VocabParallelEmbedding(vocab, hidden, reduce_scatter_embeddings=True)
        self.embedding = VocabParallelEmbedding(vocab, hidden)
        self.sp_gathered = ColumnParallelLinear(hidden, hidden, gather_output=True, sequence_parallel=True)
        self.gathered = ColumnParallelLinear(hidden, hidden, gather_output=True)
        self.scattered = RowParallelLinear(hidden, hidden, input_is_parallel=False)
        self.fc1 = ColumnParallelLinear(hidden, ffn)
        self.fc2 = RowParallelLinear(ffn, hidden, input_is_parallel=True)
        self.sp_fc1 = ColumnParallelLinear(hidden, ffn, sequence_parallel=True)
        self.sp_fc2 = RowParallelLinear(ffn, hidden, input_is_parallel=True, sequence_parallel=True)
        self.output_layer = ColumnParallelLinear(hidden, vocab, sequence_parallel=True)

    def forward(
        self, input_ids: Annotated[Tensor, R["tp"]], target: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, I["tp"]]:
        embedded = self.embedding(input_ids).transpose(0, 1).contiguous()  # [b, s, h] -> [s, b, h]
        x = self.sp_embedding(input_ids) + convert(embedded, "tp", src=I, dst=S(0))
        h = self.scattered(self.gathered(self.sp_gathered(x)))
        h = self.fc2(F.gelu(self.fc1(h)))
        tokens = convert(h, "tp", src=I, dst=S(0))  # Megatron's scatter_to_sequence_parallel_region
        tokens = self.sp_fc2(F.gelu(self.sp_fc1(tokens)))
        return vocab_parallel_cross_entropy(self.output_layer(tokens), target)


def reference(params: Mapping[str, Tensor], input_ids: Tensor, target: Tensor) -> Tensor:
    """The same chain on one device, with the full tables, weights and biases, and plain cross entropy."""
    x = embedding(params, "sp_embedding", input_ids) + embedding(params, "embedding", input_ids)
    h = linear(params, "scattered", linear(params, "gathered", linear(params, "sp_gathered", x)))
    h = linear(params, "fc2", F.gelu(linear(params, "fc1", h)))
    h = linear(params, "sp_fc2", F.gelu(linear(params, "sp_fc1", h)))
    return token_losses(linear(params, "output_layer", h), target)


def embedding(params: Mapping[str, Tensor], name: str, input_ids: Tensor) -> Tensor:
    """Table ``name``'s embeddings of ``input_ids`` ``[b, s]`` on one device, as ``[s, b, h]``."""
    return F.embedding(input_ids, params[f"{name}.weight"]).transpose(0, 1)


def linear(params: Mapping[str, Tensor], name: str, x: Tensor) -> Tensor:
    """Layer ``name`` on one device, from its full weight and bias."""
    return F.linear(x, params[f"{name}.weight"], params[f"{name}.bias"])


def token_losses(logits: Tensor, target: Tensor) -> Tensor:
    """Cross entropy of every token on one device, shaped like ``target``."""
    return F.cross_entropy(logits.flatten(0, -2), target.flatten(), reduction="none").view(target.shape)


EXAMPLE = ModuleExample(
    module=MegatronStack,
    options={"hidden": 8, "ffn": 16, "vocab": 32},
    mesh={"tp": 4},
    inputs=lambda generator: (
        torch.randint(0, 32, (2, 8), generator=generator),  # token ids [batch, sequence]
        torch.randint(0, 32, (8, 2), generator=generator),  # targets [sequence, batch]
    ),
    reference=reference,
)

if __name__ == "__main__":
    sys.exit(EXAMPLE.main())
