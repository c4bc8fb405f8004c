"""Run a generated program on simulated ranks and compare it with the single-device program it denotes.

The reference reads the program's statements, not the types the plugin
infers.  Each value it computes is held, per mesh axis, in one of two forms:

* **whole** (one tensor on that axis): the global value of an ``R``, ``I`` or
  ``P`` tensor; a ``P`` value is the sum its ranks' summands denote;
* **per rank** (one tensor per rank of the axis): a ``V`` value, and a shard
  ``S(i)``, whose pieces are the chunks of its global value along ``i``.

Ordinary ops run on whole values as on one device; where an operand is per
rank on an axis, the op runs once per rank, whole operands taking part as
they are.  A collective or cast changes the form as its written ``src`` and
``dst`` say, by what it means for global values: ``all_reduce(P -> R)`` is the
identity, ``all_reduce(V -> R)`` and ``reinterpret(V -> P)`` sum the ranks'
pieces, ``all_gather``/``convert(V|S(i) -> P)`` stack or concatenate them,
``reduce_scatter`` and ``convert(R|I -> V|S(i))`` cut a whole value into
pieces, ``reinterpret(R -> V)`` hands every rank the whole value, and
``reinterpret(R -> P)`` makes it ``n`` times larger.  Where a value's form is not
the one the ``src`` says (a per-rank value passed as ``src=R``), the reference
takes the reading the runtime would: per-rank pieces passed as ``src=P`` are
summed, a whole value passed as ``src=V`` is every rank's; per-rank pieces
passed as ``src=R``/``I`` must all be equal, or the reference is undefined.

Inputs are drawn as global values and laid out by their declared types
(:meth:`examples.simulation.World.distribute`: ``R``/``I`` the same on every
rank, ``V`` one entry per rank, ``P`` random summands, ``S(i)`` chunks); the
reference starts from the same global values.  The program's output is
collected by its declared return type, every parameter's gradient by the
gradient type of its declared type, and both are compared with the reference's
output and the gradients of its loss (the loss must be whole on every axis).
"""

from __future__ import annotations

import itertools
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from examples.comparison import double_precision
from examples.layout import ReplicasDiffer
from examples.simulation import simulated_mesh
from spmd_types import I, P, R, S, V
from spmd_types.typesystem import SpmdType, gradient_type
from tests.differential.generator import LOCAL_SHAPE, MESHES, Branch, Collective, Declare, InPlace, Loop, Op, Program

Key = tuple[int | None, ...]  # per mesh axis: the rank's index on a per-rank axis, None on a whole one
Ref = dict[Key, torch.Tensor]

MARKERS = {"R": R, "I": I, "V": V, "P": P, "S0": S(0), "S1": S(1)}
OP_FUNCTIONS: dict[str, Callable[..., torch.Tensor]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "matmul": lambda a, b: a @ b,
    "relu": torch.relu,
    "exp": torch.exp,
    "neg": lambda a: -a,
    "sum": lambda a: a.sum(),
    "sum0": lambda a: a.sum(0),
    "t": lambda a: a.t(),
    "scale": lambda a: a * 0.5,
    "rscale": lambda a: 2.0 * a,
    "shift": lambda a: a + 1.0,
    "clone": lambda a: a.clone(),
    "div": lambda a, b: a / b,
    "halve": lambda a: a / 2.0,
    "mean": lambda a: a.mean(),
    "abs": lambda a: a.abs(),
    "square": lambda a: a**2,
    "tanh": torch.tanh,
    "softmax": lambda a: torch.softmax(a, -1),
    "cat": lambda a, b: torch.cat([a, b]),
    "linear": torch.nn.functional.linear,
    "where": lambda a, b: torch.where(a > 0, a, b),
    "detach": lambda a: a.detach(),
    "mT": lambda a: a.mT,
    "T": lambda a: a.T,
    "frelu": torch.nn.functional.relu,
    "sigmoid": torch.sigmoid,
    "max": lambda a: a.max(),
    "norm": lambda a: a.norm(),
    "pow": lambda a: torch.pow(a, 3),
    "rsub": lambda a: 1.0 - a,
    "addzero": lambda a: a + 0,
    "mean0": lambda a: a.mean(0),
    "flatten": lambda a: a.reshape(-1),
    "first": lambda a: a[0],
    "stack": lambda a, b: torch.stack([a, b]),
    "scatter_sum": lambda a, b: a.scatter_reduce(0, torch.zeros_like(b, dtype=torch.long), b, reduce="sum"),
    "scatter_add": lambda a, b: a.scatter_add(0, torch.zeros_like(b, dtype=torch.long), b),
    "scatter_amax": lambda a, b: a.scatter_reduce(0, torch.zeros_like(b, dtype=torch.long), b, reduce="amax"),
    "zeros": lambda: torch.zeros(4, 4),
    "ones": lambda: torch.ones(4, 4),
    "full": lambda: torch.full((4, 4), 0.5),
    "+=": lambda a, b: a + b,
    "-=": lambda a, b: a - b,
    "*=": lambda a, b: a * b,
}
RTOL, ATOL = 1e-6, 1e-8


