"""What the rule core says about one collective or cast, laid out for the documentation.

:func:`rows` lists every ``src``/``dst`` pair a call accepts, with the
primitive transitions it runs forward and the ones its backward runs, both
computed by the core (:func:`~spmd_types.typesystem.collectives.route` and
:func:`~spmd_types.typesystem.collectives.backward`).  :func:`text_table` lays
them out for a docstring, :func:`markdown_table` for a reference page, and
:func:`typed_signature` sums them up in one line.  Shards are shown as
``S(i)``, and as ``S(j)`` where a second dim is meant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spmd_types.typesystem import CALLS, Endpoint, I, P, R, S, Shard, Transition, V, backward, cost, route

__all__ = ["ENDPOINTS", "Row", "effects", "label", "markdown_table", "rows", "spell", "text_table", "typed_signature"]

ENDPOINTS: tuple[Endpoint, ...] = (R, I, V, P, S(0))
"""Every type a ``src`` or ``dst`` can be, in the order the tables list them (``S(0)`` standing for any shard)."""


def label(t: Endpoint) -> str:
    """``t`` as the docs write it: ``S(0)`` is ``S(i)``, ``S(1)`` is ``S(j)``."""
    return t.code.replace("S(0)", "S(i)").replace("S(1)", "S(j)")


def spell(t: Transition, arrow: str = "→") -> str:
    """``all_gather(S(i) → R)``."""
    return f"{t.call}({label(t.src)} {arrow} {label(t.dst)})"


@dataclass(frozen=True)
class Row:
    """One pair a call accepts: what runs forward, and what its backward runs."""

    src: Endpoint
    dst: Endpoint
    forward: tuple[Transition, ...]  # empty: the identity (redistribute to the same type)

    @property
    def backward(self) -> tuple[Transition, ...]:
        return tuple(backward(t) for t in reversed(self.forward))

    @property
    def effects(self) -> tuple[str, str]:
        return effects(self.forward)


def effects(steps: tuple[Transition, ...]) -> tuple[str, str]:
    """What the route ``steps`` does to the local data forward and backward (``all-reduce``, ``no-op``, ...)."""
    forward, _, back = cost(steps).partition(" forward, ")
    return forward, back.removesuffix(" in backward")


def rows(call: str) -> list[Row]:
    """Every pair ``call`` accepts, by ``src`` then ``dst`` in the order of :data:`ENDPOINTS`.

    Two shards are shown as ``S(i) -> S(j)``, two different dims.
    """
    found = []
    for src in ENDPOINTS:
        for dst in (*ENDPOINTS, S(1)) if isinstance(src, Shard) else ENDPOINTS:
            steps = route(call, src, dst)
            if steps is not None:
                found.append(Row(src, dst, steps))
    return found


def _chain(steps: Sequence[Transition], arrow: str) -> str:
    return ", ".join(spell(t, arrow) for t in steps) or "nothing"


def _kinds(ends: Sequence[Endpoint]) -> str:
    """The kinds of types among ``ends``, in table order: ``V | S(i)``."""
    kinds = {label(S(0) if isinstance(t, Shard) else t) for t in ends}
    return " | ".join(k for k in map(label, ENDPOINTS) if k in kinds)


def typed_signature(call: str, positional: Sequence[str], keywords: Sequence[str]) -> str:
    """The SPMD types of ``call``: ``all_gather(x: src, axis, *, src: V | S(i) = V, dst: R | I) -> dst``.

    ``positional`` and ``keywords`` are the names of the Python function's
    parameters.  Its first two are the tensor and the axis; the other
    positional ones are listed by name; of the keyword-only ones only ``src``
    and ``dst`` are shown, with the kinds of types they accept and their
    default.  A call without a ``src`` (``dst``) parameter has one fixed type,
    written in its place.
    """
    spec = CALLS[call]
    accepted = rows(call)
    ends = {"src": ([row.src for row in accepted], spec.src_default),
            "dst": ([row.dst for row in accepted], spec.dst_default)}
    shown = {}
    for name, (types, default) in ends.items():
        if name in keywords:
            shown[name] = f"{name}: {_kinds(types)}" + (f" = {label(default)}" if default is not None else "")
    tensor, axis, *others = positional
    params = [f"{tensor}: {'src' if 'src' in shown else _kinds(ends['src'][0])}", axis, *others]
    if shown:
        params += ["*", *shown.values()]
    result = "dst" if "dst" in shown else _kinds(ends["dst"][0])
    return f"{call}({', '.join(params)}) -> {result}"


def text_table(call: str) -> list[str]:
    """The pairs ``call`` accepts as plain text.

    A call that only runs other calls (``redistribute``) lists the pairs by
    the call each runs, whose own table gives the backward.  Any other lists
    each pair on two lines: the routes forward and backward, then (in
    parentheses) what they do to the local data.
    """
    accepted = rows(call)
    if all(t.call != call for row in accepted for t in row.forward):
        groups: dict[str, list[str]] = {"runs": ["src -> dst"]}  # the header first
        for row in accepted:
            runs = ", then ".join(t.call for t in row.forward) or "nothing"
            groups.setdefault(runs, []).append(f"{label(row.src)} -> {label(row.dst)}")
        width = max(map(len, groups))
        return [f"{runs:<{width}}  {', '.join(pairs)}" for runs, pairs in groups.items()]
    table = [("src", "dst", "forward", "backward")]
    for row in accepted:
        forward, back = row.effects
        table.append((label(row.src), label(row.dst), _chain(row.forward, "->"), _chain(row.backward, "->")))
        table.append(("", "", f"({forward})", f"({back})"))
    widths = [max(len(line[k]) for line in table) for k in range(3)]
    return [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in table]


def markdown_table(call: str) -> list[str]:
    """The pairs ``call`` accepts as a Markdown table."""
    out = ["| src | dst | runs | forward | backward runs | backward |", "|---|---|---|---|---|---|"]
    for row in rows(call):
        forward, back = row.effects
        out.append(f"| {label(row.src)} | {label(row.dst)} | {_chain_code(row.forward)} | {forward} | "
                   f"{_chain_code(row.backward)} | {back} |")
    return out


def _chain_code(steps: Sequence[Transition]) -> str:
    return ", then ".join(f"`{spell(t)}`" for t in steps) or "nothing"
