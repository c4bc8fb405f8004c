"""What a module's names refer to, and how to name a function in it without shadowing anything.

A rewrite reads names (``tensor_parallel.copy_to_tensor_model_parallel_region``
is a function of ``megatron.core.tensor_parallel``) and writes names
(``spmd_types.all_reduce``, which the module must then be able to reach).
libcst's :class:`~libcst.metadata.QualifiedNameProvider` does the first through
the module's imports, except that it leaves relative imports relative; here
they are resolved against the file's directory, whose trailing components
spell its package (``.../megatron/core/tensor_parallel/layers.py`` is in
``megatron.core.tensor_parallel``, whether or not ``megatron`` has an
``__init__.py``).

:class:`Namer` does the second: it reuses an import the module already has,
else adds one, and never binds a name the module already uses.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.helpers import get_full_name_for_node
from libcst.metadata import Scope

__all__ = ["Binding", "Namer", "Resolved", "package_of", "resolve", "top_level_bindings"]


def package_of(path: PurePath) -> tuple[str, ...]:
    """The package a file at ``path`` is in, as far as its directories are identifiers (may be empty)."""
    parts: list[str] = []
    for part in reversed(path.parent.parts):
        if not part.isidentifier():
            break
        parts.append(part)
    return tuple(reversed(parts))


@dataclass(frozen=True)
class Resolved:
    """A dotted name; ``anchored`` when it is absolute, not when it came from a relative import.

    The package of a relative import is only known as far as the file's
    directories go, so such a name *ends* with the real full name, which
    :meth:`candidates` tries from the longest.
    """

    parts: tuple[str, ...]
    anchored: bool

    def candidates(self) -> Iterator[str]:
        """The full names it may be, longest first (one for an absolute name)."""
        if self.anchored:
            yield ".".join(self.parts)
            return
        for start in range(len(self.parts)):
            yield ".".join(self.parts[start:])


def resolve(qualified: str, package: tuple[str, ...]) -> Resolved | None:
    """``qualified`` as libcst reports it (``.mappings.f`` for a relative import), made absolute.

    ``None`` when a relative import climbs above the directories known.
    """
    dots = len(qualified) - len(qualified.lstrip("."))
    if dots == 0:
        return Resolved(tuple(qualified.split(".")), anchored=True)
    if dots - 1 > len(package):
        return None
    base = package[: len(package) - (dots - 1)]
    rest = tuple(part for part in qualified[dots:].split(".") if part)
    return Resolved(base + rest, anchored=False)


@dataclass(frozen=True)
class Binding:
    """A name that one top-level import binds, and the modules reachable through it.

    ``import a.b.c`` binds ``a`` to module ``a`` and makes ``a.b`` and
    ``a.b.c`` reachable as its attributes; ``from m import x as y`` binds
    ``y`` to ``m.x``.
    """

    name: str
    target: str
    reachable: tuple[str, ...]


@dataclass
class _Names:
    """What :class:`Namer` knows of a module's names: those in use, and what imports bind.

    ``bindings`` are the names imports bind (the module's own, unambiguous
    ones, and those this rewrite adds); ``added`` the modules this rewrite
    imports whole (``import spmd_types``), which full names then reach.
    """

    taken: set[str]
    bindings: list[Binding]
    added: list[Binding] = field(default_factory=list)
    spelled: dict[str, str] = field(default_factory=dict)

    def copy(self) -> _Names:
        return _Names(set(self.taken), list(self.bindings), list(self.added), dict(self.spelled))

    def choose(self, full_name: str, imports: list[tuple[str, str | None]]) -> str | None:
        """How to spell ``full_name``, recording the names and the import the choice adds; ``None``: no way."""
        module, _, name = full_name.rpartition(".")
        for binding in self.bindings:
            if binding.target == full_name:
                return binding.name
        for binding in self.bindings:
            if module in binding.reachable:
                return binding.name + full_name[len(binding.target):]
        if name not in self.taken:
            self.taken.add(name)
            self.bindings.append(Binding(name, full_name, (full_name,)))
            imports.append((module, name))
            return name
        if any(module in binding.reachable for binding in self.added):
            return full_name
        top = module.partition(".")[0]
        if top not in self.taken:
            self.taken.add(top)
            self.added.append(Binding(top, top, _prefixes(module)))
            imports.append((module, None))
            return full_name
        return None


class Namer:
    """Spells full names (``spmd_types.all_reduce``) as expressions valid in one module.

    In order of preference: a name a top-level import already binds to it,
    or to its module (``spmd.all_reduce`` after ``import spmd_types as spmd``),
    provided nothing else in the module binds that name; else a new
    ``from module import name`` if no scope of the module uses that name;
    else a new ``import module``, written out in full, if its first component
    is as free.  New imports are scheduled on the codemod ``context``
    (libcst's :class:`AddImportsVisitor` adds them afterwards).
    """

    def __init__(self, module: cst.Module, scopes: Collection[Scope], context: CodemodContext) -> None:
        self._context = context
        counts = _binding_counts(scopes)
        bindings = [b for b in top_level_bindings(module) if counts.get(b.name) == 1]
        self._names = _Names(_used_names(scopes), bindings)

    def spell(self, full_names: Sequence[str]) -> list[cst.BaseExpression] | None:
        """An expression for each of ``full_names`` (``module.function``), scheduling the imports needed.

        ``None``, with nothing scheduled, when one of them cannot be spelled
        without shadowing a name the module uses.
        """
        names = self._names.copy()
        imports: list[tuple[str, str | None]] = []
        for full_name in full_names:
            if full_name not in names.spelled:
                text = names.choose(full_name, imports)
                if text is None:
                    return None
                names.spelled[full_name] = text
        self._names = names
        for module, name in imports:
            AddImportsVisitor.add_needed_import(self._context, module, name)
        return [cst.parse_expression(names.spelled[full_name]) for full_name in full_names]


def _used_names(scopes: Collection[Scope]) -> set[str]:
    """The names any scope binds or reads (for a string annotation, every identifier in it)."""
    used: set[str] = set()
    for scope in scopes:
        used.update(assignment.name.partition(".")[0] for assignment in scope.assignments)
        for access in scope.accesses:
            node = access.node
            if isinstance(node, cst.Name):
                used.add(node.value)
            elif isinstance(node, cst.SimpleString):
                used.update(re.findall(r"[^\W\d]\w*", node.value))
    return used


def _prefixes(dotted: str) -> tuple[str, ...]:
    parts = dotted.split(".")
    return tuple(".".join(parts[: n + 1]) for n in range(len(parts)))


def top_level_bindings(module: cst.Module) -> Iterator[Binding]:
    """What each top-level absolute import binds, in order: ``import torch.nn as nn`` binds ``nn`` to ``torch.nn``.

    Relative imports are left out: a file's package is known only as far as
    its directories go, so the full names they bind are not.
    """
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    dotted = get_full_name_for_node(alias.name)
                    if dotted is None:
                        continue
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        yield Binding(alias.asname.name.value, dotted, (dotted,))
                    else:
                        top = dotted.partition(".")[0]
                        yield Binding(top, top, _prefixes(dotted))
            elif (isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None
                  and not isinstance(small.names, cst.ImportStar)):
                source = get_full_name_for_node(small.module)
                if source is None:
                    continue
                for alias in small.names:
                    imported = get_full_name_for_node(alias.name)
                    if imported is None:
                        continue
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(bound, cst.Name):
                        target = f"{source}.{imported}"
                        yield Binding(bound.value, target, (target,))


def _binding_counts(scopes: Collection[Scope]) -> Mapping[str, int]:
    """How many places bind each name, in any scope; imports inside functions count too."""
    counts: dict[str, int] = {}
    for scope in scopes:
        for assignment in scope.assignments:
            counts[assignment.name] = counts.get(assignment.name, 0) + 1
    return counts

