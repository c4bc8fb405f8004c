"""The parts of the collectives' and casts' docstrings that the rule core dictates.

For every call of the core (:data:`~spmd_types.typesystem.collectives.CALLS`),
the runtime function of that name in :data:`SOURCES` has a docstring that

* starts with the call's typed signature in double backticks,
  ``all_gather(x: src, axis, *, src: V | S(i) = V, dst: R | I) -> dst``;
* ends with :data:`TYPES_HEADER` and, indented under it, the table of the
  pairs it accepts, what runs forward and what runs backward.

Both are computed (:mod:`tools.docs.calls`); the rest of the docstring, the
prose and the per-rank diagrams, is written by hand.  :func:`render` returns
the sources with the computed parts put in, so ``help(all_gather)`` shows the
rules as the core has them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from spmd_types.typesystem import CALLS
from tools.docs import ROOT
from tools.docs.calls import text_table, typed_signature

__all__ = ["SOURCES", "TYPES_HEADER", "render", "update"]

SOURCES: tuple[str, ...] = ("spmd_types/_collectives.py", "spmd_types/_local.py")
"""The runtime modules that define the collectives and casts, relative to the repository root."""

TYPES_HEADER = "Accepted types, from the rule core (rewritten by ``make generated-docs``)::"


def _parameters(node: ast.FunctionDef) -> tuple[list[str], list[str]]:
    positional = [a.arg for a in node.args.posonlyargs + node.args.args]
    return positional, [a.arg for a in node.args.kwonlyargs]


def update(source: str, where: str) -> tuple[str, set[str]]:
    """``source`` with the generated parts of every call's docstring recomputed, and the calls it defines.

    ``where`` names the file in error messages.  A docstring whose first line
    is not a typed signature of its call, or that has no :data:`TYPES_HEADER`,
    is an error: the generator never overwrites prose.
    """
    lines = source.splitlines()
    calls = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name in CALLS]
    for node in reversed(calls):  # bottom up, so that the line numbers of the ones above stay valid
        doc = node.body[0]
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)
                and doc.end_lineno is not None):
            raise ValueError(f"{where}: {node.name} has no docstring")
        first, last = doc.lineno - 1, doc.end_lineno - 1
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        if not lines[first].startswith(f'{indent}"""``{node.name}(') or lines[last].strip() != '"""':
            raise ValueError(f"{where}:{first + 1}: the docstring of {node.name} must start with its typed signature "
                             f'in double backticks and end with """ on a line of its own')
        headers = [i for i in range(first, last) if lines[i].strip() == TYPES_HEADER]
        if len(headers) != 1:
            raise ValueError(f"{where}: the docstring of {node.name} needs one line {TYPES_HEADER!r}, its last section")
        lines[first] = f'{indent}"""``{typed_signature(node.name, *_parameters(node))}``'
        table = [f"{indent}    {row}" if row else "" for row in text_table(node.name)]
        lines[headers[0] + 1: last] = ["", *table]
    return "\n".join(lines) + "\n", {node.name for node in calls}


def render() -> dict[Path, str]:
    """Every file of :data:`SOURCES` with its docstrings' generated parts recomputed."""
    out = {}
    defined: set[str] = set()
    for source in SOURCES:
        path = ROOT / source
        out[path], found = update(path.read_text(), source)
        defined |= found
    if missing := sorted(set(CALLS) - defined):
        raise ValueError(f"no function in {', '.join(SOURCES)} documents {', '.join(missing)}")
    return out
