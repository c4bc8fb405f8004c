"""DeepSpeed's Ulysses all-to-all is typed as all_to_all between the shards its indices name."""
from typing import Annotated

import torch.nn.functional as F
from deepspeed.sequence.layer import _SeqAllToAll
from torch import Tensor
from torch.distributed import ProcessGroup

from spmd_types import S, Axis

# Activations are [batch, sequence/P, heads, head dim]: S(1) on the sequence-parallel axis "sp".


def ulysses(q: Annotated[Tensor, S["sp", 1]], k: Annotated[Tensor, S["sp", 1]], v: Annotated[Tensor, S["sp", 1]],
            g: Annotated[ProcessGroup, Axis["sp"]]) -> Annotated[Tensor, S["sp", 1]]:
    # Sequence shards to head shards (scatter_idx=2, gather_idx=1), attention per head, and back.
    qh, kh, vh = (_SeqAllToAll.apply(g, t, 2, 1, 0) for t in (q, k, v))
    o = F.scaled_dot_product_attention(qh.transpose(1, 2), kh.transpose(1, 2), vh.transpose(1, 2)).transpose(1, 2)
    return _SeqAllToAll.apply(g, o, 1, 2, 0)  # OK


def indices_swapped(q: Annotated[Tensor, S["sp", 1]], g: Annotated[ProcessGroup, Axis["sp"]]) -> None:
    _SeqAllToAll.apply(g, q, 1, 2, 0)  # E: [spmd-collective] _SeqAllToAll.apply (that is, all_to_all(src=S(2), dst=S(1))) on axis 'sp': the input is S(1) but all_to_all was told src=S(2)


def missing_the_way_back(q: Annotated[Tensor, S["sp", 1]],
                         g: Annotated[ProcessGroup, Axis["sp"]]) -> Annotated[Tensor, S["sp", 1]]:
    heads = _SeqAllToAll.apply(g, q, 2, 1, 0)
    return heads * 2  # E: [spmd-boundary] expected S(1), got S(2); fix: all_to_all(heads * 2, "sp", src=S(2), dst=S(1))
