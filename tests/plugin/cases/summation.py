"""A replicated term added to per-rank values before a reduction sums them: counted once per rank (issue 9, item 4)."""
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from spmd_types import I, P, R, S, V, all_reduce, reduce_scatter, reinterpret


class RowParallel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight: Annotated[nn.Parameter, V["tp"]] = nn.Parameter(torch.empty(4, 4))
        self.bias: Annotated[nn.Parameter, R["tp"]] = nn.Parameter(torch.empty(4))

    def added_then_summed(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return all_reduce(F.linear(x, self.weight) + self.bias, "tp", src=V, dst=I)  # E: [spmd-partial] all_reduce on axis 'tp': self.bias (R) is added to per-rank values before all_reduce sums them over the axis, so it is counted once per rank; add it after the reduction

    def bias_inside_the_linear(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, I["tp"]]:
        out = F.linear(x, self.weight, self.bias)
        return all_reduce(out, "tp", src=V, dst=I)  # E: [spmd-partial] self.bias (R) is added to per-rank values

    def sequence_parallel(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, S["tp", 0]]:
        out = F.linear(x, self.weight)
        out = out + self.bias
        return reduce_scatter(out, "tp", src=V, dst=S(0))  # E: [spmd-partial] reduce_scatter on axis 'tp': self.bias (R)

    def declared_partial(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, P["tp"]]:
        return reinterpret(x @ self.weight + self.bias, "tp", src=V, dst=P)  # E: [spmd-partial] before reinterpret declares them the summands of a pending sum

    def bias_after_the_reduction(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
        out = all_reduce(F.linear(x, self.weight), "tp", src=V, dst=R)
        return out + self.bias  # OK

    def averaged(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return all_reduce(F.linear(x, self.weight) + self.bias, "tp", src=V, dst=I, op="avg")  # OK

    def per_rank_terms_only(self, x: Annotated[Tensor, V["tp"]], y: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
        return all_reduce(x + y - 1.0, "tp", src=V, dst=R)  # OK


def over_a_flattened_group(x: Annotated[Tensor, V["dp"], V["tp"]], b: Annotated[Tensor, V["dp"], R["tp"]]) -> None:
    # Summed over dp and tp at once: b differs over dp (fine there) but is replicated over tp.
    y = all_reduce(x + b, ("dp", "tp"), src=V, dst=R)  # E: [spmd-partial] all_reduce on axis 'tp': b (R) is added to per-rank values
    z = all_reduce(x + b, ("dp",), src=V, dst=R)  # OK
