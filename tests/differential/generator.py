"""Seeded generator of small SPMD-typed programs for differential testing.

A :class:`Program` is one function ``program(...)`` with annotated tensor
parameters over one mesh axis (``tp``) or two (``dp``, ``tp``), a chain of
statements (elementwise ops, matmul, relu/exp, sums, transposes, Python
scalars, collectives and casts with their ``src``/``dst``, an in-place update,
a branch on a ``flag: bool`` parameter), a declared return type, and a scalar
loss taken from the returned value on which ``backward()`` is called.

The program is kept as a small IR so that the same object can be

* rendered to Python source (:meth:`Program.render`) for mypy and for running
  on simulated ranks,
* evaluated by the single-device reference (:mod:`tests.differential.oracle`),
  which reads the statements, never the types the plugin infers,
* shrunk statement by statement (:meth:`Program.without`).

The generator keeps a rough per-axis guess of each value's type and uses it
to pick operands and collective endpoints that fit most of the time, and
deliberately misfit now and then, so that a batch mixes right and wrong
programs.  It also tracks every value's local shape on each mesh the program
runs on, so that generated programs do not fail on shapes (the checker does
not look at shapes).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Final

# The meshes a program runs on, by its axes: one axis runs on 2 and on 4 ranks.
MESHES: Final = {("tp",): ({"tp": 2}, {"tp": 4}), ("dp", "tp"): ({"dp": 2, "tp": 2},)}
KINDS: Final = ("R", "I", "V", "P", "S0", "S1")
LOCAL_SHAPE: Final = (4, 4)  # every parameter's local tensor

# name -> (template over {0}, {1}; number of tensor operands; how it treats P: "linear", "multilinear", "nonlinear",
# "affine" (linear plus a constant, so wrong for P))
OPS: Final = {
    "add": ("{0} + {1}", 2, "linear"),
    "sub": ("{0} - {1}", 2, "linear"),
    "mul": ("{0} * {1}", 2, "multilinear"),
    "matmul": ("{0} @ {1}", 2, "multilinear"),
    "relu": ("torch.relu({0})", 1, "nonlinear"),
    "exp": ("torch.exp({0})", 1, "nonlinear"),
    "neg": ("-{0}", 1, "linear"),
    "sum": ("{0}.sum()", 1, "linear"),
    "sum0": ("{0}.sum(0)", 1, "linear"),
    "t": ("{0}.t()", 1, "linear"),
    "scale": ("{0} * 0.5", 1, "linear"),
    "rscale": ("2.0 * {0}", 1, "linear"),
    "shift": ("{0} + 1.0", 1, "affine"),
    "clone": ("{0}.clone()", 1, "linear"),
    "div": ("{0} / {1}", 2, "divide"),
    "halve": ("{0} / 2.0", 1, "linear"),
    "mean": ("{0}.mean()", 1, "linear"),
    "abs": ("{0}.abs()", 1, "nonlinear"),
    "square": ("{0} ** 2", 1, "nonlinear"),
    "tanh": ("torch.tanh({0})", 1, "nonlinear"),
    "softmax": ("torch.softmax({0}, -1)", 1, "nonlinear"),
    "cat": ("torch.cat([{0}, {1}])", 2, "linear"),
    "linear": ("F.linear({0}, {1})", 2, "multilinear"),
    "where": ("torch.where({0} > 0, {0}, {1})", 2, "select"),
    "detach": ("{0}.detach()", 1, "detach"),
    "mT": ("{0}.mT", 1, "linear"),
    "T": ("{0}.T", 1, "linear"),
    "frelu": ("F.relu({0})", 1, "nonlinear"),
    "sigmoid": ("torch.sigmoid({0})", 1, "nonlinear"),
    "max": ("{0}.max()", 1, "nonlinear"),
    "norm": ("{0}.norm()", 1, "nonlinear"),
    "pow": ("torch.pow({0}, 3)", 1, "nonlinear"),
    "rsub": ("1.0 - {0}", 1, "affine"),
    "addzero": ("{0} + 0", 1, "linear"),
    "mean0": ("{0}.mean(0)", 1, "linear"),
    "flatten": ("{0}.reshape(-1)", 1, "linear"),
    "first": ("{0}[0]", 1, "linear"),
    "stack": ("torch.stack([{0}, {1}])", 2, "linear"),
    "scatter_sum": ('{0}.scatter_reduce(0, torch.zeros_like({1}, dtype=torch.long), {1}, reduce="sum")', 2, "linear"),
    "scatter_add": ("{0}.scatter_add(0, torch.zeros_like({1}, dtype=torch.long), {1})", 2, "linear"),
    "scatter_amax": ('{0}.scatter_reduce(0, torch.zeros_like({1}, dtype=torch.long), {1}, reduce="amax")', 2,
                     "nonlinear"),
    "zeros": ("torch.zeros(4, 4)", 0, "zero"),
    "ones": ("torch.ones(4, 4)", 0, "weak"),
    "full": ("torch.full((4, 4), 0.5)", 0, "weak"),
}
INPLACE: Final = ("+=", "-=", "*=")

# The collectives and casts, with the (src, dst) pairs the runtime implements.
COLLECTIVES: Final = {
    "all_reduce": (("P", "R"), ("P", "I"), ("V", "R"), ("V", "I")),
    "all_gather": (("V", "R"), ("V", "I"), ("S0", "R"), ("S0", "I"), ("S1", "R"), ("S1", "I")),
    "reduce_scatter": (("P", "V"), ("P", "S0"), ("P", "S1"), ("V", "V"), ("V", "S0")),
    "convert": (("R", "I"), ("R", "V"), ("R", "P"), ("R", "S0"), ("R", "S1"), ("I", "R"), ("I", "V"), ("I", "P"),
                ("I", "S0"), ("V", "P"), ("S0", "P"), ("S1", "P")),
    "reinterpret": (("R", "I"), ("R", "V"), ("R", "P"), ("I", "R"), ("I", "V"), ("V", "P")),
}

HEADER: Final = (
    "from __future__ import annotations",
    "",
    "from typing import Annotated",
    "",
    "import torch",
    "import torch.nn.functional as F",
    "from torch import Tensor",
    "",
    "from spmd_types import I, P, R, S, V, all_gather, all_reduce, convert, reduce_scatter, reinterpret",
)

SpmdKinds = dict[str, str]  # axis -> kind
Shapes = tuple[tuple[int, ...], ...]  # one local shape per mesh the program runs on


def marker(axis: str, kind: str) -> str:
    return f'S["{axis}", {kind[1]}]' if kind.startswith("S") else f'{kind}["{axis}"]'


def annotation(kinds: SpmdKinds) -> str:
    return f"Annotated[Tensor, {', '.join(marker(a, k) for a, k in kinds.items())}]"


def endpoint(kind: str) -> str:
    return f"S({kind[1]})" if kind.startswith("S") else kind


@dataclass(frozen=True)
class Op:
    """``target = OPS[name] applied to args``."""

    target: str
    name: str
    args: tuple[str, ...]

    def expression(self) -> str:
        return OPS[self.name][0].format(*self.args)

    def lines(self) -> list[str]:
        return [f"{self.target} = {self.expression()}"]

    def uses(self) -> tuple[str, ...]:
        return self.args

    def renamed(self, old: str, new: str) -> Op:
        return replace(self, args=tuple(new if a == old else a for a in self.args))


@dataclass(frozen=True)
class Collective:
    """``target = fn(arg, "axis", src=..., dst=...)``."""

    target: str
    fn: str
    arg: str
    axis: str
    src: str
    dst: str

    def lines(self) -> list[str]:
        return [f'{self.target} = {self.fn}({self.arg}, "{self.axis}", src={endpoint(self.src)}, dst={endpoint(self.dst)})']

    def uses(self) -> tuple[str, ...]:
        return (self.arg,)

    def renamed(self, old: str, new: str) -> Collective:
        return replace(self, arg=new if self.arg == old else self.arg)


@dataclass(frozen=True)
class InPlace:
    """``target op= arg`` on a value the program made (never on a parameter)."""

    target: str
    op: str
    arg: str

    def lines(self) -> list[str]:
        return [f"{self.target} {self.op} {self.arg}"]

    def uses(self) -> tuple[str, ...]:
        return (self.target, self.arg)

    def renamed(self, old: str, new: str) -> InPlace:
        return replace(self, target=new if self.target == old else self.target, arg=new if self.arg == old else self.arg)


@dataclass(frozen=True)
class Branch:
    """``if flag: target = then else: target = orelse`` (two ops writing the same name)."""

    then: Op
    orelse: Op

    @property
    def target(self) -> str:
        return self.then.target

    def lines(self) -> list[str]:
        return ["if flag:", f"    {self.then.lines()[0]}", "else:", f"    {self.orelse.lines()[0]}"]

    def uses(self) -> tuple[str, ...]:
        return self.then.args + self.orelse.args

    def renamed(self, old: str, new: str) -> Branch:
        return Branch(self.then.renamed(old, new), self.orelse.renamed(old, new))


@dataclass(frozen=True)
class Declare:
    """``target: Annotated[Tensor, ...] = arg``: a local variable with a declared type."""

    target: str
    arg: str
    kinds: tuple[tuple[str, str], ...]

    def lines(self) -> list[str]:
        return [f"{self.target}: {annotation(dict(self.kinds))} = {self.arg}"]

    def uses(self) -> tuple[str, ...]:
        return (self.arg,)

    def renamed(self, old: str, new: str) -> Declare:
        return replace(self, arg=new if self.arg == old else self.arg)


@dataclass(frozen=True)
class Loop:
    """``for _ in range(2): target = OPS[name](target, arg)``, on a value the program made."""

    target: str
    name: str
    arg: str

    def lines(self) -> list[str]:
        return ["for _ in range(2):", f"    {self.target} = {OPS[self.name][0].format(self.target, self.arg)}"]

    def uses(self) -> tuple[str, ...]:
        return (self.target, self.arg)

    def renamed(self, old: str, new: str) -> Loop:
        return replace(self, target=new if self.target == old else self.target, arg=new if self.arg == old else self.arg)


LOOP_OPS: Final = ("add", "sub", "mul", "matmul")

Statement = Op | Collective | InPlace | Branch | Declare | Loop


@dataclass(frozen=True)
class Program:
    axes: tuple[str, ...]
    params: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # name, ((axis, kind), ...)
    body: tuple[Statement, ...]
    returns: str
    returns_kinds: tuple[tuple[str, str], ...]
    loss: str  # the scalar on which backward() is called
    flag: bool  # the value the branch condition takes when the program is run
    uses_flag: bool = False

    def render(self) -> str:
        params = [f"{name}: {annotation(dict(kinds))}" for name, kinds in self.params]
        if self.uses_flag:
            params.append("flag: bool")
        lines = [*HEADER, "", "", f"def program({', '.join(params)}) -> {annotation(dict(self.returns_kinds))}:"]
        for statement in self.body:
            lines += [f"    {line}" for line in statement.lines()]
        lines += [f"    {self.loss}.backward()", f"    return {self.returns}", ""]
        return "\n".join(lines)

    def without(self, index: int, keep: str = "first") -> Program | None:
        """The program with statement ``index`` removed; later uses of what it defined read one of its operands.

        ``keep`` picks the operand (``"first"``/``"last"``), or for a branch the arm kept
        (``"then"``/``"orelse"``, the branch becoming that plain statement).
        """
        statement = self.body[index]
        if isinstance(statement, Branch):
            arm = statement.then if keep in ("first", "then") else statement.orelse
            body = self.body[:index] + (arm,) + self.body[index + 1:]
            return self._tidy(replace(self, body=body))
        if isinstance(statement, (InPlace, Loop)):
            return self._tidy(replace(self, body=self.body[:index] + self.body[index + 1:]))
        uses = statement.uses()
        if not uses:
            return None
        substitute = uses[0] if keep == "first" else uses[-1]
        if substitute == statement.target:
            return None
        later = tuple(s.renamed(statement.target, substitute) for s in self.body[index + 1:])
        # an in-place update may not be moved onto a parameter
        if any(isinstance(s, (InPlace, Loop)) and s.target in dict(self.params) for s in later):
            return None
        rename = {statement.target: substitute}
        return self._tidy(replace(self, body=self.body[:index] + later, returns=rename.get(self.returns, self.returns),
                                  loss=rename.get(self.loss, self.loss)))

    def _tidy(self, program: Program) -> Program:
        """``program`` without statements whose values reach neither the result nor the loss, nor unused parameters."""
        live = {program.returns, program.loss}
        body: list[Statement] = []
        for statement in reversed(program.body):
            if statement.target in live:
                body.append(statement)
                if not isinstance(statement, (InPlace, Loop)):
                    live.discard(statement.target)
                live.update(statement.uses())
        program = replace(program, body=tuple(reversed(body)))
        used = {name for s in program.body for name in s.uses()} | {program.returns, program.loss}
        params = tuple(p for p in program.params if p[0] in used)
        uses_flag = any(isinstance(s, Branch) for s in program.body)
        return replace(program, params=params, uses_flag=uses_flag)

    @property
    def size(self) -> int:
        return len(self.body)


# -- generation ------------------------------------------------------------------------------


def _join(kinds: list[str]) -> str:
    """A rough guess of the type of an ordinary op's result on one axis ("X": probably an error)."""
    distinct = set(kinds)
    if "X" in distinct:
        return "X"
    if len(distinct) == 1:
        return kinds[0]
    if "I" in distinct or "P" in distinct:
        return "X"
    return "V"  # R with V or shards