class Undefined(Exception):
    """The program gives no single-device meaning: pieces that differ where it says they are one value."""


def spmd_type(kinds: tuple[tuple[str, str], ...] | dict[str, str]) -> SpmdType:
    return SpmdType({axis: MARKERS[kind] for axis, kind in dict(kinds).items()})


# -- the reference ---------------------------------------------------------------------------


def _per_rank_axes(ref: Ref) -> tuple[int, ...]:
    key = next(iter(ref))
    return tuple(j for j, k in enumerate(key) if k is not None)


def _combine(operands: list[Ref], fn: Callable[..., torch.Tensor], sizes: list[int]) -> Ref:
    """``fn`` applied rank by rank where any operand is per rank, once where all are whole."""
    axes = sorted({j for ref in operands for j in _per_rank_axes(ref)})
    result = {}
    ranges = [range(sizes[j]) if j in axes else [None] for j in range(len(sizes))]
    for key in itertools.product(*ranges):
        args = []
        for ref in operands:
            mine = _per_rank_axes(ref)
            args.append(ref[tuple(k if j in mine else None for j, k in enumerate(key))])
        result[key] = fn(*args)
    return result


def _merge(ref: Ref, j: int, how: Callable[[list[torch.Tensor]], torch.Tensor]) -> Ref:
    """Per rank on axis ``j`` -> whole, combining the ranks' pieces in rank order."""
    groups: dict[Key, list[tuple[int, torch.Tensor]]] = {}
    for key, t in ref.items():
        rest = key[:j] + (None,) + key[j + 1:]
        groups.setdefault(rest, []).append((key[j], t))  # type: ignore[arg-type]
    return {rest: how([t for _, t in sorted(parts, key=lambda p: p[0])]) for rest, parts in groups.items()}


def _split(ref: Ref, j: int, n: int, how: Callable[[torch.Tensor], list[torch.Tensor]]) -> Ref:
    """Whole on axis ``j`` -> per rank, rank ``k`` getting ``how(value)[k]``."""
    result = {}
    for key, t in ref.items():
        for k, piece in enumerate(how(t)):
            result[key[:j] + (k,) + key[j + 1:]] = piece
    return result


def _is_per_rank(ref: Ref, j: int) -> bool:
    return j in _per_rank_axes(ref)


def _same(parts: list[torch.Tensor]) -> torch.Tensor:
    for part in parts[1:]:
        if part.shape != parts[0].shape or not torch.allclose(part, parts[0], rtol=RTOL, atol=ATOL, equal_nan=True):
            raise Undefined("pieces that differ from rank to rank are read as one replicated value")
    return parts[0]


def _joiner(kind: str) -> Callable[[list[torch.Tensor]], torch.Tensor]:
    if kind == "V":
        return torch.stack
    dim = int(kind[1])
    return lambda parts: torch.cat(parts, dim)


def _splitter(kind: str, n: int) -> Callable[[torch.Tensor], list[torch.Tensor]]:
    if kind == "V":
        return lambda t: list(t.unbind(0))
    dim = int(kind[1])
    return lambda t: list(t.chunk(n, dim))


