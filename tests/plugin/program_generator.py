"""Seeded generator of annotated multi-module programs, for checking that mypy's modes agree.

:func:`generate` writes a package of a few modules that import each other's
annotated functions, ``nn.Module`` classes (with annotated weights, inferred
attributes, subclasses across modules), module-level tensors and ``Spmd[...]``
aliases, sometimes in an import cycle; one module may use no SPMD annotations
at all.  Function bodies mix arithmetic, torch functions, collectives and
casts on the mesh axes ``dp`` and ``tp``, calls across modules, re-bound
variables, branches and loops.  Some of it is right and some is a bug: what
matters is not what the plugin reports but that it reports the same thing
however mypy ran.  The same seed gives the same program and the same edit
(:attr:`Project.edited`: a signature, an alias or a weight changed, a body
extended), so that an incremental run or the daemon can be checked after it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Final

AXES: Final = ("dp", "tp")
KINDS: Final = ("R", "I", "V", "P", "S0", "S1")
# The src and dst each collective accepts; a wrong src is drawn now and then, on purpose.
COLLECTIVES: Final = {
    "all_reduce": (("P", "V"), ("R", "I")),
    "all_gather": (("V", "S0"), ("R", "I")),
    "reduce_scatter": (("P",), ("V", "S0")),
    "convert": (("I", "R"), ("R", "V", "P")),
    "reinterpret": (("V", "I", "R"), ("P", "R", "V")),
}
_FUNCTIONS: Final = ("torch.relu({a})", "torch.exp({a})", "{a}.sum(0)", "{a}.transpose(0, 1)", "F.linear({a}, {b})",
                     "{a} * 2.0", "torch.zeros_like({a}) + {a}", "{a}.detach()", "torch.cat([{a}, {b}])")
_HEADER: Final = ("from __future__ import annotations", "", "from typing import Annotated, Final, Literal", "", "import torch",
                  "import torch.nn.functional as F", "from torch import Tensor, nn")
_SPMD_IMPORT: Final = ("from spmd_types import I, P, R, S, Spmd, V, all_gather, all_reduce, convert, reduce_scatter, "
                       "reinterpret")

SpmdType = dict[str, str]  # axis -> kind ("R", ..., "S0"); an axis left out is unknown
Call = tuple[str, list[SpmdType], SpmdType]  # a template with {a}, {b}, {flag}; parameter and result types


def annotation(spmd: SpmdType, base: str = "Tensor") -> str:
    """``Annotated[Tensor, R["dp"], V["tp"]]``, or the plain ``base`` when no axis is known."""
    if not spmd:
        return base
    markers = (f'S["{a}", {k[1]}]' if k.startswith("S") else f'{k}["{a}"]' for a, k in sorted(spmd.items()))
    return f"Annotated[{base}, {', '.join(markers)}]"


def _endpoint(kind: str) -> str:
    return f"S({kind[1]})" if kind.startswith("S") else kind


@dataclass
class Param:
    spmd: SpmdType
    alias: str | None = None  # spelled with this ``Spmd[...]`` alias instead of ``Annotated``

    def render(self) -> str:
        return self.alias or annotation(self.spmd)


@dataclass
class Function:
    name: str
    params: list[Param]  # ``x`` (and ``y``); a module-level function also takes ``flag: bool = False``
    result: SpmdType
    body: list[str] = field(default_factory=list)

    def render(self, method: bool) -> list[str]:
        params = ["self"] if method else []
        params += [f"{n}: {p.render()}" for n, p in zip(("x", "y"), self.params)]
        if not method:
            params.append("flag: bool = False")
        return [f"def {self.name}({', '.join(params)}) -> {annotation(self.result)}:", *(f"    {s}" for s in self.body)]


@dataclass
class Block:
    """An ``nn.Module``: an annotated weight, an inferred ``scale``, maybe an inner block, ``forward``, ``extra``."""

    name: str
    parent: Block | None  # subclassed, else ``nn.Module``
    weight: SpmdType
    inner: str | None
    forward: Function | None  # ``None``: inherited
    extra: Function

    def render(self) -> list[str]:
        base = self.parent.name if self.parent is not None else "nn.Module"
        lines = [f"class {self.name}({base}):", f"    w: {annotation(self.weight, 'nn.Parameter')}", "",
                 "    def __init__(self) -> None:", "        super().__init__()",
                 "        self.w = nn.Parameter(torch.empty(4, 4))", "        self.scale = torch.ones(4)"]
        if self.inner is not None:
            lines.append(f"        self.inner = {self.inner}()")
        for method in (self.forward, self.extra):
            if method is not None:
                lines += ["", *(f"    {line}" for line in method.render(method=True))]
        return lines


@dataclass
class Module:
    name: str
    plain: bool  # uses no SPMD annotations and does not import spmd_types
    imports: list[str] = field(default_factory=list)
    aliases: dict[str, SpmdType] = field(default_factory=dict)
    globals: dict[str, SpmdType] = field(default_factory=dict)  # declared module-level tensors
    blocks: list[Block] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)

    def exports(self) -> list[str]:
        names = [*self.aliases, *self.globals, *(f"H{g[1:]}" for g in self.globals)]
        return sorted(names + [b.name for b in self.blocks] + [f.name for f in self.functions])

    def render(self) -> str:
        lines = [*_HEADER, *(() if self.plain else (_SPMD_IMPORT,)), *self.imports, "", 'TP: Final = "tp"']
        for alias, spmd in self.aliases.items():
            text = ", ".join(f"{a}:{k}" for a, k in sorted(spmd.items()))
            lines.append(f'{alias} = Spmd[Tensor, Literal["{text}"]]')
        for name, spmd in self.globals.items():
            lines += [f"{name}: {annotation(spmd)} = torch.zeros(4)", f"H{name[1:]} = {name} * 2.0"]
        for block in self.blocks:
            lines += ["", "", *block.render()]
        for function in self.functions:
            lines += ["", "", *function.render(method=False)]
        return "\n".join(lines) + "\n"


@dataclass
class Project:
    """A generated package: module name -> source, before and after the edit."""

    package: str
    modules: dict[str, str]
    edited: dict[str, str]

    def files(self, edited: bool = False) -> dict[str, str]:
        """Relative path -> source of every file of the package."""
        sources = self.edited if edited else self.modules
        return {f"{self.package}/__init__.py": "", **{f"{self.package}/{m}.py": s for m, s in sources.items()}}


class _Builder:
    """Draws one program from ``rng``; remembers what each module defines, for later modules to use."""

    def __init__(self, rng: random.Random, package: str, n_modules: int) -> None:
        self.rng = rng
        self.package = package
        self.modules: list[Module] = []
        self.planned = {i: [f"f{i}_{k}" for k in range(rng.randint(1, 3))] for i in range(n_modules)}
        self.plain = rng.randrange(n_modules) if rng.random() < 0.3 else -1

    def spmd_type(self, allow_p: bool = True) -> SpmdType:
        kinds = KINDS if allow_p else tuple(k for k in KINDS if k != "P")
        return {a: self.rng.choice(kinds) for a in AXES if self.rng.random() < 0.8}

    def param(self, module: Module, allow_p: bool = True) -> Param:
        if module.plain:
            return Param({})
        aliases = [(n, t) for m in [*self.modules, module] for n, t in m.aliases.items()]
        if aliases and self.rng.random() < 0.25:
            name, spmd = self.rng.choice(aliases)
            return Param(dict(spmd), name)
        return Param(self.spmd_type(allow_p))

    def result(self, module: Module) -> SpmdType:
        return {} if module.plain else self.spmd_type()

    # -- bodies --------------------------------------------------------------------

    def body(self, env: dict[str, SpmdType], result: SpmdType, module: Module, calls: list[Call],
             block: Block | None) -> list[str]:
        rng = self.rng
        lines: list[str] = []
        locals_ = [n for n in env if not n[0].isupper()]
        flag = "flag" if block is None else "self.training"
        for step in range(rng.randint(2, 6)):
            target = rng.choice(locals_) if rng.random() < 0.3 else f"h{step}"
            expr, typ = self.expression(env, module, calls, block)
            roll = rng.random()
            if roll < 0.15:  # a branch whose arms may disagree
                other, _ = self.expression(env, module, calls, block)
                lines += [f"if {flag}:", f"    {target} = {expr}", "else:", f"    {target} = {other}"]
            elif roll < 0.22:  # a loop re-binding the variable
                lines += ["for _ in range(2):", f"    {target} = {expr}"]
            elif roll < 0.32 and not module.plain:  # a declared local
                declared = typ if rng.random() < 0.7 else self.spmd_type()
                target = f"d{step}"
                lines.append(f"{target}: {annotation(declared)} = {expr}")
                typ = declared
            else:
                lines.append(f"{target} = {expr}")
            env[target] = typ
            if target not in locals_:
                locals_.append(target)
        if rng.random() < 0.5:
            expr, _ = self.expression(env, module, calls, block)
            lines.append(f"return {expr}")
        else:
            fits = [n for n in locals_ if env[n] == result]
            lines.append(f"return {rng.choice(fits or locals_)}")
        return lines

    def expression(self, env: dict[str, SpmdType], module: Module, calls: list[Call],
                   block: Block | None) -> tuple[str, SpmdType]:
        rng = self.rng
        operands = dict(env)
        if block is not None:
            operands.update({"self.w": block.weight, "self.scale": {}})
        for m in self.modules:  # weights of blocks defined earlier
            for other in m.blocks:
                operands[f"{other.name}().w"] = other.weight
        names = sorted(operands)
        a = rng.choice([n for n in names if n in env and not n[0].isupper()] or names)
        b = rng.choice(names)
        roll = rng.random()
        if roll < 0.3:
            op = rng.choice(("+", "-", "*", "@"))
            return f"{a} {op} {b}", _join(operands[a], operands[b])
        if roll < 0.45:
            return rng.choice(_FUNCTIONS).format(a=a, b=b), dict(operands[a])
        if roll < 0.65 and not module.plain:
            return self.collective(a, operands[a])
        if calls and roll < 0.95:
            template, params, result = rng.choice(calls)
            # Mostly arguments of the declared types, where there are such.
            wants = [*params, {}, {}][:2]
            a, b = (self._fitting(operands, names, want, default) for want, default in zip(wants, (a, b)))
            return template.format(a=a, b=b, flag="flag" if block is None else "self.training"), dict(result)
        if block is not None and block.inner is not None:
            return f"self.inner({a})", {}
        return f"{a}.clone()", dict(operands[a])

    def _fitting(self, operands: dict[str, SpmdType], names: list[str], want: SpmdType, default: str) -> str:
        fits = [n for n in names if operands[n] == want]
        return self.rng.choice(fits) if fits and self.rng.random() < 0.7 else default

    def collective(self, name: str, typ: SpmdType) -> tuple[str, SpmdType]:
        rng = self.rng
        call = rng.choice(sorted(COLLECTIVES))
        srcs, dsts = COLLECTIVES[call]
        axis = rng.choice(AXES)
        src = typ[axis] if typ.get(axis) in srcs and rng.random() < 0.85 else rng.choice(srcs)
        dst = rng.choice(dsts)
        spelled_axis = "TP" if axis == "tp" and rng.random() < 0.3 else f'"{axis}"'
        return f"{call}({name}, {spelled_axis}, src={_endpoint(src)}, dst={_endpoint(dst)})", {**typ, axis: dst}

    # -- definitions ---------------------------------------------------------------

    def callables(self, module: Module, cyclic: dict[int, str]) -> list[Call]:
        """What ``module`` can call."""
        found: list[Call] = []
        for m in [*self.modules, module]:
            for function in m.functions:
                args = "{a}, {b}" if m is module else "{a}, {b}, {flag}"
                found.append((f"{function.name}({args})", [p.spmd for p in function.params], function.result))
            for block in m.blocks:
                forward = self.forward_of(block)
                found.append((f"{block.name}()({{a}})", [p.spmd for p in forward.params], forward.result))
                found.append((f"{block.name}().extra({{a}})", [block.extra.params[0].spmd], block.extra.result))
        for index, alias in cyclic.items():
            for later in self.planned[index]:  # not drawn yet: their types are unknown here
                found.append((f"{alias}.{later}({{a}}, {{b}})", [], {}))
        return found

    @staticmethod
    def forward_of(block: Block) -> Function:
        while block.forward is None:
            assert block.parent is not None  # a block without a parent defines forward
            block = block.parent
        return block.forward

    def module(self, index: int) -> Module:
        rng = self.rng
        module = Module(f"m{index}", plain=index == self.plain)
        module.imports = [f"from {self.package}.{m.name} import {', '.join(m.exports())}" for m in self.modules
                          if m.exports()]
        cyclic = {}
        later = [i for i in self.planned if i > index]
        if later and rng.random() < 0.4:  # an import cycle: a later module's functions, called lazily
            target = rng.choice(later)
            cyclic[target] = f"m{target}"
            module.imports.append(f"import {self.package}.m{target} as m{target}")
        if not module.plain:
            for k in range(rng.randint(0, 1)):
                module.aliases[f"A{index}_{k}"] = {a: rng.choice("RIVP") for a in AXES if rng.random() < 0.8} or {
                    "tp": "R"}
            for k in range(rng.randint(0, 1)):
                module.globals[f"G{index}_{k}"] = self.spmd_type(allow_p=False)
        for k in range(rng.randint(0, 2)):
            self.block(module, f"Block{index}_{k}")
        env_globals = {n: t for m in [*self.modules, module] for n, t in m.globals.items()}
        env_globals.update({f"H{n[1:]}": t for n, t in env_globals.items()})
        for name in self.planned[index]:
            function = Function(name, [self.param(module), self.param(module)], self.result(module))
            env = {"x": function.params[0].spmd, "y": function.params[1].spmd, **env_globals}
            function.body = self.body(env, function.result, module, self.callables(module, cyclic), None)
            module.functions.append(function)
        self.modules.append(module)
        return module

    def block(self, module: Module, name: str) -> None:
        rng = self.rng
        earlier = [b for m in [*self.modules, module] for b in m.blocks]
        parent = rng.choice(earlier) if earlier and not module.plain and rng.random() < 0.3 else None
        weight = parent.weight if parent is not None else ({} if module.plain else self.spmd_type(allow_p=False))
        inner = rng.choice(earlier).name if earlier and rng.random() < 0.4 else None
        extra = Function("extra", [self.param(module, allow_p=False)], self.result(module))
        block = Block(name, parent, weight, inner, None, extra)
        calls = self.callables(module, {})
        extra.body = self.body({"x": extra.params[0].spmd}, extra.result, module, calls, block)
        if parent is None or rng.random() < 0.5:
            inherited = self.forward_of(parent) if parent is not None else None
            params = inherited.params if inherited is not None else [self.param(module, allow_p=False)]
            result = inherited.result if inherited is not None else self.result(module)
            block.forward = Function("forward", params, result)
            block.forward.body = self.body({"x": params[0].spmd}, result, module, calls, block)
        module.blocks.append(block)


def _join(a: SpmdType, b: SpmdType) -> SpmdType:
    return {axis: kind for axis, kind in a.items() if b.get(axis, kind) == kind}


def _edit(rng: random.Random, modules: list[Module]) -> None:
    """Two of: change a signature, an alias or a weight, drop a function's annotations; extend a body."""
    functions = [f for m in modules for f in m.functions if not m.plain]
    aliases = [(m, name) for m in modules for name in m.aliases]
    blocks = [b for m in modules for b in m.blocks if not m.plain and b.weight]
    edits = ["signature", "body", "plain"] + ["alias"] * bool(aliases) + ["weight"] * bool(blocks)
    for edit in rng.sample(edits, 2):
        if edit == "signature" and functions:
            changed = rng.choice(functions)
            axis = rng.choice(AXES)
            kinds = [k for k in KINDS if k != changed.params[0].spmd.get(axis)]
            changed.params[0] = Param({**changed.params[0].spmd, axis: rng.choice(kinds)})
        elif edit == "plain" and functions:  # a function loses its SPMD annotations
            changed = rng.choice(functions)
            changed.params = [Param({}) for _ in changed.params]
            changed.result = {}
        elif edit == "body" and functions:
            rng.choice(functions).body.insert(0, f"e = {rng.choice('xy')} + {rng.choice('xy')}")
        elif edit == "alias":
            module, name = rng.choice(aliases)
            axis = rng.choice(AXES)
            module.aliases[name] = {**module.aliases[name], axis: rng.choice("RIVP")}
        elif edit == "weight":
            block = rng.choice(blocks)
            axis = rng.choice(sorted(block.weight))
            block.weight[axis] = rng.choice([k for k in KINDS if k not in ("P", block.weight[axis])])


def generate(seed: int, n_modules: int = 4) -> Project:
    """The program of ``seed``: a package ``gen<seed>`` of ``n_modules`` modules, and its edited version."""
    package = f"gen{seed}"
    builder = _Builder(random.Random(seed), package, n_modules)
    modules = [builder.module(i) for i in range(n_modules)]
    before = {m.name: m.render() for m in modules}
    _edit(random.Random(seed + 1_000_003), modules)
    return Project(package, before, {m.name: m.render() for m in modules})
