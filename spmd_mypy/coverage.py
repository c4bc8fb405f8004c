"""``spmd-check --coverage``: how much of each function the SPMD types reach, and where they stop.

Gradual typing accepts what it does not know, silently: a helper without
annotations returns ``Any``, a ``typing.cast`` forgets the SPMD type, a module
taken from a ``ModuleDict`` loop is an ``nn.Module`` whose result is ``Any``.
Nothing there is checked, and nothing says so.  This module measures it from
what mypy (with the plugin) inferred, after the run:

* per function, its *tensor expressions* (every expression whose type is a
  tensor: names, calls, operators, attributes, subscripts) and how many of
  them have a *known* SPMD type (at least one axis known);
* each place where a type is *lost*: the expression where a value with a known
  SPMD type (or a tensor) becomes ``Any`` or a tensor of unknown SPMD type, or
  where an unknown one enters the function.  :data:`KINDS` lists the kinds.

The plugin is not involved: its results are in the expression types (the SPMD
type rides in each type's side channel even where mypy's option
``allow_redefinition`` is off), which mypy keeps only when asked
(:func:`spmd_mypy.compat.check_with_types`), so a run without ``--coverage``
pays nothing.  The report is a table (:func:`render`) and a JSON document
(:func:`as_json`, the file of ``--coverage-report``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from mypy.nodes import (
    AssignmentStmt,
    CallExpr,
    CastExpr,
    Decorator,
    Expression,
    ExpressionStmt,
    ForStmt,
    FuncDef,
    IndexExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    OverloadedFuncDef,
    RefExpr,
)
from mypy.types import AnyType, CallableType, Instance, Type, TypeOfAny, UnionType, get_proper_type

from spmd_mypy.compat import statements_in, subexpressions
from spmd_mypy.encoding import Divergent, Encoder, is_tensor
from spmd_mypy.fullnames import MODULE
from spmd_mypy.report import spell

__all__ = ["KINDS", "FileCoverage", "FunctionCoverage", "Loss", "as_json", "measure", "render"]

KINDS: Final = {
    "unchecked function": "a function without annotations: mypy does not check its body",
    "unannotated helper": "a call of a function without annotations: its result is Any",
    "module loop": "a call of a module taken from a loop over a ModuleDict or ModuleList: Any",
    "untyped module": "a call of a module that mypy knows only as nn.Module: Any",
    "any result": "a call whose result is Any (an untyped library, an Any-typed callee)",
    "plain result": "a call whose result is a tensor without SPMD type, from SPMD-typed arguments",
    "cast": "typing.cast: the result has the cast's type, without SPMD type",
    "untyped container": "an element of a container whose element type is Any or a plain tensor",
    "plain parameter": "a parameter annotated as a tensor without SPMD type",
    "any parameter": "a parameter annotated Any",
    "plain attribute": "an attribute declared as a tensor without SPMD type",
}
"""Each kind of place where an SPMD type is lost, and what it is."""

_MODULE_CONTAINERS: Final = frozenset({"torch.nn.modules.container.ModuleDict", "torch.nn.modules.container.ModuleList",
                                       "torch.nn.modules.container.Sequential"})


@dataclass(frozen=True)
class Loss:
    """One place where an SPMD type is lost: its line, its kind (a key of :data:`KINDS`) and what it is."""

    line: int
    kind: str
    detail: str


@dataclass
class FunctionCoverage:
    """One function: its tensor expressions, how many have a known SPMD type, and the losses in it."""

    name: str
    line: int
    tensors: int = 0
    known: int = 0
    losses: list[Loss] = field(default_factory=list)

    @property
    def share(self) -> float | None:
        """The share of tensor expressions with a known SPMD type; ``None`` without tensor expressions."""
        return self.known / self.tensors if self.tensors else None


@dataclass
class FileCoverage:
    path: str
    functions: list[FunctionCoverage]


def measure(path: str, tree: MypyFile, types: Mapping[Expression, Type]) -> FileCoverage:
    """The coverage of every function of ``tree``, in source order; ``types`` holds mypy's expression types."""
    functions = sorted(_functions(tree), key=lambda f: f.line)
    nested = {f: [g for g in map(_function_of, statements_in(f)) if g is not None] for f in functions}
    out = []
    for func in functions:
        inner = {id(e) for g in nested[func] for e in subexpressions(g)}
        own = [e for e in subexpressions(func) if id(e) not in inner]
        out.append(_measure_function(func, own, types, tree.fullname))
    return FileCoverage(path, out)