def _collective(ref: Ref, c: Collective, j: int, n: int) -> Ref:
    per_rank_src = c.src in ("V", "S0", "S1")
    if per_rank_src and not _is_per_rank(ref, j):
        ref = _split(ref, j, n, lambda t: [t] * n)
    elif not per_rank_src and _is_per_rank(ref, j):
        ref = _merge(ref, j, lambda parts: torch.stack(parts).sum(0) if c.src == "P" else _same(parts))
    summed = lambda parts: torch.stack(parts).sum(0)  # noqa: E731
    if c.fn == "reinterpret":
        if per_rank_src:
            return _merge(ref, j, summed)
        if c.dst == "P":
            return {key: t * n for key, t in ref.items()}
        if c.dst == "V":
            return _split(ref, j, n, lambda t: [t] * n)
        return ref
    if c.fn == "convert":
        if per_rank_src:
            return _merge(ref, j, _joiner(c.src))
        if c.dst in ("V", "S0", "S1"):
            return _split(ref, j, n, _splitter(c.dst, n))
        return ref
    if c.fn == "all_reduce":
        return _merge(ref, j, summed) if per_rank_src else ref
    if c.fn == "all_gather":
        return _merge(ref, j, _joiner(c.src))
    if c.fn == "reduce_scatter":
        if per_rank_src:
            ref = _merge(ref, j, summed)
        return _split(ref, j, n, _splitter(c.dst, n))
    raise ValueError(c.fn)


def _global(ref: Ref, kinds: dict[str, str], axes: tuple[str, ...], sizes: list[int]) -> torch.Tensor:
    """The global value of ``ref`` read as declared, laid out as :meth:`World.collect` gives it."""
    for j in reversed(range(len(axes))):
        kind = kinds[axes[j]]
        if kind in ("V", "S0", "S1"):
            if not _is_per_rank(ref, j):
                ref = _split(ref, j, sizes[j], lambda t, n=sizes[j]: [t] * n)
            ref = _merge(ref, j, _joiner(kind))
        elif _is_per_rank(ref, j):
            ref = _merge(ref, j, (lambda parts: torch.stack(parts).sum(0)) if kind == "P" else _same)
    (value,) = ref.values()
    return value


def reference(program: Program, leaves: dict[str, torch.Tensor], sizes: list[int]) -> tuple[Ref, Ref]:
    """The output and the loss of ``program`` on one device, from the parameters' global values ``leaves``."""
    env: dict[str, Ref] = {}
    whole: Key = tuple(None for _ in sizes)
    for name, kinds in program.params:
        ref: Ref = {whole: leaves[name]}
        for j, (_, kind) in enumerate(kinds):
            if kind != "R" and kind != "I" and kind != "P":
                ref = _split(ref, j, sizes[j], _splitter("V" if kind == "V" else kind, sizes[j]))
        env[name] = ref
    for statement in program.body:
        if isinstance(statement, Branch):
            statement = statement.then if program.flag else statement.orelse
        if isinstance(statement, Op):
            env[statement.target] = _combine([env[a] for a in statement.args], OP_FUNCTIONS[statement.name], sizes)
        elif isinstance(statement, Declare):
            env[statement.target] = env[statement.arg]
        elif isinstance(statement, Loop):
            for _ in range(2):
                env[statement.target] = _combine([env[statement.target], env[statement.arg]], OP_FUNCTIONS[statement.name],
                                                 sizes)
        elif isinstance(statement, InPlace):
            env[statement.target] = _combine([env[statement.target], env[statement.arg]], OP_FUNCTIONS[statement.op], sizes)
        else:
            j = program.axes.index(statement.axis)
            env[statement.target] = _collective(env[statement.arg], statement, j, sizes[j])
    return env[program.returns], env[program.loss]


# -- running and comparing -------------------------------------------------------------------


@dataclass
class Outcome:
    """What one program did on every mesh it ran on."""

    mismatches: list[str] = field(default_factory=list)  # quantity: what differs
    errors: list[str] = field(default_factory=list)  # a run that raised (shapes, autograd), not compared
    # quantities whose single-device value is zero (a gradient through softmax(x).sum(), say): agreeing on them
    # says nothing, so a rejected program with one is not counted as falsely rejected
    zero: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.mismatches and not self.errors

    @property
    def wrong(self) -> bool:
        return bool(self.mismatches)


def _is_zero(value: torch.Tensor) -> bool:
    return not value.numel() or value.detach().abs().max().item() < 1e-9


