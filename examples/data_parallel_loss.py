"""A data-parallel training step: gradient accumulation and a loss averaged over the global token count.

Every ``dp`` rank holds the whole model and trains on its own part of each
micro-batch (``S["dp", 0]``).  The step minimizes the mean loss over every
real (non-padding) target of the *global* batch: all micro-batches, all
ranks.  Ranks and micro-batches hold different numbers of real targets, so
averaging per micro-batch or per rank would weight tokens unequally; the
global count is summed over ``dp`` once, before the first micro-batch.

Each rank's summed token loss is its term of the global loss: a partial
value, ``reinterpret(loss, "dp", src=V, dst=P)``.  ``backward()`` needs a loss
whose gradient is the same on every rank (``P`` or ``I``), and a ``P`` loss
is exactly that: each rank seeds its own term with 1.  The parameters are
``R`` on ``dp``, so their gradients are partial too; they accumulate over the
micro-batches and are summed over ``dp`` once at the end (what DDP does after
accumulating under ``no_sync``)::

    count = all_reduce(my real targets)                      once, before the micro-batches
    for each micro-batch:  (my summed loss, as P) / count  --> backward, grads accumulate as P
    all_reduce(grads)                                        once, after the micro-batches

All-reducing the loss first, as one does for logging, and calling backward on
that replicated value is the mistake the types catch: every rank would seed
the whole loss and the gradients come out ``dp`` times too large (see
``examples/bugs/dp_backward_from_replicated_loss.py``).

Run it on 4 simulated ranks and compare with one device::

    python -m examples.data_parallel_loss
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from examples.comparison import Comparison, collector, double_precision, load_random_parameters
from examples.simulation import simulated_mesh
from spmd_types import P, R, S, Spmd, V, all_reduce, reinterpret
from spmd_types.typesystem import SpmdType

IGNORE = -100  # the target of a padding position
Batch = Spmd[Tensor, Literal["dp:S(0)"]]  # the alias spelling that keeps the SPMD type


class TokenClassifier(nn.Module):
    """A tiny language-model head: embed each token, score every vocabulary entry."""

    embedding: Annotated[nn.Parameter, R["dp"]]  # [vocab, dim]
    output: Annotated[nn.Parameter, R["dp"]]  # [vocab, dim]

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embedding = nn.Parameter(torch.empty(vocab, dim))
        self.output = nn.Parameter(torch.empty(vocab, dim))

    def forward(self, tokens: Batch) -> Batch:
        return F.linear(F.embedding(tokens, self.embedding), self.output)


def train_step(model: TokenClassifier, micro_batches: Sequence[tuple[Batch, Batch]]) -> Annotated[Tensor, R["dp"]]:
    """Accumulate the gradient of the global mean token loss; return that loss (for logging)."""
    count = all_reduce(torch.stack([(y != IGNORE).sum() for _, y in micro_batches]).sum(), "dp", src=V, dst=R)
    logged: Annotated[Tensor, P["dp"]] = torch.zeros(())
    for tokens, targets in micro_batches:
        summed = F.cross_entropy(model(tokens), targets, ignore_index=IGNORE, reduction="sum")
        loss = reinterpret(summed, "dp", src=V, dst=P) / count
        loss.backward()
        logged = logged + loss.detach()
    synchronize_gradients(model)
    return all_reduce(logged, "dp", dst=R)


def synchronize_gradients(model: nn.Module) -> None:
    """Sum every parameter's accumulated (partial) gradient over ``dp``."""
    for p in model.parameters():
        if p.grad is not None:
            p.grad = all_reduce(p.grad, "dp", dst=R)


def reference(params: Mapping[str, Tensor], micro_batches: Sequence[tuple[Tensor, Tensor]]) -> Tensor:
    """The same loss on one device: the mean over every real target of the global batch."""
    tokens = torch.cat([x for x, _ in micro_batches])
    targets = torch.cat([y for _, y in micro_batches])
    logits = F.linear(F.embedding(tokens, params["embedding"]), params["output"])
    return F.cross_entropy(logits, targets, ignore_index=IGNORE)


# -- running it on simulated ranks ------------------------------------------------------

SHARDED = SpmdType({"dp": S(0)})  # the batches' layout
REPLICATED = SpmdType({"dp": R})  # the logged loss, and the gradients once synchronized


@dataclass(frozen=True)
class TrainingExample:
    """``step`` on a simulated ``dp`` mesh: its loss and the model's gradients against :func:`reference`."""

    step: Callable[..., Tensor]  # step(model, micro_batches) -> loss
    dp: int = 4
    vocab: int = 11
    micro_batches: int = 3
    tokens: int = 8  # per micro-batch, over all ranks

    def on_ranks(self, ranks: int) -> TrainingExample:
        """The same example on ``ranks`` data-parallel ranks."""
        return replace(self, dp=ranks)

    def run(self, seed: int = 0) -> Comparison:
        generator = torch.Generator().manual_seed(seed)
        comparison = Comparison(f"{self.step.__name__} on a simulated mesh (dp={self.dp}), against one device:")
        with double_precision(), simulated_mesh(dp=self.dp) as world:
            model = TokenClassifier(self.vocab, dim=5)
            full = load_random_parameters(model, world, generator)
            with world.one_device():
                batches = [self._micro_batch(generator) for _ in range(self.micro_batches)]
                params = {name: value.clone().requires_grad_() for name, value in full.items()}
                want = reference(params, batches)
                want.backward()
            local = [(world.distribute(x, SHARDED, generator), world.distribute(y, SHARDED, generator)) for x, y in batches]
            loss = self.step(model, local)
            with world.one_device():
                comparison.compare("loss", collector(world, loss, REPLICATED), want.detach())
                for name, p in model.named_parameters():
                    comparison.compare(f"grad {name}", collector(world, p.grad, REPLICATED), params[name].grad)
        return comparison

    def _micro_batch(self, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """Random tokens and next-token targets, about a third of them padding."""
        tokens = torch.randint(0, self.vocab, (self.tokens,), generator=generator)
        targets = torch.randint(0, self.vocab, (self.tokens,), generator=generator)
        padding = torch.rand(self.tokens, generator=generator) < 0.35
        return tokens, targets.masked_fill(padding, IGNORE)


EXAMPLE = TrainingExample(train_step)

if __name__ == "__main__":
    print(EXAMPLE.run())
