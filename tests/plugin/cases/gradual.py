"""Gradual code: plain helpers, optional parameters, re-bound parameters, code that runs without autograd."""
from typing import Annotated, Any, Optional, Protocol

import torch
from torch import Tensor, nn

from spmd_types import I, P, R, S, V, all_reduce


def scale(x: torch.Tensor) -> torch.Tensor:
    """A helper nobody annotated."""
    return x * 2


def pair(x: torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    return x, None


def helper_results(x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    y: Annotated[Tensor, R["tp"]] = scale(x)  # OK
    h = scale(y)
    reveal_type(h)  # N: SpmdTensor[Any]
    first, _ = pair(h)
    reveal_type(first)  # N: SpmdTensor[Any]
    return h  # OK


def torch_outside_the_table(x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return torch.linalg.vector_norm(x)  # OK


def known_types_still_checked(v: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    h = scale(v) + v
    return v  # E: [return-value] Incompatible return value type (got "SpmdTensor[Literal['tp:V']]", expected "SpmdTensor[Literal['tp:R']]")


def plain_parameters(x: Tensor, o: Optional[torch.Tensor], w: nn.Parameter) -> Annotated[Tensor, R["tp"]]:
    # A parameter annotated plain Tensor (or nn.Parameter) is unknown, accepted like Any where an SPMD type is declared.
    y: Annotated[Tensor, V["tp"]] = x  # OK
    z: Optional[Annotated[Tensor, R["tp"]]] = o  # OK
    b: Annotated[nn.Parameter, R["tp"]] = w  # OK
    if o is not None:
        return o  # OK
    return x  # OK


def plain_parameters_returned_optional(o: Optional[Tensor]) -> Annotated[Tensor, R["tp"]]:
    return o  # E: [return-value] Incompatible return value type (got "Tensor | None", expected "SpmdTensor[Literal['tp:R']]")


class ColumnParallel(nn.Module):
    def __init__(self, d: int, bias: bool) -> None:
        super().__init__()
        self.bias: Optional[Annotated[nn.Parameter, S["tp", 0]]]
        if bias:
            self.bias = nn.Parameter(torch.empty(d))  # OK
            with torch.no_grad():
                self.bias.zero_()  # OK
        else:
            self.bias = None


def rebound_parameter(x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    # mypy's allow_redefinition lets a parameter take a value of another type.
    x = all_reduce(x, "tp", src=V, dst=R)  # OK@recommended  # E@no-redefinition: [spmd-boundary] value of a declared type on axis 'tp': expected V, got R
    return x  # OK@recommended  # E@no-redefinition: [return-value]


def rebound_parameter_still_checked(x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    x = x * 2
    return x  # E: [return-value] Incompatible return value type (got "SpmdTensor[Literal['tp:V']]", expected "SpmdTensor[Literal['tp:R']]")


def replicated(x: Annotated[Tensor, R["tp"]]) -> None:
    raise NotImplementedError


def rebound_to_a_maximum(x: Annotated[Tensor, V["tp"]], v: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    # The maximum over the axis is the same on every rank: the parameter takes that type, whether or not
    # mypy lets it be re-bound to another type (no error asking to reduce or gather it).
    x = all_reduce(x, "tp", src=V, dst=R, op="max")  # OK
    reveal_type(x)  # N: SpmdTensor[Never]
    replicated(x)  # OK
    m: Annotated[Tensor, V["tp"]] = v
    m = all_reduce(m, "tp", src=V, dst=R, op="min")  # OK
    replicated(m)  # OK
    return x  # OK


def pair_of_partials(x: Annotated[Tensor, P["tp"]]) -> tuple[Annotated[Tensor, P["tp"]], Annotated[Tensor, P["tp"]]]:
    return x, x * 2


def rebound_after_unpacking(x: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, R["tp"]]:
    # Names first bound by unpacking a call's result are values, not declarations: they can be re-bound.
    a, b = pair_of_partials(x)
    a, b = all_reduce(a, "tp", src=P, dst=R), all_reduce(b, "tp", src=P, dst=R)  # OK
    reveal_type(a)  # N: SpmdTensor[Literal['tp:R']]
    return a + b  # OK


def no_grad_region(v: Annotated[Tensor, V["tp"]], i: Annotated[Tensor, I["tp"]], p: Annotated[Tensor, P["tp"]]) -> None:
    with torch.no_grad():
        v / i  # OK
        torch.exp(p)  # E: [spmd-partial] P (a pending sum) through a non-linear op
        p + v  # E: [spmd-mix] P (a pending sum) does not mix with V
    v / i  # E: [spmd-mix] I does not mix with V
    with torch.inference_mode():
        v * i  # OK


@torch.no_grad()
def decorated(v: Annotated[Tensor, V["tp"]], i: Annotated[Tensor, I["tp"]]) -> None:
    v - i  # OK


class VocabParallelSoftmax(torch.autograd.Function):
    """Megatron's cross entropy normalises V logits by an I sum inside forward: no autograd runs there."""

    @staticmethod
    def forward(ctx: Any, exp_logits: Annotated[Tensor, V["tp"]], sum_exp: Annotated[Tensor, I["tp"]]) -> Tensor:
        exp_logits.div_(sum_exp)  # OK
        return exp_logits

    @staticmethod
    def backward(ctx: Any, grad: Annotated[Tensor, P["tp"]]) -> tuple[Tensor, None]:
        return torch.exp(grad), None  # E: [spmd-partial] P (a pending sum) through a non-linear op


class CrossEntropyHelpers:
    """Megatron's static helpers, called only from the autograd Function below: they run without autograd too."""

    @staticmethod
    def normalise(exp_logits: Annotated[Tensor, V["tp"]], sum_exp: Annotated[Tensor, I["tp"]]) -> Tensor:
        exp_logits.div_(sum_exp.unsqueeze(dim=-1))  # OK
        return exp_logits

    @staticmethod
    def log_of(p: Annotated[Tensor, P["tp"]]) -> Tensor:
        return torch.log(p)  # E: [spmd-partial] P (a pending sum) through a non-linear op

    @staticmethod
    def also_called_with_autograd(v: Annotated[Tensor, V["tp"]], i: Annotated[Tensor, I["tp"]]) -> Tensor:
        return v / i  # E: [spmd-mix] I does not mix with V


class CrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, exp_logits: Annotated[Tensor, V["tp"]], sum_exp: Annotated[Tensor, I["tp"]]) -> Tensor:
        CrossEntropyHelpers.also_called_with_autograd(exp_logits, sum_exp)
        return CrossEntropyHelpers.normalise(exp_logits, sum_exp)

    @staticmethod
    def backward(ctx: Any, grad: Annotated[Tensor, P["tp"]]) -> tuple[Tensor, None]:
        return CrossEntropyHelpers.log_of(grad), None


def with_autograd(v: Annotated[Tensor, V["tp"]], i: Annotated[Tensor, I["tp"]]) -> Tensor:
    return CrossEntropyHelpers.also_called_with_autograd(v, i)


class HoldsALinear(nn.Module):
    """Attributes declared plain Tensor (nn.Linear.weight) go into SPMD declarations like unknown values."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, V["tp"]]:
        weight: Annotated[Tensor, S["tp", 0]] = self.linear.weight  # OK
        self.linear.weight = nn.Parameter(torch.empty(4, 4))  # OK
        return torch.nn.functional.linear(x, weight)  # OK


class Column(nn.Module):
    def forward(self, x: Annotated[Tensor, I["tp"]]) -> Annotated[Tensor, I["tp"]]:
        return x


class PlainSubclass(Column):
    """A subclass nobody annotated calls the annotated forward through super(), as through the instance."""

    def forward(self, x: Tensor):
        self.__call__(x)  # OK
        Column.forward(self, x)  # OK
        return super().forward(x)  # OK


class AnnotatedSubclass(Column):
    def forward(self, x: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, I["tp"]]:  # E: [override]
        return super().forward(x)  # E: [arg-type] Argument 1 to "forward" of "Column" has incompatible type "SpmdTensor[Literal['tp:R']]"; expected "SpmdTensor[Literal['tp:I']]"


class PlainLinear(Protocol):
    def forward(self, input: Tensor, /) -> Tensor: ...


class ColumnLinear(Protocol):
    def forward(self, input: Annotated[Tensor, I["tp"]], /) -> Tensor: ...


def build(layer: PlainLinear) -> None: ...


def build_column(layer: ColumnLinear, x: Tensor) -> Tensor:
    return layer.forward(x)  # OK


def protocols() -> None:
    # A known limitation (docs/adopting.md): a protocol whose method takes a plain Tensor no longer matches a class
    # whose method declares an SPMD type there; the workaround is to annotate the protocol's method the same way.
    build(Column())  # E: [arg-type] Argument 1 to "build" has incompatible type "Column"; expected "PlainLinear"
    build_column(Column(), torch.empty(2))  # OK