def _functions(tree: MypyFile) -> Iterable[FuncDef]:
    for node in statements_in(tree):
        func = _function_of(node)
        if func is not None and not func.name.startswith("__mypy-") and func.end_line is not None:
            yield func  # not the methods mypy's plugins add (a dataclass's __init__ has no end line)


def _function_of(node: object) -> FuncDef | None:
    if isinstance(node, FuncDef):
        return node
    if isinstance(node, Decorator):
        return node.func
    if isinstance(node, OverloadedFuncDef) and node.impl is not None:
        return _function_of(node.impl)
    return None


def _measure_function(
    func: FuncDef, own: list[Expression], types: Mapping[Expression, Type], module: str
) -> FunctionCoverage:
    name = func.fullname.removeprefix(module + ".") if func.fullname else func.name
    result = FunctionCoverage(name, func.line)
    if func.is_dynamic() and not any(e in types and _is_tensor(types[e]) for e in own):
        result.losses.append(Loss(func.line, "unchecked function", f"{func.name} has no annotations"))
        return result
    result.losses.extend(_parameter_losses(func))
    loops = _module_loop_names(func, types)
    statements = list(statements_in(func))
    # An unused value loses nothing; an assignment target is where a value goes, not where one is lost.
    skipped = {id(node.expr) for node in statements if isinstance(node, ExpressionStmt)}
    skipped.update(id(lvalue) for node in statements if isinstance(node, AssignmentStmt) for lvalue in node.lvalues)
    losses = set()
    for expr in own:
        typ = types.get(expr)
        if typ is None:
            continue
        if _is_tensor(typ):
            result.tensors += 1
            result.known += _known(typ)
        loss = _loss(expr, typ, types, loops) if id(expr) not in skipped else None
        if loss is not None:
            losses.add(loss)
    result.losses.extend(sorted(losses, key=lambda loss: (loss.line, loss.kind, loss.detail)))
    return result


def _is_tensor(typ: Type) -> bool:
    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        return any(_is_tensor(item) for item in proper.items)
    return is_tensor(proper)


def _known(typ: Type | None) -> bool:
    """Whether a value of type ``typ`` has an SPMD type known on some axis."""
    if typ is None:
        return False
    read = Encoder.read(typ)
    return isinstance(read, Divergent) or (read is not None and len(read) > 0)


def _is_any(typ: Type | None) -> bool:
    return isinstance(get_proper_type(typ), AnyType)


def _parameter_losses(func: FuncDef) -> list[Loss]:
    signature = func.type
    if not isinstance(signature, CallableType):
        return []
    losses = []
    pairs = list(zip(signature.arg_names, signature.arg_types))
    if pairs and pairs[0][0] in ("self", "cls"):
        pairs = pairs[1:]
    for name, typ in pairs:
        proper = get_proper_type(typ)
        if isinstance(proper, AnyType) and proper.type_of_any == TypeOfAny.explicit:
            losses.append(Loss(func.line, "any parameter", f"parameter {name} is Any"))
        elif _is_tensor(proper) and not _known(proper):
            losses.append(Loss(func.line, "plain parameter", f"parameter {name}: {proper} has no SPMD type"))
    return losses


def _module_loop_names(func: FuncDef, types: Mapping[Expression, Type]) -> set[str]:
    """The names that ``for`` loops of ``func`` bind to the modules of a ModuleDict or ModuleList."""
    names: set[str] = set()
    for node in statements_in(func):
        if not isinstance(node, ForStmt):
            continue
        iterable = node.expr
        if isinstance(iterable, CallExpr) and isinstance(iterable.callee, MemberExpr):
            iterable = iterable.callee.expr  # layers.values(), layers.items()
        proper = get_proper_type(types.get(iterable))
        if isinstance(proper, Instance) and any(base.fullname in _MODULE_CONTAINERS for base in proper.type.mro):
            names.update(e.name for e in subexpressions(node.index) if isinstance(e, NameExpr))
    return names