def _guess(name: str, operands: list[SpmdKinds], axes: tuple[str, ...]) -> SpmdKinds:
    behaviour = OPS[name][2]
    if behaviour in ("zero", "weak"):
        return {axis: "Z" if behaviour == "zero" else "W" for axis in axes}
    result = {}
    for axis in axes:
        given = [o[axis] for o in operands]
        kinds = [k for k in given if k not in ("W", "Z")]
        if not kinds:
            result[axis] = "W" if "W" in given else "Z"
            continue
        if behaviour == "detach" and kinds[0] in ("R", "I"):
            result[axis] = "W"
            continue
        if "P" in kinds and "W" in given and behaviour in ("linear", "select"):
            result[axis] = "X"
            continue
        if "P" in kinds and behaviour == "divide":
            result[axis] = "P" if given[0] == "P" and set(given[1:]) <= {"R", "W"} else "X"
            continue
        if "P" in kinds and behaviour == "select":
            result[axis] = "X" if given[0] == "P" or set(kinds) != {"P"} else "P"
            continue
        if "P" in kinds and behaviour == "multilinear":
            result[axis] = "P" if kinds.count("P") == 1 and set(kinds) <= {"P", "R"} else "X"
        elif "P" in kinds and behaviour in ("nonlinear", "affine"):
            result[axis] = "X"
        else:
            kind = _join(kinds)
            if kind.startswith("S") and name in ("sum", "sum0", "t", "matmul", "T", "mT", "mean", "mean0", "flatten", "first", "stack", "linear", "max", "norm", "cat", "scatter_sum", "scatter_add", "scatter_amax"):
                kind = "V"
            result[axis] = kind
    return result


