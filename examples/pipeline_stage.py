"""A torchtitan-style pipeline stage: the model with the parts other stages hold removed, and its types by role.

torchtitan (``torchtitan/models/common/decoder.py``, 0.3.0) splits a model
into pipeline stages by deleting what a stage does not run: the token
embedding on every stage but the first, the final norm and the output layer
on every stage but the last, the other stages' blocks from the ``layers``
``ModuleDict``.  ``forward`` passes its input through where a part is gone::

    h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
    for layer in self.layers.values():
        h = layer(h)
    h = self.norm(h) if self.norm is not None else h
    output = self.output(h) if self.output is not None else h

so the stage's boundary types depend on its role, here with tensor
parallelism inside each stage (``tp``):

==============  =====================  ============================
role            input                  output
==============  =====================  ============================
first           token ids ``R``        hidden ``I``
middle          hidden ``I``           hidden ``I``
last            hidden ``I``           logits ``S(-1)`` (vocabulary)
whole model     token ids ``R``        logits ``S(-1)``
==============  =====================  ============================

``Transformer`` is generic in its input and output types, with one
constructor overload per role saying which parts that role has (``None``
for the parts it lacks): a flag contract (docs/adopting.md, "Contracts that
depend on a flag") whose flags are the optional submodules.  mypy checks
``forward`` once per role, with the plugin reading ``self.tok_embeddings``
(and the norm and the output layer) as present or ``None`` in each, so each
conditional expression is checked on the branch that runs in that role.

The blocks are a tensor-parallel MLP with a pre-norm and a residual
(Megatron's layers from ``examples/megatron_layers.py``), activations
``[batch, sequence, dim]`` as torchtitan has them; the first stage embeds
with the vocabulary-parallel embedding, the last ends in a column-parallel
output layer over the vocabulary whose logits go to the vocabulary-parallel
loss.  ``Blocks`` is the ``ModuleDict`` of blocks, typed as such, so that the
loop over ``layers.values()`` keeps the activations' type.

The activations between the stages are whole (``I``), not sequence parallel
(``S(0)``): a flag contract chooses between types that mypy tells apart, and
the plugin writes every shard as ``V`` to mypy (the dimension is its own), so
a type variable restricted to ``S(0)`` and ``S(-1)`` has one value to mypy
and the roles would not be told apart (docs/adopting.md says so).

``PipelinedTransformer`` runs one microbatch through the three stages one
after the other, as a schedule would (the stages' send and receive carry the
activations unchanged), and the unsplit model beside them; both
losses are checked on 4 simulated ranks against one device::

    python -m examples.pipeline_stage
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, ValuesView
from typing import Annotated, Generic, Literal, TypeVar, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples import megatron_layers as ml
from examples.comparison import ModuleExample
from examples.vocab_parallel_cross_entropy import vocab_parallel_cross_entropy
from spmd_types import I, R, Spmd

TokenIds = Spmd[Tensor, Literal["tp:R"]]  # [batch, sequence], the same on every rank
Hidden = ml.Whole  # [batch, sequence, dim], the same on every rank
Logits = ml.Sharded  # [batch, sequence, vocab / tp]: each rank its slice of the vocabulary

StageIn = TypeVar("StageIn", TokenIds, Hidden)  # first stage / the others
StageOut = TypeVar("StageOut", Hidden, Logits)  # last stage / the others

Embedding = ml.VocabParallelEmbedding[Hidden]
OutputLayer = ml.ColumnParallelLinear[Hidden, Logits]


class RMSNorm(nn.Module):
    """RMSNorm of whole activations, with a weight that is the same on every rank."""

    weight: Annotated[nn.Parameter, I["tp"]]  # [dim]

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim))

    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return F.rms_norm(x, self.weight.shape, self.weight, eps=1e-6)


class TransformerBlock(nn.Module):
    """``x + w2(silu(w1(norm(x))))`` with column- and row-parallel layers."""

    def __init__(self, dim: int, ffn: int) -> None:
        super().__init__()
        self.ffn_norm = RMSNorm(dim)
        self.w1 = ml.ColumnParallelLinear(dim, ffn)
        self.w2 = ml.RowParallelLinear(ffn, dim, input_is_parallel=True)

    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return x + self.w2(F.silu(self.w1(self.ffn_norm(x))))


class Blocks(nn.ModuleDict):
    """torchtitan's ``layers``: blocks by name (a stage keeps the names its blocks have in the whole model)."""

    def values(self) -> ValuesView[TransformerBlock]:
        blocks = {}
        for name, block in self.items():
            if not isinstance(block, TransformerBlock):
                raise TypeError(f"layers[{name!r}] is a {type(block).__name__}, not a TransformerBlock")
            blocks[name] = block
        return blocks.values()


