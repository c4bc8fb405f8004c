"""Check a parallel module against the same computation on one device.

A :class:`ModuleExample` names a module class, the mesh it runs on, the
global (unsharded) inputs and a single-device reference written with plain
torch.  :meth:`ModuleExample.run`

1. builds the module on a simulated mesh (:mod:`examples.simulation`), or,
   with :meth:`ModuleExample.run_on_real_ranks`, on the real processes that
   ``torchrun`` started (:mod:`examples.real_ranks`: each process checks the
   whole output and every whole gradient);
2. draws the *full* value of every parameter at random and gives each rank its
   part of it, as the parameter's declared SPMD type says (the class-level
   annotation, e.g. ``weight: Annotated[nn.Parameter, S["tp", 0]]``); the
   annotations of ``forward``'s arguments lay out the inputs the same way;
3. runs forward, then backward from a random cotangent of the output, laid
   out by the *gradient type* of the output's declared type (an ``R`` output
   gets a ``P`` cotangent);
4. collects the output and every gradient into its global value (a gradient
   by the gradient type of its tensor: the pieces of an ``R`` parameter's
   gradient are summed, every rank must hold the whole gradient of an ``I``
   one) and compares them with the reference's output and gradients.

A correct example matches everywhere.  A buggy twin does not, somewhere.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

import torch
from torch import nn

from examples.layout import MeshLayout, ReplicasDiffer
from examples.real_ranks import launched_by_torchrun, real_mesh
from examples.simulation import simulated_mesh
from spmd_types.typesystem import LocalType, Shard, SpmdType, gradient_type, spmd_type_of_hint

__all__ = [
    "Comparison",
    "ModuleExample",
    "collector",
    "declared_parameter_types",
    "declared_signature",
    "double_precision",
    "load_random_parameters",
]


@dataclass(frozen=True)
class Outcome:
    """One compared quantity: ``problem`` is ``None`` when it matches."""

    name: str
    problem: str | None
    max_error: float | None = None


@dataclass
class Comparison:
    """What a simulated run gave, compared with the single-device reference, quantity by quantity."""

    title: str
    outcomes: list[Outcome] = field(default_factory=list)
    rtol: float = 1e-6
    atol: float = 1e-9

    @property
    def ok(self) -> bool:
        return all(outcome.problem is None for outcome in self.outcomes)

    @property
    def mismatches(self) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if outcome.problem is not None]

    def compare(self, name: str, collect: Callable[[], torch.Tensor | None], want: torch.Tensor | None) -> None:
        """Record whether ``collect()`` (the simulated global value) equals ``want``."""
        try:
            got = collect()
        except ReplicasDiffer as differ:
            self.outcomes.append(Outcome(name, str(differ)))
            return
        if got is None or want is None:
            if got is not want:
                missing = "the simulated run" if got is None else "the reference"
                self.outcomes.append(Outcome(name, f"{missing} computed no value"))
            else:
                self.outcomes.append(Outcome(name, None))
            return
        if not want.any():
            self.outcomes.append(Outcome(name, "the reference value is zero, so agreeing with it would prove nothing"))
            return
        if got.shape != want.shape:
            self.outcomes.append(Outcome(name, f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"))
            return
        error = (got - want).abs().max().item() if got.numel() else 0.0
        close = torch.allclose(got, want, rtol=self.rtol, atol=self.atol)
        problem = None if close else f"differs from the reference by up to {error:.3g}"
        self.outcomes.append(Outcome(name, problem, error))

    def __str__(self) -> str:
        width = max((len(outcome.name) for outcome in self.outcomes), default=0)
        lines = [self.title]
        for outcome in self.outcomes:
            if outcome.problem is None:
                status = "matches" + (f" (max error {outcome.max_error:.1e})" if outcome.max_error is not None else "")
            else:
                status = f"WRONG: {outcome.problem}"
            lines.append(f"  {outcome.name:<{width}}  {status}")
        wrong = len(self.mismatches)
        verdict = "matches the single-device reference" if self.ok else f"{wrong} of {len(self.outcomes)} wrong"
        lines.append(f"  => {verdict}")
        return "\n".join(lines)


def declared_parameter_types(module: nn.Module) -> dict[str, SpmdType]:
    """Parameter name -> the SPMD type its class declares, for ``module`` and its submodules."""
    types = {}
    for prefix, sub in module.named_modules():
        hints = typing.get_type_hints(type(sub), include_extras=True)
        for name, _ in sub.named_parameters(recurse=False):
            declared = spmd_type_of_hint(hints.get(name))
            if declared is None:
                raise TypeError(
                    f"{type(sub).__name__}.{name} has no SPMD type; declare it in the class body, "
                    f'e.g. {name}: Annotated[nn.Parameter, S["tp", 0]]'
                )
            types[f"{prefix}.{name}" if prefix else name] = declared
    return types


def declared_signature(module: nn.Module) -> tuple[dict[str, SpmdType], SpmdType]:
    """The declared SPMD types of ``module.forward``'s arguments (by name, in order) and of its result."""
    forward = type(module).forward
    hints = typing.get_type_hints(forward, include_extras=True)

    def declared(name: str) -> SpmdType:
        found = spmd_type_of_hint(hints.get(name))
        if found is None:
            raise TypeError(f"{type(module).__name__}.forward does not declare the SPMD type of {name!r}")
        return found

    names = list(inspect.signature(forward).parameters)[1:]  # after self
    return {name: declared(name) for name in names}, declared("return")