def _op_shape(name: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    arity = OPS[name][1]
    if arity == 2:
        a, b = shapes
        if name == "matmul":
            return (a[0], b[1]) if len(a) == 2 and len(b) == 2 and a[1] == b[0] else None
        if name == "linear":
            return (a[0], b[0]) if len(a) == 2 and len(b) == 2 and a[1] == b[1] else None
        if name == "stack":
            return (2, *a) if a == b else None
        if name == "cat":
            return (a[0] + b[0], *a[1:]) if a and b and a[1:] == b[1:] else None
        if name.startswith("scatter"):
            return a if a == b and a else None
        if a == b or not b:
            return a
        return b if not a else None
    if arity == 0:
        return LOCAL_SHAPE
    (a,) = shapes
    if name in ("sum", "mean", "max", "norm"):
        return ()
    if name in ("mean0", "first"):
        return a[1:] if a else None
    if name == "flatten":
        return (math.prod(a),)
    if name == "T":
        return (a[1], a[0]) if len(a) == 2 else None
    if name == "softmax":
        return a if a else None
    if name == "mT":
        return (*a[:-2], a[-1], a[-2]) if len(a) >= 2 else None
    if name == "sum0":
        return a[1:] if a else None
    if name == "t":
        return (a[1], a[0]) if len(a) == 2 else None
    return a


def _collective_shape(fn: str, src: str, dst: str, shape: tuple[int, ...], n: int) -> tuple[int, ...] | None:
    """The local result shape on ``n`` ranks, or ``None`` where the call does not fit the shape."""

    def dim(kind: str) -> int:
        return int(kind[1])

    gathering = (fn == "all_gather") or (fn == "convert" and dst == "P" and src in ("V", "S0", "S1"))
    if gathering:
        if src == "V":
            return (n, *shape)
        if len(shape) <= dim(src):
            return None
        return tuple(s * n if i == dim(src) else s for i, s in enumerate(shape))
    scattering = fn == "reduce_scatter" or (fn == "convert" and src in ("R", "I") and dst in ("V", "S0", "S1"))
    if scattering:
        if dst == "V":
            return shape[1:] if shape and shape[0] == n else None
        if len(shape) <= dim(dst) or shape[dim(dst)] % n:
            return None
        return tuple(s // n if i == dim(dst) else s for i, s in enumerate(shape))
    return shape


@dataclass
class _Value:
    kinds: SpmdKinds
    shapes: Shapes
    is_param: bool = False


@dataclass
class _Builder:
    rng: random.Random
    axes: tuple[str, ...]
    meshes: tuple[dict[str, int], ...]
    ops: list[str]
    values: dict[str, _Value] = field(default_factory=dict)
    body: list[Statement] = field(default_factory=list)
    counter: int = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def pick_op(self, fitting: bool) -> tuple[Op, _Value] | None:
        names = self.ops
        for _ in range(30):
            name = self.rng.choice(names)
            arity = OPS[name][1]
            args = [self.choose() for _ in range(arity)]
            operands = [self.values[a] for a in args]
            shapes = []
            for m in range(len(self.meshes)):
                s = _op_shape(name, [o.shapes[m] for o in operands])
                if s is None:
                    break
                shapes.append(s)
            else:
                kinds = _guess(name, [o.kinds for o in operands], self.axes)
                if fitting and "X" in kinds.values():
                    continue
                return Op(self.fresh(), name, tuple(args)), _Value(kinds, tuple(shapes))
        return None

    def pick_collective(self, fitting: bool) -> tuple[Collective, _Value] | None:
        for _ in range(30):
            arg = self.choose()
            value = self.values[arg]
            axis = self.rng.choice(self.axes)
            fn = self.rng.choice(list(COLLECTIVES))
            pairs = COLLECTIVES[fn]
            if fitting:
                pairs = tuple(p for p in pairs if p[0] == value.kinds[axis] or (p[0] == "V" and value.kinds[axis] in ("S0", "S1")))
                if not pairs:
                    continue
            src, dst = self.rng.choice(pairs)
            shapes = []
            for m, mesh in enumerate(self.meshes):
                s = _collective_shape(fn, src, dst, value.shapes[m], mesh[axis])
                if s is None:
                    break
                shapes.append(s)
            else:
                kinds = {**value.kinds, axis: dst}
                return Collective(self.fresh(), fn, arg, axis, src, dst), _Value(kinds, tuple(shapes))
        return None

    def choose(self) -> str:
        """An operand: usually one of the latest values, so that the statements form a chain."""
        names = list(self.values)
        if len(names) > 2 and self.rng.random() < 0.6:
            return self.rng.choice(names[-2:])
        return self.rng.choice(names)

    def add(self, statement: Statement, value: _Value) -> None:
        self.body.append(statement)
        self.values[statement.target] = value


def _param_kinds(rng: random.Random, axes: tuple[str, ...]) -> SpmdKinds:
    weights = {"R": 4, "I": 1, "V": 2, "P": 2, "S0": 2, "S1": 1}
    return {axis: rng.choices(list(weights), list(weights.values()))[0] for axis in axes}


def _loss_tail(b: _Builder, out: str, fitting: bool) -> str:
    """Statements making a scalar loss of ``out``; its name.  Right: the loss ends P or I on every axis."""
    value = b.values[out]
    if value.shapes[0]:
        op = Op(b.fresh(), "sum", (out,))
        b.add(op, _Value(_guess("sum", [value.kinds], b.axes), tuple(() for _ in b.meshes)))
        current = op.target
    else:
        current = out
    for axis in b.axes:
        kind = b.values[current].kinds[axis]
        if fitting:
            choice = {"R": ("convert", "R", "P"), "W": ("convert", "R", "P"), "V": ("reinterpret", "V", "P"), "S0": ("reinterpret", "V", "P"),
                      "S1": ("reinterpret", "V", "P")}.get(kind)
        else:
            choice = b.rng.choice([None, ("reinterpret", "R", "P"), ("convert", "R", "P"), ("reinterpret", "V", "P"),
                                   ("all_reduce", "P", "R"), ("all_reduce", "P", "I")])
        if choice is None:
            continue
        fn, src, dst = choice
        call = Collective(b.fresh(), fn, current, axis, src, dst)
        b.add(call, _Value({**b.values[current].kinds, axis: dst}, b.values[current].shapes))
        current = call.target
    return current


def _differentiable(program: Program, name: str) -> bool:
    """Whether the value ``name`` depends on a parameter through differentiable statements (as run)."""
    carrying = {p for p, _ in program.params}
    for statement in program.body:
        if isinstance(statement, Branch):
            statement = statement.then if program.flag else statement.orelse
        if isinstance(statement, Op):
            if statement.name != "detach" and carrying.intersection(statement.args):
                carrying.add(statement.target)
            else:
                carrying.discard(statement.target)
        elif isinstance(statement, (InPlace, Loop)):
            if statement.arg in carrying:
                carrying.add(statement.target)
        elif statement.arg in carrying:
            carrying.add(statement.target)
        else:
            carrying.discard(statement.target)
    return name in carrying


def generate(seed: int | str, exclude: frozenset[str] = frozenset()) -> Program:
    """The program of ``seed``: the same seed gives the same program.

    Programs whose loss does not depend on a parameter (only detached values
    and constants) are drawn again: their ``backward()`` has nothing to do.
    ``exclude`` names ops (keys of :data:`OPS`) never to use, for example to
    look past a known bug.
    """
    for attempt in range(20):
        program = _generate(f"spmd-differential:{seed}:{attempt}", exclude)
        if _differentiable(program, program.loss):
            return program
    return program


def _generate(seed: str, exclude: frozenset[str]) -> Program:
    rng = random.Random(seed)
    axes = rng.choice([("tp",), ("tp",), ("dp", "tp")])
    meshes = MESHES[axes]
    b = _Builder(rng, axes, meshes, [name for name in OPS if name not in exclude])
    names = "abc"[: rng.choice([1, 2, 2, 3])]
    params = []
    for name in names:
        kinds = _param_kinds(rng, axes)
        params.append((name, tuple(kinds.items())))
        b.values[name] = _Value(kinds, tuple(LOCAL_SHAPE for _ in meshes), is_param=True)
    careful = rng.random() < 0.7  # most programs try to be right; the others draw freely
    for _ in range(rng.randint(2, 6)):
        fitting = careful and rng.random() < 0.9
        picked = b.pick_collective(fitting) if rng.random() < 0.35 else b.pick_op(fitting)
        if picked is not None:
            b.add(*picked)
    uses_flag = False
    if rng.random() < 0.3:  # a branch: the same name written by two ops
        first = b.pick_op(careful)
        second = b.pick_op(careful)
        if first and second and first[1].shapes == second[1].shapes:
            target = first[0].target
            orelse = replace(second[0], target=target)
            kinds = first[1].kinds if first[1].kinds == second[1].kinds else {a: "X" for a in axes}
            b.add(Branch(first[0], orelse), _Value(kinds, first[1].shapes))
            uses_flag = True
    if rng.random() < 0.3:  # an in-place update of a fresh copy
        made = [n for n, v in b.values.items() if not v.is_param]
        source = rng.choice(made or list(b.values))
        copy = Op(b.fresh(), "clone", (source,))
        b.add(copy, replace(b.values[source], is_param=False))
        others = [n for n, v in b.values.items()
                  if n != copy.target and (v.shapes == b.values[copy.target].shapes or not v.shapes[0])]
        other = rng.choice(others)
        op = rng.choice(INPLACE)
        b.body.append(InPlace(copy.target, op, other))
        kinds = _guess("mul" if op == "*=" else "add", [b.values[copy.target].kinds, b.values[other].kinds], axes)
        b.values[copy.target] = _Value(kinds, b.values[copy.target].shapes)
    if rng.random() < 0.25:  # a loop re-binding a fresh copy
        made = [n for n, v in b.values.items() if not v.is_param]
        source = rng.choice(made or list(b.values))
        copy = Op(b.fresh(), "clone", (source,))
        b.add(copy, replace(b.values[source], is_param=False))
        name = rng.choice(LOOP_OPS)
        shape = b.values[copy.target].shapes
        square = all(len(s) == 2 and s[0] == s[1] for s in shape)
        others = [n for n, v in b.values.items() if v.shapes == shape and (name != "matmul" or square)]
        if others:
            other = rng.choice(others)
            b.body.append(Loop(copy.target, name, other))
            kinds = _guess(name, [b.values[copy.target].kinds, b.values[other].kinds], axes)
            b.values[copy.target] = _Value(kinds, shape)
    if rng.random() < 0.25:  # a declared local variable
        made = [n for n, v in b.values.items() if not v.is_param]
        source = rng.choice(made or list(b.values))
        kinds = dict(b.values[source].kinds)
        for axis in axes:
            if kinds[axis] in ("X", "W", "Z") or rng.random() < 0.15:
                kinds[axis] = rng.choice(("R", "I", "V", "P"))
        declare = Declare(b.fresh(), source, tuple(kinds.items()))
        b.add(declare, _Value(kinds, b.values[source].shapes))
    made = [n for n, v in b.values.items() if not v.is_param]
    out = made[-1] if made and rng.random() < 0.9 else rng.choice(list(b.values))
    declared = dict(b.values[out].kinds)
    for axis in axes:
        if declared[axis] in ("X", "W", "Z") or (not careful and rng.random() < 0.3):
            declared[axis] = rng.choice(KINDS)
        if declared[axis] in ("S0", "S1") and len(b.values[out].shapes[0]) <= int(declared[axis][1]):
            declared[axis] = "V"
    b.values[out] = replace(b.values[out], kinds=declared)
    loss = _loss_tail(b, out, fitting=careful and rng.random() < 0.9)
    program = Program(axes, tuple(params), tuple(b.body), out, tuple(declared.items()), loss, rng.random() < 0.5,
                      uses_flag)
    return program._tidy(program)