class Transformer(nn.Module, Generic[StageIn, StageOut]):
    """The model, or one pipeline stage of it: the parts this stage does not run are ``None``."""

    @overload
    def __init__(self: Transformer[TokenIds, Logits], tok_embeddings: Embedding, layers: Blocks,
                 norm: RMSNorm, output: OutputLayer) -> None: ...
    @overload
    def __init__(self: Transformer[TokenIds, Hidden], tok_embeddings: Embedding, layers: Blocks,
                 norm: None, output: None) -> None: ...
    @overload
    def __init__(self: Transformer[Hidden, Hidden], tok_embeddings: None, layers: Blocks,
                 norm: None, output: None) -> None: ...
    @overload
    def __init__(self: Transformer[Hidden, Logits], tok_embeddings: None, layers: Blocks,
                 norm: RMSNorm, output: OutputLayer) -> None: ...
    def __init__(self, tok_embeddings: Embedding | None, layers: Blocks,
                 norm: RMSNorm | None, output: OutputLayer | None) -> None:
        super().__init__()
        self.tok_embeddings = tok_embeddings
        self.layers = layers
        self.norm = norm
        self.output = output

    def forward(self, tokens: StageIn) -> StageOut:
        # passthrough for the parts another stage holds
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            h = layer(h)
        h = self.norm(h) if self.norm is not None else h
        output = self.output(h) if self.output is not None else h
        return output


class PipelinedTransformer(nn.Module):
    """Three stages of a three-block model run one after the other, and the unsplit model beside them."""

    def __init__(self, dim: int, ffn: int, vocab: int) -> None:
        super().__init__()

        def embedding() -> Embedding:
            return ml.VocabParallelEmbedding(vocab, dim)

        def output_layer() -> OutputLayer:
            return ml.ColumnParallelLinear(dim, vocab)

        def blocks(*names: str) -> Blocks:
            return Blocks({name: TransformerBlock(dim, ffn) for name in names})

        self.first = Transformer(embedding(), blocks("0"), None, None)
        self.middle = Transformer(None, blocks("1"), None, None)
        self.last = Transformer(None, blocks("2"), RMSNorm(dim), output_layer())
        self.unsplit = Transformer(embedding(), blocks("0", "1", "2"), RMSNorm(dim), output_layer())

    def forward(
        self, tokens: Annotated[Tensor, R["tp"]], target: Annotated[Tensor, R["tp"]]
    ) -> Annotated[Tensor, I["tp"]]:
        staged = vocab_parallel_cross_entropy(self.last(self.middle(self.first(tokens))), target)
        return staged + vocab_parallel_cross_entropy(self.unsplit(tokens), target)


def reference(params: Mapping[str, Tensor], tokens: Tensor, target: Tensor) -> Tensor:
    """Both models on one device, from the full tables, weights and biases, with plain cross entropy."""
    staged = stage(params, "last", stage(params, "middle", stage(params, "first", tokens)))
    return ml.token_losses(staged, target) + ml.token_losses(stage(params, "unsplit", tokens), target)


def stage(params: Mapping[str, Tensor], prefix: str, h: Tensor) -> Tensor:
    """Stage ``prefix`` on one device: the parts it has, as ``forward`` runs them."""
    if f"{prefix}.tok_embeddings.weight" in params:
        h = F.embedding(h, params[f"{prefix}.tok_embeddings.weight"])
    names = sorted({key.split(".")[2] for key in params if key.startswith(f"{prefix}.layers.")})
    for name in names:
        block = f"{prefix}.layers.{name}"
        normed = rms_norm(params, f"{block}.ffn_norm", h)
        h = h + ml.linear(params, f"{block}.w2", F.silu(ml.linear(params, f"{block}.w1", normed)))
    if f"{prefix}.norm.weight" in params:
        h = ml.linear(params, f"{prefix}.output", rms_norm(params, f"{prefix}.norm", h))
    return h


def rms_norm(params: Mapping[str, Tensor], name: str, x: Tensor) -> Tensor:
    weight = params[f"{name}.weight"]
    return F.rms_norm(x, weight.shape, weight, eps=1e-6)


EXAMPLE = ModuleExample(
    module=PipelinedTransformer,
    options={"dim": 8, "ffn": 16, "vocab": 32},
    mesh={"tp": 4},
    inputs=lambda generator: (
        torch.randint(0, 32, (2, 8), generator=generator),  # token ids [batch, sequence]
        torch.randint(0, 32, (2, 8), generator=generator),  # targets [batch, sequence]
    ),
    reference=reference,
)

if __name__ == "__main__":
    sys.exit(EXAMPLE.main())
