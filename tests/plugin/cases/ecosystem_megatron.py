"""Megatron's mapping functions are typed as the collectives and casts they are (spmd_types.typesystem.ecosystem)."""
from typing import Annotated, Optional

import torch.nn.functional as F
from megatron.core import parallel_state
from megatron.core.tensor_parallel import (
    copy_to_tensor_model_parallel_region,
    gather_from_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
    scatter_to_tensor_model_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    all_gather_last_dim_from_tensor_parallel_region,
    all_to_all,
    all_to_all_hp2sp,
    all_to_all_sp2hp,
    gather_from_sequence_parallel_region,
    reduce_scatter_last_dim_to_tensor_parallel_region,
    reduce_scatter_to_sequence_parallel_region,
    scatter_to_sequence_parallel_region,
)
from torch import Tensor
from torch.distributed import ProcessGroup

from spmd_types import I, P, R, S, V, Axis


def each_mapping(i: Annotated[Tensor, I["tp"], R["dp"]], p: Annotated[Tensor, P["tp"]],
                 s0: Annotated[Tensor, S["tp", 0]], s1: Annotated[Tensor, S["tp", -1]]) -> None:
    reveal_type(copy_to_tensor_model_parallel_region(i))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:R']]
    reveal_type(reduce_from_tensor_model_parallel_region(p))  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(scatter_to_tensor_model_parallel_region(i))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(gather_from_tensor_model_parallel_region(s1))  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(scatter_to_sequence_parallel_region(i))  # N: SpmdTensor[Literal['dp:R'] | Literal['tp:V']]
    reveal_type(gather_from_sequence_parallel_region(s0))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(gather_from_sequence_parallel_region(s0, tensor_parallel_output_grad=False))  # N: SpmdTensor[Literal['tp:I']]
    reveal_type(gather_from_sequence_parallel_region(s0, True))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(reduce_scatter_to_sequence_parallel_region(p))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(all_gather_last_dim_from_tensor_parallel_region(s1))  # N: SpmdTensor[Literal['tp:R']]
    reveal_type(reduce_scatter_last_dim_to_tensor_parallel_region(p))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(all_to_all_sp2hp(s0))  # N: SpmdTensor[Literal['tp:V']]
    reveal_type(all_to_all_hp2sp(s1))  # N: SpmdTensor[Literal['tp:V']]


def column_then_row_parallel(x: Annotated[Tensor, I["tp"]], w1: Annotated[Tensor, S["tp", 0]],
                             w2: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, I["tp"]]:
    h = copy_to_tensor_model_parallel_region(x)
    y = F.linear(F.gelu(F.linear(h, w1)), w2)
    return reduce_from_tensor_model_parallel_region(y)  # OK


def missing_copy_to(x: Annotated[Tensor, I["tp"]], w1: Annotated[Tensor, S["tp", 0]]) -> Tensor:
    return F.linear(x, w1)  # E: [spmd-mix] I does not mix with S(0)


def doubled_reduction(x: Annotated[Tensor, I["tp"]], w1: Annotated[Tensor, S["tp", 0]],
                      w2: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, I["tp"]]:
    y = F.linear(F.gelu(F.linear(copy_to_tensor_model_parallel_region(x), w1)), w2)
    once = reduce_from_tensor_model_parallel_region(y)
    return reduce_from_tensor_model_parallel_region(once)  # E: [spmd-collective] reduce_from_tensor_model_parallel_region (that is, all_reduce(src=P, dst=I)) on axis 'tp': the input is I but all_reduce was told src=P; summing I data over the axis multiplies it by the axis size


def missing_reduction(x: Annotated[Tensor, I["tp"]], w1: Annotated[Tensor, S["tp", 0]],
                      w2: Annotated[Tensor, S["tp", 1]]) -> Annotated[Tensor, I["tp"]]:
    y = F.linear(F.gelu(F.linear(copy_to_tensor_model_parallel_region(x), w1)), w2)
    return y + 0  # E: [spmd-boundary] expected I, got V


def gathered_twice(s: Annotated[Tensor, S["tp", 0]]) -> None:
    full = gather_from_sequence_parallel_region(s)
    again = gather_from_sequence_parallel_region(full)  # E: [spmd-collective] gather_from_sequence_parallel_region (that is, all_gather(src=S(0), dst=R)) on axis 'tp': the input is R but all_gather was told src=S(0)


