"""BUG: the pipeline's last stage returns its logits gathered over the vocabulary (correct:
``examples/pipeline_stage.py``).

Only the last stage (and the unsplit model) has the output layer, and its
logits must stay sharded over the vocabulary for the vocabulary-parallel
loss.  This stage's ``forward`` calls the output layer with Megatron's
``runtime_gather_output=True`` (as a generation path does, to sample from
the whole vocabulary): every rank then returns the whole logits, and the
loss counts each entry ``tp`` times in its normalizer; the gradients of the
output layer and of every block before it are wrong too.  The plugin checks
``forward`` once per role: in the roles without an output layer the branch
does not run, and in the two with one the gathered ``I`` logits are
returned where the role's output type is the sharded ``S(-1)``.  Run it to
see the wrong loss and gradients::

    python -m examples.bugs.pipeline_last_stage_gathered_logits
"""

from __future__ import annotations

from dataclasses import replace

from examples import megatron_layers as ml
from examples import pipeline_stage as ps


class StageGatheringLogits(ps.Transformer[ps.StageIn, ps.StageOut]):
    def forward(self, tokens: ps.StageIn) -> ps.StageOut:
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            h = layer(h)
        h = self.norm(h) if self.norm is not None else h
        return self.output(h, runtime_gather_output=True) if self.output is not None else h  # E: [spmd-boundary] return value on axis 'tp': expected S(-1), got I


class PipelineGatheringLogits(ps.PipelinedTransformer):
    def __init__(self, dim: int, ffn: int, vocab: int) -> None:
        super().__init__(dim, ffn, vocab)
        blocks = ps.Blocks({"2": ps.TransformerBlock(dim, ffn)})
        self.last = StageGatheringLogits(None, blocks, ps.RMSNorm(dim), ml.ColumnParallelLinear(dim, vocab))


EXAMPLE = replace(ps.EXAMPLE, module=PipelineGatheringLogits)
# what the simulated run gets wrong: the loss, and every gradient of the stages (the unsplit model is right)
WRONG = ("output", "grad first.tok_embeddings.weight", "grad last.norm.weight", "grad last.output.weight",
         "grad last.output.bias", *(
             f"grad {stage}.layers.{name}.{parameter}"
             for stage, name in (("first", 0), ("middle", 1), ("last", 2))
             for parameter in ("ffn_norm.weight", "w1.weight", "w1.bias", "w2.weight", "w2.bias")
         ))

if __name__ == "__main__":
    print(EXAMPLE.run())
