"""The tables of ``docs/type-system.md``, computed from the rule core.

Every table is computed (the join is *evaluated*, not transcribed), so the page
cannot drift from the rules.  The page marks each table with
``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name -->``;
:func:`update` re-renders those regions and leaves the prose around them alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from spmd_types.typesystem import (
    CALLS,
    OPS,
    UNKNOWN,
    WEAK,
    ZERO,
    AxisType,
    Code,
    Constant,
    Endpoint,
    I,
    Operand,
    OpRule,
    P,
    R,
    Result,
    SpmdType,
    V,
    apply_op,
    backward,
    gradient_type,
    primitive_transitions,
    route,
)
from tools.docs import ROOT
from tools.docs.calls import ENDPOINTS, label, rows, spell

__all__ = ["DOC", "TABLES", "render", "update"]

DOC = ROOT / "docs" / "type-system.md"

_OPERANDS: tuple[AxisType | None, ...] = (R, I, V, P, WEAK, ZERO, None)


def _label(kind: AxisType | None) -> str:
    return "unknown" if kind is None else kind.code


def _operand(param: str, kind: AxisType | None) -> Operand:
    if kind is None:
        return Operand(param, UNKNOWN)
    if isinstance(kind, Constant):
        return Operand(param, SpmdType(default=kind))
    return Operand(param, SpmdType({"a": kind}))


def _cell(rule: OpRule, left: AxisType | None, right: AxisType | None) -> str:
    outcome = apply_op(rule, [_operand("x", left), _operand("y", right)])
    if outcome.violations:
        return f"`{outcome.violations[0].code.value}`"
    result = outcome.result.get("a")
    return _label(result)


def _grid(rule: OpRule, title: str) -> str:
    header = f"| {title} | " + " | ".join(_label(k) for k in _OPERANDS) + " |"
    lines = [header, "|" + "---|" * (len(_OPERANDS) + 1)]
    for left in _OPERANDS:
        cells = " | ".join(_cell(rule, left, right) for right in _OPERANDS)
        lines.append(f"| **{_label(left)}** | {cells} |")
    return "\n".join(lines)


def join_tables() -> str:
    """The result of ``x op y`` on one axis for every pair of operand types."""
    shapes = [
        ("Linear, `x + y`", OpRule(terms=(("x",), ("y",)))),
        ("Multilinear, `x * y`", OpRule(terms=(("x", "y"),))),
        ("Not linear in `y`, `x / y`", OpRule(terms=(("x",),), nonlinear=("y",))),
        ("Selector `y`, `x[y]`", OpRule(terms=(("x",),), selectors=("y",))),
        ("Non-linear, `f(x, y)`", OpRule()),
    ]
    corner = "x \\\\ y"
    return "\n\n".join(f"**{title}** (rows: `x`, columns: `y`)\n\n{_grid(rule, corner)}" for title, rule in shapes)


def _short(name: str) -> str:
    return name.replace("torch.nn.functional.", "F.").replace("torch.Tensor.", "Tensor.")


def _structure(rule: OpRule) -> str:
    if rule.result in (Result.WEAK, Result.ZERO, Result.FRESH):
        return {"weak": "a constant", "zero": "zeros", "fresh": "new data (unknown)"}[rule.result.value]
    if rule.result is Result.DETACH:
        return "`input` without gradient (R, I become weak)"
    if rule.result is Result.COPY:
        return "`data` without gradient (R, I become weak); a Python value is a constant"
    if rule.result is Result.TRAINABLE:
        return "`data`, a constant becoming unknown (it will be trained)"
    if not rule.terms:
        return "—"
    joiner = " * " if not rule.sequence_product else " * … * "
    terms = [joiner.join(term) if len(term) > 1 or rule.sequence_product else term[0] for term in rule.terms]
    return "`" + " + ".join(terms) + "`"


def op_table() -> str:
    """Every registered op, grouped by identical rule."""
    groups: dict[OpRule, list[str]] = {}
    for name, rule in OPS.items():
        groups.setdefault(rule, []).append(_short(name))
    lines = [
        "| ops | class | sum of products | not linear in | selectors | ignored |",
        "|---|---|---|---|---|---|",
    ]
    order = ["linear", "multilinear", "linear + multilinear", "non-linear"]
    ranked = sorted(groups.items(), key=lambda item: (
        order.index(item[0].linearity) if item[0].linearity in order else len(order), sorted(item[1])[0]))
    for rule, names in ranked:
        ops = ", ".join(f"`{n}`" for n in sorted(names))
        lines.append(
            f"| {ops} | {rule.linearity} | {_structure(rule)} | {', '.join(rule.nonlinear + rule.nonlinear_if) or ''}"
            f" | {', '.join(rule.selectors)} | {', '.join(rule.ignored)} |"
        )
    return "\n".join(lines)


def _direct(call: str, src: Endpoint, dst: Endpoint) -> bool:
    """Whether ``call`` goes from ``src`` to ``dst`` without first taking a V input as partial."""
    steps = route(call, src, dst)
    if not steps:
        return False
    return call == "reinterpret" or str(steps[0]) != "reinterpret(V -> P)"


def transition_matrix() -> str:
    """Which calls go from each type to each other type."""
    lines = ["| src \\ dst | " + " | ".join(label(e) for e in ENDPOINTS) + " |",
             "|" + "---|" * (len(ENDPOINTS) + 1)]
    for src in ENDPOINTS:
        cells = []
        for dst in ENDPOINTS:
            calls = [c for c in CALLS if c != "redistribute" and _direct(c, src, dst)]
            cells.append(", ".join(f"`{c}`" for c in calls) or ("—" if src == dst else ""))
        lines.append(f"| **{label(src)}** | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def forward_backward() -> str:
    """Every primitive transition and the transition its backward performs."""
    lines = ["| forward | does | backward | does |", "|---|---|---|---|"]
    for t in primitive_transitions((0,)):
        b = backward(t)
        lines.append(f"| `{spell(t)}` | {t.effect} | `{spell(b)}` | {b.effect} |")
    return "\n".join(lines)


def calls_table() -> str:
    """Each collective and cast: defaults, accepted pairs, and their cost (the identities left out)."""
    lines = ["| call | src default | dst default | src → dst: forward, backward |", "|---|---|---|---|"]
    for spec in CALLS.values():
        pairs = [f"{label(row.src)}→{label(row.dst)}: {', '.join(row.effects)}"
                 for row in rows(spec.name) if row.forward]
        src_default = label(spec.src_default) if spec.src_default is not None else "required"
        dst_default = label(spec.dst_default) if spec.dst_default is not None else "required"
        lines.append(f"| `{spec.name}` | {src_default} | {dst_default} | {'<br>'.join(pairs)} |")
    return "\n".join(lines)


def duality_table() -> str:
    """Each type and the type of its gradient."""
    lines = ["| type | gradient |", "|---|---|"]
    for t in ENDPOINTS:
        lines.append(f"| {label(t)} | {label(gradient_type(t))} |")
    return "\n".join(lines)


def error_codes() -> str:
    """The error codes and what each is for."""
    return "\n".join(["| code | for |", "|---|---|"] + [f"| `{c.value}` | {c.description} |" for c in Code])


TABLES: dict[str, Callable[[], str]] = {
    "duality": duality_table,
    "join": join_tables,
    "ops": op_table,
    "transitions": transition_matrix,
    "forward-backward": forward_backward,
    "calls": calls_table,
    "error-codes": error_codes,
}

_REGION = re.compile(r"(<!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- END GENERATED: (?P=name) -->)",
                     re.DOTALL)


def update(text: str) -> str:
    """``text`` with every generated region re-rendered."""

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in TABLES:
            raise KeyError(f"unknown generated table {name!r}; known: {', '.join(TABLES)}")
        return f"{match.group(1)}{TABLES[name]()}\n{match.group(4)}"

    return _REGION.sub(replace, text)


def render() -> dict[Path, str]:
    """The page with every generated table re-rendered."""
    return {DOC: update(DOC.read_text())}
