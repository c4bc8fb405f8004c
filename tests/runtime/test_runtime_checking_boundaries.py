"""Runtime checking, declared boundaries: ``@checked`` functions, module ``forward``, class-body declarations.

Also ``loss.backward()``, the boundary of the backward pass.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Generic, Literal, TypeVar, overload

import pytest

torch = pytest.importorskip("torch")
from torch import Tensor, nn  # noqa: E402
from torch.distributed._local_tensor import LocalTensorMode  # noqa: E402

import spmd_types as spmd  # noqa: E402
from spmd_types import I, P, R, S, V, checked  # noqa: E402
from spmd_types.typesystem import parse  # noqa: E402


def tracker_in_use() -> spmd.TypeTracker:
    tracker = seen["tracker"]
    assert isinstance(tracker, spmd.TypeTracker)
    return tracker


def typed(*markers: object) -> torch.Tensor:
    return spmd.assert_type(torch.randn(4, 4), *markers)  # type: ignore[arg-type]


seen: dict[str, object] = {}  # what the functions below see inside a call: seen["tracker"] is the active tracker


@checked
def scale(x: Annotated[Tensor, S["tp", 0]], factor: float) -> Annotated[Tensor, S["tp", 0]]:
    """Records the type its argument has inside the call."""
    seen["inside"] = tracker_in_use().type_of(x)
    return x * factor


@checked
def to_replicated(x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, R["tp"]]:
    return x  # wrong: a varying value returned as replicated


@checked
def reduced(x: Annotated[Tensor, P["tp"]]) -> Annotated[Tensor, I["tp"]]:
    return spmd.all_reduce(x, "tp", dst=R)  # wrong: the declared result is I


@checked
def pairs(
    xs: Sequence[Annotated[Tensor, V["tp"]]], pair: tuple[Annotated[Tensor, R["tp"]], Tensor],
    bias: Annotated[Tensor, I["tp"]] | None = None, *rest: Annotated[Tensor, P["tp"]],
) -> list[Annotated[Tensor, V["tp"]]]:
    return [x + pair[0] for x in xs]


def test_an_argument_must_fit_and_has_the_declared_type_inside_only() -> None:
    with spmd.runtime_checking() as tracker:
        seen["tracker"] = tracker
        v = typed(V["tp"])
        out = scale(v, 2.0)
        assert seen["inside"] == parse("tp:S(0)")
        assert tracker.type_of(v) == parse("tp:V")  # the caller's value keeps its own type
        assert tracker.type_of(out) == parse("tp:S(0)")
        plain = torch.randn(4, 4)
        scale(plain, 2.0)  # an unknown value is accepted, like Any
        assert tracker.type_of(plain) is None
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            scale(typed(R["tp"]), 2.0)
    assert caught.value.code == "spmd-boundary"
    assert str(caught.value).startswith('argument "x" of "scale" on axis \'tp\': expected S(0), got R; fix: '
                                        'convert(x, "tp", src=R, dst=S(0))')


def test_the_returned_value_must_fit_the_declared_result() -> None:
    with spmd.runtime_checking():
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            to_replicated(typed(V["tp"]))
    assert caught.value.code == "spmd-boundary"
    assert str(caught.value) == ("return value on axis 'tp': expected R, got V (per-rank data): all_reduce it if the "
                                 "ranks hold summands of the value, all_gather it if they hold pieces of it  [spmd-boundary]")


def test_a_collective_that_made_the_result_is_fixed_at_the_call(sim8) -> None:
    with LocalTensorMode(8) as mode, spmd.set_current_mesh(sim8.mesh), spmd.runtime_checking():
        p = spmd.assert_type(mode.rank_map(lambda rank: torch.ones(2) * rank), P["tp"])
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            reduced(p)
    # As the plugin: the better fix is the same all_reduce with the declared dst, not a cast after it.
    assert ('expected I, got R; fix: all_reduce(x, "tp", src=P, dst=I) replacing the all_reduce call '
            '(all-reduce forward, no-op in backward)') in str(
        caught.value)


def test_declarations_inside_sequences_tuples_optionals_and_star_args() -> None:
    with spmd.runtime_checking() as tracker:
        v, r = typed(V["tp"]), typed(R["tp"])
        out = pairs([v, v], (r, torch.randn(4, 4)))
        assert [tracker.type_of(o) for o in out] == [parse("tp:V")] * 2
        with pytest.raises(spmd.SpmdTypeCheckError, match='argument "xs" of "pairs"'):
            pairs([v, r], (r, r))
        with pytest.raises(spmd.SpmdTypeCheckError, match='argument "pair" of "pairs"'):
            pairs([v], (v, r))
        with pytest.raises(spmd.SpmdTypeCheckError, match='argument "bias" of "pairs" on axis \'tp\': expected I'):
            pairs([v], (r, r), r)
        with pytest.raises(spmd.SpmdTypeCheckError, match='argument "rest" of "pairs" on axis \'tp\': expected P'):
            pairs([v], (r, r), None, typed(P["tp"]), r)


def test_checked_costs_only_a_call_when_off() -> None:
    r = typed(R["tp"])
    assert to_replicated(r) is r  # wrong, but nothing is checked outside the block
    assert scale.__wrapped__ is not None and scale.__name__ == "scale"  # type: ignore[attr-defined]


class ColumnParallel(nn.Module):
    weight: Annotated[nn.Parameter, S["tp", 0]]
    scale: Annotated[Tensor, I["tp"]]

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x: Annotated[Tensor, R["tp"]], gain: Tensor | None = None) -> Annotated[Tensor, V["tp"]]:
        seen["weight"] = tracker_in_use().type_of(self.weight)
        return nn.functional.linear(x, self.weight)


class Forgetful(ColumnParallel):
    def forward(self, x: Annotated[Tensor, R["tp"]], gain: Tensor | None = None) -> Annotated[Tensor, V["tp"]]:
        return x * self.scale  # wrong twice: I mixed with R (and the result would be R)


def test_a_module_call_checks_forward_and_declares_the_class_body_tensors() -> None:
    module = ColumnParallel()
    with spmd.runtime_checking() as tracker:
        seen["tracker"] = tracker
        out = module(typed(R["tp"]))
        assert seen["weight"] == parse("tp:S(0)")
        assert tracker.type_of(module.scale) == parse("tp:I")
        assert tracker.type_of(out) == parse("tp:V")
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            module(typed(I["tp"]))
        assert str(caught.value).startswith('argument "x" of "ColumnParallel.forward" on axis \'tp\': expected R, got I')
        with pytest.raises(spmd.SpmdTypeCheckError, match="I does not mix with R"):
            Forgetful()(typed(R["tp"]))


def test_a_failed_forward_gives_the_arguments_their_types_back() -> None:
    with spmd.runtime_checking() as tracker:
        seen["tracker"] = tracker
        v = typed(V["tp"])
        with pytest.raises(spmd.SpmdTypeCheckError):
            ColumnParallel()(v)
        assert tracker.type_of(v) == parse("tp:V")
        r = typed(R["tp"], V["dp"])
        with pytest.raises(spmd.SpmdTypeCheckError):
            Forgetful()(r)
        assert tracker.type_of(r) == parse("dp:V, tp:R")


Replicated = Annotated[Tensor, R["tp"]]
Varying = Annotated[Tensor, V["tp"]]
Out = TypeVar("Out", Replicated, Varying)


class Gathering(nn.Module, Generic[Out]):
    """A flag contract (docs/adopting.md): ``gather`` picks the type ``forward`` returns."""

    @overload
    def __init__(self: Gathering[Varying], *, gather: Literal[False] = ...) -> None: ...
    @overload
    def __init__(self: Gathering[Replicated], *, gather: Literal[True]) -> None: ...
    def __init__(self, *, gather: bool = False) -> None:
        super().__init__()
        self.gather = gather

    def forward(self, x: Varying) -> Out:
        return x  # wrong where gather is True: a varying value returned as replicated


@pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.get_overloads is new in Python 3.11")
def test_a_flag_contract_declares_what_the_instance_was_built_with() -> None:
    with spmd.runtime_checking() as tracker:
        assert tracker.type_of(Gathering()(typed(V["tp"]))) == parse("tp:V")
        with pytest.raises(spmd.SpmdTypeCheckError, match=r"return value on axis 'tp': expected R, got V"):
            Gathering(gather=True)(typed(V["tp"]))
        with pytest.raises(spmd.SpmdTypeCheckError, match=r'argument "x" of "Gathering\.forward"'):
            Gathering()(typed(R["tp"]))

@pytest.mark.parametrize(("markers", "ok"), [((P["dp"],), True), ((I["dp"],), True), ((R["dp"],), False),
                                             ((V["dp"],), False)])
def test_backward_needs_a_loss_whose_gradient_is_seeded_right(markers, ok) -> None:
    with spmd.runtime_checking():
        loss = spmd.assert_type(torch.randn(3, requires_grad=True).sum(), *markers)
        if ok:
            loss.backward()
        else:
            with pytest.raises(spmd.SpmdTypeCheckError) as caught:
                loss.backward()
            assert caught.value.code == "spmd-backward"
            assert str(caught.value).startswith("loss.backward() on axis 'dp': the loss is")


def seeded(*markers: object) -> torch.Tensor:
    return spmd.assert_type(torch.randn(()), *markers)  # type: ignore[arg-type]


def test_an_explicit_gradient_must_be_the_gradient_type_of_the_loss() -> None:
    def replicated_loss() -> torch.Tensor:
        return spmd.assert_type(torch.randn(3, requires_grad=True).sum(), R["dp"])

    with spmd.runtime_checking():
        replicated_loss().backward(seeded(P["dp"]))  # the gradient of R is P
        replicated_loss().backward(torch.randn(()))  # a seed of unknown type says nothing
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            replicated_loss().backward(seeded(R["dp"]))
        assert str(caught.value).startswith(
            "loss.backward() on axis 'dp': the gradient given is R, but a loss of type R needs a gradient of type P")
        with pytest.raises(spmd.SpmdTypeCheckError, match="the loss is R, so every rank seeds a gradient of 1"):
            replicated_loss().backward(torch.tensor(1.0))  # a constant is the same on every rank, like the ones


def test_torch_autograd_backward_and_grad_are_checked_pair_by_pair() -> None:
    with spmd.runtime_checking():
        x = torch.randn(3, requires_grad=True)
        partial = spmd.assert_type(x.sum(), P["dp"])
        replicated = spmd.assert_type(x.sum() * 2, R["dp"])
        torch.autograd.backward([partial, replicated], [seeded(R["dp"]), seeded(P["dp"])])
        with pytest.raises(spmd.SpmdTypeCheckError) as caught:
            torch.autograd.grad(spmd.assert_type(x.sum() * 3, R["dp"]), [x])
        assert str(caught.value).startswith("torch.autograd.grad(...) on axis 'dp': the loss is R")
        with pytest.raises(spmd.SpmdTypeCheckError, match="the gradient given is V, but a loss of type P needs"):
            torch.autograd.grad([spmd.assert_type(x.sum() * 4, P["dp"])], [x], grad_outputs=[seeded(V["dp"])])