def groups(p: Annotated[Tensor, P["cp"], P["tp"]], tp_group: Annotated[ProcessGroup, Axis["tp"]],
           untyped_group: ProcessGroup, flag: bool) -> None:
    # The group's axis, from its annotation or from the getter that returned it.
    reveal_type(reduce_from_tensor_model_parallel_region(p, group=tp_group))  # N: SpmdTensor[Literal['cp:P'] | Literal['tp:I']]
    cp_group = parallel_state.get_context_parallel_group()
    reveal_type(cp_group)  # N: AxisGroup[Literal['cp']]
    reveal_type(reduce_from_tensor_model_parallel_region(p, group=cp_group))  # N: SpmdTensor[Literal['cp:I'] | Literal['tp:P']]
    reveal_type(reduce_from_tensor_model_parallel_region(p, None))  # N: SpmdTensor[Literal['cp:P'] | Literal['tp:I']]
    # A group of an axis nobody wrote down, or a flag known only at run time: the result is unknown.
    reveal_type(reduce_from_tensor_model_parallel_region(p, group=untyped_group))  # N: SpmdTensor[Any]
    reveal_type(gather_from_sequence_parallel_region(p, tensor_parallel_output_grad=flag))  # N: SpmdTensor[Literal['cp:P']]


def optional_group(p: Annotated[Tensor, P["tp"]],
                   tp_group: Optional[Annotated[ProcessGroup, Axis["tp"]]] = None) -> Annotated[Tensor, I["tp"]]:
    # Megatron's default: the group is looked up when not given; it keeps its axis either way.
    if tp_group is None:
        tp_group = parallel_state.get_tensor_model_parallel_group()
    reveal_type(tp_group)  # N: AxisGroup[Literal['tp']]
    return reduce_from_tensor_model_parallel_region(p, group=tp_group)  # OK


def expert_exchange(tokens: Annotated[Tensor, V["ep"]], ep_group: Annotated[ProcessGroup, Axis["ep"]],
                    r: Annotated[Tensor, R["ep"]]) -> None:
    reveal_type(all_to_all(ep_group, tokens))  # N: SpmdTensor[Literal['ep:V']]
    same = all_to_all(ep_group, r)  # E: [spmd-collective] all_to_all (that is, all_to_all(src=S(0), dst=S(0))) on axis 'ep': the input is R but all_to_all was told src=S(0)


def raw_in_place_all_reduce(p: Annotated[Tensor, P["tp"]], r: Annotated[Tensor, R["tp"]], v: Annotated[Tensor, V["dp"]],
                            tp_group: Annotated[ProcessGroup, Axis["tp"]], group: ProcessGroup) -> None:
    import torch.distributed as dist

    dist.all_reduce(p, group=tp_group)  # E: [spmd-inplace] torch.distributed.all_reduce on axis 'tp': the tensor is P and is overwritten in place with its all-reduce, outside autograd: it keeps its SPMD type though its data changed, and no gradient flows back through the communication; fix: p = all_reduce(p, "tp", src=P, dst=R) (all-reduce forward, all-reduce in backward)
    dist.all_reduce(r, group=tp_group)  # E: [spmd-inplace] the tensor is R and is overwritten in place with its all-reduce, outside autograd: it keeps its SPMD type though its data changed, and no gradient flows back through the communication; summing R data over the axis also multiplies it by the axis size
    dist.all_reduce(v, group=tp_group)  # OK: v has no type on tp
    dist.all_reduce(p, group=group)  # OK: a group of an axis nobody wrote down
    dist.all_reduce(p)  # OK: the default group spans every axis


class HoldsAGroup:
    """A group attribute first set from a getter (its axis inferred) and later re-set to a plain group."""

    def __init__(self, given: Optional[ProcessGroup], tp_group: Annotated[ProcessGroup, Axis["tp"]]) -> None:
        self.tp_group = parallel_state.get_tensor_model_parallel_group()
        reveal_type(self.tp_group)  # N: AxisGroup[Literal['tp']]
        if given is not None:
            self.tp_group = given  # OK: a group of an axis nobody wrote down, like a plain tensor
        self.tp_group = tp_group  # OK
        self.tp_group = parallel_state.get_context_parallel_group()  # E: [assignment] Incompatible types in assignment (expression has type "AxisGroup[Literal['cp']]", variable has type "AxisGroup[Literal['tp']]")
        declared: Annotated[ProcessGroup, Axis["tp"]] = parallel_state.get_context_parallel_group()  # E: [assignment] Incompatible types in assignment (expression has type "AxisGroup[Literal['cp']]", variable has type "AxisGroup[Literal['tp']]")
        declared = given  # E: [assignment] Incompatible types in assignment (expression has type "ProcessGroup | None", variable has type "AxisGroup[Literal['tp']]")