def _loss(expr: Expression, typ: Type, types: Mapping[Expression, Type], loops: set[str]) -> Loss | None:
    """The loss at ``expr`` (of type ``typ``), if the SPMD type is lost there."""
    if isinstance(expr, CastExpr):
        if _is_tensor(typ) or _is_tensor_or_any(types.get(expr.expr)):
            return Loss(expr.line, "cast", f"cast({expr.type}, {spell(expr.expr)})")
        return None
    lost = _is_any(typ) or (_is_tensor(typ) and not _known(typ))
    if not lost:
        return None
    if isinstance(expr, CallExpr) and expr.analyzed is None:  # cast(...) is measured as its CastExpr
        return _call_loss(expr, typ, types, loops)
    if isinstance(expr, IndexExpr):
        base = get_proper_type(types.get(expr.base))
        if isinstance(base, Instance) and not is_tensor(base) and any(_is_tensor_or_any(a) for a in base.args):
            return Loss(expr.line, "untyped container", f"{spell(expr)} of {base}")
        return None
    if isinstance(expr, MemberExpr) and _is_tensor(typ) and not _is_any(types.get(expr.expr)):
        receiver = get_proper_type(types.get(expr.expr))
        if not (isinstance(receiver, Instance) and is_tensor(receiver)):  # x.T, x.grad: the op rules' business
            return Loss(expr.line, "plain attribute", f"{spell(expr)}: {typ}")
    return None


def _call_loss(expr: CallExpr, typ: Type, types: Mapping[Expression, Type], loops: set[str]) -> Loss | None:
    inputs = list(expr.args)
    if isinstance(expr.callee, MemberExpr):
        inputs.append(expr.callee.expr)
    input_types = [types.get(e) for e in inputs]
    shown = spell(expr)
    if _is_any(typ):
        if not any(_is_tensor(t) for t in input_types if t is not None):
            return None
        callee = get_proper_type(types.get(expr.callee))
        if isinstance(callee, Instance) and callee.type.has_base(MODULE):
            if isinstance(expr.callee, NameExpr) and expr.callee.name in loops:
                return Loss(expr.line, "module loop", shown)
            return Loss(expr.line, "untyped module", shown)
        node = expr.callee.node if isinstance(expr.callee, RefExpr) else None
        func = _function_of(node)
        if func is not None and func.is_dynamic():
            return Loss(expr.line, "unannotated helper", shown)
        return Loss(expr.line, "any result", shown)
    if any(_known(t) for t in input_types):
        return Loss(expr.line, "plain result", shown)
    return None


def _is_tensor_or_any(typ: Type | None) -> bool:
    return typ is not None and (_is_any(typ) or _is_tensor(typ))


# -- the report -------------------------------------------------------------------------


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{round(100 * share)}%"


def totals(files: Iterable[FileCoverage]) -> tuple[int, int, int]:
    """Tensor expressions, those with a known SPMD type, and losses, over ``files``."""
    functions = [f for file in files for f in file.functions]
    return (sum(f.tensors for f in functions), sum(f.known for f in functions),
            sum(len(f.losses) for f in functions))


def render(files: list[FileCoverage], out: TextIO) -> None:
    """The table: per file, per function, its share of typed tensor expressions and each loss under it."""
    print("\nSPMD coverage (tensor expressions with a known SPMD type, and where types are lost):", file=out)
    for file in files:
        print(f"\n{file.path}", file=out)
        for func in file.functions:
            print(f"  line {func.line:<5} {func.name:<40} {func.known:>4}/{func.tensors:<4} {_percent(func.share):>4}",
                  file=out)
            for loss in func.losses:
                print(f"      line {loss.line:<5} {loss.kind}: {loss.detail}", file=out)
    tensors, known, losses = totals(files)
    print(f"\n{known} of {tensors} tensor expressions have a known SPMD type "
          f"({_percent(known / tensors if tensors else None)}); {losses} place{'s' if losses != 1 else ''} "
          f"where types are lost.", file=out)


def as_json(files: list[FileCoverage]) -> dict[str, Any]:
    """The report as a JSON document (the format of ``--coverage-report``, documented in docs/adopting.md)."""
    tensors, known, losses = totals(files)
    return {
        "version": 1,
        "tensor_expressions": tensors,
        "known": known,
        "losses": losses,
        "kinds": KINDS,
        "files": [
            {"path": file.path, "functions": [
                {"name": f.name, "line": f.line, "tensor_expressions": f.tensors, "known": f.known,
                 "losses": [{"line": loss.line, "kind": loss.kind, "detail": loss.detail} for loss in f.losses]}
                for f in file.functions
            ]}
            for file in files
        ],
    }