@contextlib.contextmanager
def double_precision() -> Iterator[None]:
    """Build and run in float64, so that agreeing with the reference means equal up to rounding."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def load_random_parameters(module: nn.Module, world: MeshLayout, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Draw every parameter's full value, give each rank its part of it; the full values by name."""
    types = declared_parameter_types(module)
    with world.one_device():
        full: dict[str, torch.Tensor] = {
            name: torch.randn(world.global_shape(p.shape, types[name]), generator=generator) / 2
            for name, p in module.named_parameters()
        }
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(world.distribute(full[name], types[name], generator))
    return full


@dataclass
class _Reference:
    """The single-device run: its output, the cotangent fed to backward, and the gradients."""

    output: torch.Tensor
    cotangent: torch.Tensor
    param_grads: dict[str, torch.Tensor | None]
    input_grads: list[torch.Tensor | None]


@dataclass(frozen=True)
class ModuleExample:
    """A parallel module, the mesh it runs on, its inputs, and its single-device reference.

    ``inputs(generator)`` returns the forward's arguments as global values;
    ``reference(params, *inputs)`` computes the output on one device from the
    full parameters (by name) and the global inputs; ``options`` are the
    module's constructor arguments.  A buggy twin is the same example with
    another ``module``: ``dataclasses.replace(EXAMPLE, module=Buggy)``.
    """

    module: type[nn.Module]
    mesh: Mapping[str, int]
    inputs: Callable[[torch.Generator], tuple[torch.Tensor, ...]]
    reference: Callable[..., torch.Tensor]
    options: Mapping[str, object] = field(default_factory=dict)
    # How close is equal: up to float64 rounding by default; a variant that communicates in a lower
    # precision states its own tolerance (torch.allclose's rtol and atol).
    rtol: float = 1e-6
    atol: float = 1e-9

    def on_ranks(self, ranks: int) -> ModuleExample:
        """The same example with ``ranks`` ranks on every mesh axis."""
        return replace(self, mesh=dict.fromkeys(self.mesh, ranks))

    def run(self, seed: int = 0) -> Comparison:
        """Run on every simulated rank and compare with the reference (see the module docstring)."""
        return self.compare_on(simulated_mesh(**self.mesh), seed)

    def run_on_real_ranks(self, seed: int = 0) -> Comparison:
        """Run on this process, one of the ranks torchrun started, and compare with the reference.

        A single-axis mesh takes as many ranks as there are processes; every
        process must call this, and each returns its own (identical) verdict.
        """
        return self.compare_on(real_mesh(self.mesh), seed)

    def main(self) -> int:
        """The example as a program: real ranks when torchrun started it, else simulated ones.

        Prints the comparison (each process its own) and returns the exit
        status: 0 when everything matches the single-device reference.
        """
        comparison = self.run_on_real_ranks() if launched_by_torchrun() else self.run()
        sys.stdout.write(f"{comparison}\n")  # one write, so that the processes' reports do not interleave
        sys.stdout.flush()
        return 0 if comparison.ok else 1

    def compare_on(self, ranks: contextlib.AbstractContextManager[MeshLayout], seed: int) -> Comparison:
        """Build, run and check the module on the ranks that entering ``ranks`` gives."""
        generator = torch.Generator().manual_seed(seed)
        with double_precision(), ranks as world:
            comparison = Comparison(f"{self.module.__name__} {world.description}, against one device:",
                                    rtol=self.rtol, atol=self.atol)
            module = self.module(**self.options)
            full = load_random_parameters(module, world, generator)
            with world.one_device():
                inputs = self.inputs(generator)
                want = self._reference(full, inputs, generator)
            arg_types, out_type = declared_signature(module)
            args = [_leaf(world.distribute(x, t, generator)) for x, t in zip(inputs, arg_types.values(), strict=True)]
            out = module(*args)
            fits = world.global_shape(out.shape, out_type) == want.output.shape
            if fits:  # else no cotangent fits: the forward went wrong already
                out.backward(world.distribute(want.cotangent, _gradient(out_type), generator))
            with world.one_device():
                comparison.compare("output", lambda: world.collect(out, out_type), want.output)
                if not fits:
                    return comparison
                param_types = declared_parameter_types(module)
                for name, p in module.named_parameters():
                    got = collector(world, p.grad, _gradient(param_types[name]))
                    comparison.compare(f"grad {name}", got, want.param_grads[name])
                for (name, t), arg, grad in zip(arg_types.items(), args, want.input_grads):
                    if arg.is_floating_point():
                        comparison.compare(f"grad {name} (input)", collector(world, arg.grad, _gradient(t)), grad)
        return comparison

    def _reference(self, full: dict[str, torch.Tensor], inputs: tuple[torch.Tensor, ...], generator: torch.Generator) -> _Reference:
        params = {name: value.clone().requires_grad_() for name, value in full.items()}
        args = [_leaf(x.clone()) for x in inputs]
        output = self.reference(params, *args)
        cotangent = torch.randn(output.shape, generator=generator)
        output.backward(cotangent)
        return _Reference(
            output.detach(),
            cotangent,
            {name: p.grad for name, p in params.items()},
            [x.grad if x.is_floating_point() else None for x in args],
        )


def _leaf(x: torch.Tensor) -> torch.Tensor:
    return x.requires_grad_() if x.is_floating_point() else x


def _gradient(spmd_type: SpmdType) -> SpmdType:
    """The type of the gradient of a tensor of the declared ``spmd_type``, axis by axis."""
    grads = {}
    for axis, t in spmd_type.items():
        if not isinstance(t, (LocalType, Shard)):
            raise TypeError(f"a declared type has no {t!r} axis, got {spmd_type.describe()!r}")
        grads[axis] = gradient_type(t)
    return SpmdType(grads)


def collector(world: MeshLayout, local: torch.Tensor | None, spmd_type: SpmdType) -> Callable[[], torch.Tensor | None]:
    """What :meth:`Comparison.compare` calls for the global value of ``local`` (``None``: no value, e.g. no gradient)."""
    return lambda: None if local is None else world.collect(local, spmd_type)