def _compare(name: str, got: torch.Tensor, want: torch.Tensor) -> str | None:
    if got.shape != want.shape:
        return f"{name}: shape {tuple(got.shape)}, single device {tuple(want.shape)}"
    if not torch.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
        error = (got - want).abs().max().item()
        return f"{name}: differs from the single-device value by up to {error:.3g}"
    return None


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:160] if text else ''}"


def run_on(program: Program, code: object, sizes: dict[str, int], seed: int) -> Outcome:
    """Run ``program`` (compiled ``code``) on a simulated mesh of ``sizes`` and compare with the reference."""
    outcome = Outcome()
    label = ",".join(f"{a}={n}" for a, n in sizes.items())
    n_list = [sizes[a] for a in program.axes]
    with double_precision(), simulated_mesh(**sizes) as world:
        generator = torch.Generator().manual_seed(seed)
        types = {name: spmd_type(kinds) for name, kinds in program.params}
        with world.one_device():
            full = {name: torch.randn(world.global_shape(torch.Size(LOCAL_SHAPE), t), generator=generator) / 2
                    for name, t in types.items()}
        local = {name: world.distribute(full[name], types[name], generator).requires_grad_() for name in types}
        namespace: dict[str, object] = {}
        exec(code, namespace)
        kwargs = {"flag": program.flag} if program.uses_flag else {}
        try:
            out = namespace["program"](*local.values(), **kwargs)  # type: ignore[operator]
        except Exception as error:
            outcome.errors.append(f"[{label}] simulated run raised {_short(error)}")
            return outcome
        with world.one_device():
            leaves = {name: value.clone().requires_grad_() for name, value in full.items()}
            try:
                ref_out, ref_loss = reference(program, leaves, n_list)
                if set(_per_rank_axes(ref_loss)):
                    raise Undefined("the loss differs from rank to rank (a V loss has no single-device meaning)")
                (loss,) = ref_loss.values()
                if not torch.isfinite(loss).all():
                    outcome.errors.append(f"[{label}] the loss is not finite (inf or nan), nothing to compare")
                    return outcome
                loss.backward()
                want = _global(ref_out, dict(program.returns_kinds), program.axes, n_list)
            except Undefined as error:
                outcome.mismatches.append(f"[{label}] {error}")
                return outcome
            except Exception as error:
                outcome.errors.append(f"[{label}] reference raised {_short(error)}")
                return outcome
            wanted = {"output": want} | {f"grad {name}": leaf.grad for name, leaf in leaves.items()}
            outcome.zero += [f"[{label}] {name}" for name, w in wanted.items() if w is None or _is_zero(w)]
            problems = []
            try:
                got = world.collect(out, spmd_type(program.returns_kinds))
                problems.append(_compare("output", got, want.detach()))
            except ReplicasDiffer as error:
                problems.append(f"output: {error}")
            for name, kinds in program.params:
                grad_type = SpmdType({a: gradient_type(MARKERS[k]) for a, k in kinds})
                grad = local[name].grad
                want_grad = leaves[name].grad
                if want_grad is None:
                    want_grad = torch.zeros_like(full[name])
                try:
                    got_grad = world.collect(grad, grad_type) if grad is not None else torch.zeros_like(full[name])
                    problems.append(_compare(f"grad {name}", got_grad, want_grad))
                except ReplicasDiffer as error:
                    problems.append(f"grad {name}: {error}")
            outcome.mismatches += [f"[{label}] {p}" for p in problems if p]
    return outcome


def run(program: Program, seed: int = 0) -> Outcome:
    """Run ``program`` on every mesh of its axes (2 and 4 ranks for one axis, 2x2 for two)."""
    source = program.render()
    try:
        code = compile(source, "<generated program>", "exec")
    except SyntaxError as error:  # pragma: no cover - the generator writes valid Python
        return Outcome(errors=[f"does not compile: {error}"])
    total = Outcome()
    for sizes in MESHES[program.axes]:
        try:
            one = run_on(program, code, dict(sizes), seed)
        except Exception as error:
            one = Outcome(errors=[f"harness raised {_short(error)}: {traceback.format_exc(limit=3)}"])
        total.mismatches += one.mismatches
        total.errors += one.errors
        total.zero += one.zero
        if one.errors and not one.mismatches:
            break
    return total
