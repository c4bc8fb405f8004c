"""Run a typed function on simulated meshes and compare it with its one-rank run.

A case file's function has no single-device reference written next to it,
but it has one by construction: on a mesh of one rank per axis every
collective and cast is the identity, every layout is the whole tensor, and
the function computes what it would on one device.  A correct SPMD program
computes the same global values, output and gradients, on any mesh; so a
function's run on 2 and 4 ranks per axis is compared with its run on one.

A function is *runnable* here when it is defined at module level, every
parameter is a tensor with a declared SPMD type and so is its result, and no
declared type is ``V`` (whose global value, the stack of the ranks' tensors,
depends on the number of ranks).  Inputs are 4x4 global tensors laid out by
their declared types (:meth:`examples.simulation.World.distribute`), the
output's cotangent by the gradient type of the declared result; the output is
collected by its declared type, each input's gradient by its gradient type
(:mod:`examples.comparison`, whose ``Comparison`` reports what differs).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from examples.comparison import Comparison, collector, double_precision
from examples.simulation import simulated_mesh
from spmd_types.typesystem import LocalType, Shard, SpmdType, gradient_type, spmd_type_of_hint
from spmd_types.typesystem import V as VARYING

__all__ = ["FunctionProgram", "meshes"]

GLOBAL_SHAPE = (4, 4)


def meshes(axes: tuple[str, ...]) -> Iterator[dict[str, int]]:
    """The meshes a program runs on: 2 and 4 ranks on one axis, 2x2 on two."""
    if len(axes) == 1:
        yield from ({axes[0]: 2}, {axes[0]: 4})
    else:
        yield dict.fromkeys(axes, 2)


def _gradient(spmd_type: SpmdType) -> SpmdType:
    return SpmdType({axis: gradient_type(t) for axis, t in spmd_type.items()})  # type: ignore[arg-type]


def _varying(spmd_type: SpmdType) -> bool:
    return any(t is VARYING or not isinstance(t, (LocalType, Shard)) for _, t in spmd_type.items())


@dataclass(frozen=True)
class _Run:
    output: torch.Tensor
    grads: dict[str, torch.Tensor | None]


@dataclass(frozen=True)
class FunctionProgram:
    """A runnable function's declared types (see the module docstring)."""

    name: str
    params: dict[str, SpmdType]
    returns: SpmdType

    @classmethod
    def of(cls, function: Callable[..., object]) -> FunctionProgram | str:
        """The declared types of ``function``, or why it cannot be run here."""
        try:
            hints = typing.get_type_hints(function, include_extras=True)
        except Exception as error:  # an annotation that does not evaluate at run time
            return f"its annotations do not evaluate: {error}"
        params = {}
        for name in inspect.signature(function).parameters:
            declared = spmd_type_of_hint(hints.get(name))
            if declared is None:
                return f"parameter {name!r} is not a tensor of a declared SPMD type"
            params[name] = declared
        returns = spmd_type_of_hint(hints.get("return"))
        if returns is None:
            return "it returns no tensor of a declared SPMD type"
        if any(map(_varying, [*params.values(), returns])):
            return "a declared type is V, whose global value depends on the number of ranks"
        program = cls(function.__name__, params, returns)
        if not 1 <= len(program.axes) <= 2:
            return "it is not typed on one or two mesh axes"
        return program

    @property
    def axes(self) -> tuple[str, ...]:
        """The mesh axes the declared types name, in order of appearance."""
        return tuple(dict.fromkeys(axis for t in [*self.params.values(), self.returns] for axis, _ in t.items()))

    def run(self, function: Callable[..., torch.Tensor], sizes: dict[str, int], seed: int) -> _Run:
        """``function`` on a simulated mesh of ``sizes``: its output and input gradients, as global values."""
        values = torch.Generator().manual_seed(seed)
        summands = torch.Generator().manual_seed(seed + 1)
        with double_precision(), simulated_mesh(**sizes) as world:
            with world.one_device():
                inputs = {name: torch.randn(GLOBAL_SHAPE, generator=values) for name in self.params}
            args = {name: world.distribute(x, self.params[name], summands).requires_grad_()
                    for name, x in inputs.items()}
            out = function(**args)
            with world.one_device():
                output = collector(world, out, self.returns)()
                assert output is not None
                cotangent = torch.randn(output.shape, generator=values)
            out.backward(world.distribute(cotangent, _gradient(self.returns), summands))
            with world.one_device():
                grads = {name: collector(world, arg.grad, _gradient(self.params[name]))()
                         for name, arg in args.items()}
        return _Run(output.detach(), grads)

    def reference(self, function: Callable[..., torch.Tensor], seed: int = 0) -> _Run:
        """``function`` on one rank per axis: what it computes on one device."""
        return self.run(function, dict.fromkeys(self.axes, 1), seed)

    def compare(self, function: Callable[..., torch.Tensor], reference: _Run, sizes: dict[str, int],
                seed: int = 0) -> Comparison:
        """``function`` on ``sizes`` against ``reference`` (its one-rank run), quantity by quantity."""
        got = self.run(function, sizes, seed)
        mesh = ", ".join(f"{axis}={n}" for axis, n in sizes.items())
        comparison = Comparison(f"{self.name} on a simulated mesh ({mesh}), against one rank:")
        comparison.compare("output", lambda: got.output, reference.output)
        for name, want in reference.grads.items():
            comparison.compare(f"grad {name}", lambda name=name: got.grads[name], want)  # type: ignore[misc]
        return comparison
