"""What is known about each file mypy checks: its imports, returns, assignments, where no autograd runs,
and which functions are checked in global SPMD.

Each fact is computed from the file's parse tree when first asked for
(:mod:`spmd_mypy.compat` walks the tree) and kept in the session while mypy
keeps the same parse of the file.
"""

from __future__ import annotations

import functools

from mypy.nodes import Context, Expression, Import, ImportAll, ImportFrom, MypyFile
from mypy.plugin import CheckerPluginInterface

from spmd_mypy.compat import (
    Assignment,
    attribute_assignments,
    buffers_written_in_place,
    called_decorator_spans,
    checked_file,
    decorated_spans,
    inferred_assignments,
    name_assignments,
    returned_values,
    size_one_spans,
    without_autograd_spans,
)
from spmd_mypy.fullnames import GLOBAL_SPMD, LOCAL_REGION, SPMD_PACKAGE
from spmd_mypy.session import Session

__all__ = [
    "FileFacts",
    "assigned_to_inferred",
    "attribute_values",
    "in_global_mode",
    "is_returned",
    "is_written_later",
    "local_axes",
    "size_one_axes",
    "size_one_axes_at",
    "uses_spmd",
    "value_of",
    "values_assigned",
    "without_autograd",
]


def _facts(session: Session, api: CheckerPluginInterface) -> FileFacts | None:
    tree = checked_file(api)
    if tree is None:
        return None
    facts = session.files.get(tree.path)
    # The daemon merges a re-parsed module into its old tree object: new contents, same tree.
    if facts is None or facts.tree is not tree or facts.defs is not tree.defs:
        facts = session.files[tree.path] = FileFacts(tree, bool(api.options.allow_redefinition))
    return facts


def uses_spmd(session: Session, api: CheckerPluginInterface) -> bool:
    """Whether the module being checked imports ``spmd_types``."""
    facts = _facts(session, api)
    return facts is not None and facts.uses_spmd


def assigned_to_inferred(session: Session, api: CheckerPluginInterface, value: Context) -> bool:
    """Whether ``value`` is assigned to a variable without a declared type, or one mypy lets re-bind.

    Under ``allow_redefinition`` mypy lets a parameter be re-bound to a value of
    another type (``x = all_reduce(x, "tp", src=V, dst=R)``), as an inferred variable.
    """
    facts = _facts(session, api)
    return facts is not None and value in facts.inferred_assignments


def is_written_later(session: Session, api: CheckerPluginInterface, value: Context) -> bool:
    """Whether ``value`` starts a buffer that its function writes in place (see :mod:`spmd_mypy.compat`)."""
    facts = _facts(session, api)
    return facts is not None and value in facts.buffers_written_in_place


def value_of(session: Session, api: CheckerPluginInterface, name: str, used: Context) -> Expression | None:
    """The value last assigned to ``name`` before ``used``, in the function that ``used`` is in."""
    facts = _facts(session, api)
    if facts is None:
        return None
    before = [(first, line, value) for line, first, last, value in facts.name_assignments.get(name, ())
              if line < used.line and first <= used.line <= last]
    # The innermost function's (the latest first line), and in it the last assignment.
    return max(before, key=lambda found: found[:2])[2] if before else None


def values_assigned(session: Session, api: CheckerPluginInterface, name: str, used: Context) -> list[Expression]:
    """Every value assigned to ``name`` in the function that ``used`` is in, before or after it (loops)."""
    facts = _facts(session, api)
    if facts is None:
        return []
    # Remembered per name and line: the numbers of a call ask for the same names often, and a module
    # assigns a common name (``h``) in every one of its functions, all of which the search goes through.
    key = (name, used.line)
    known = facts.values_assigned.get(key)
    if known is None:
        found = [(first, value) for _, first, last, value in facts.name_assignments.get(name, ())
                 if first <= used.line <= last]
        innermost = max((first for first, _ in found), default=None)
        known = facts.values_assigned[key] = [value for first, value in found if first == innermost]
    return list(known)


def attribute_values(session: Session, api: CheckerPluginInterface, name: str, used: Context) -> list[Expression]:
    """Every value a method of the class that ``used`` is in assigns to ``self.<name>``."""
    facts = _facts(session, api)
    if facts is None:
        return []
    found = [(first, value) for first, last, value in facts.attribute_assignments.get(name, ())
             if first <= used.line <= last]
    innermost = max((first for first, _ in found), default=None)
    return [value for first, value in found if first == innermost]


def is_returned(session: Session, api: CheckerPluginInterface, value: Context) -> bool:
    """Whether ``value`` is the expression of a ``return`` statement."""
    facts = _facts(session, api)
    if facts is None:
        return False
    # By place as well: in mypy's copy of a method for a value of its class's type variable the nodes are copies.
    return value in facts.returned_values or _place(value) in facts.returned_places


def without_autograd(session: Session, api: CheckerPluginInterface, where: Context) -> bool:
    """Whether ``where`` runs without autograd (see :func:`spmd_mypy.compat.without_autograd_spans`)."""
    facts = _facts(session, api)
    return facts is not None and any(first <= where.line <= last for first, last in facts.without_autograd)


def in_global_mode(session: Session, api: CheckerPluginInterface, where: Context) -> bool:
    """Whether ``where`` is in a function decorated with ``@spmd_types.global_spmd`` (:mod:`spmd_mypy.global_mode`)
    or ``@spmd_types.local_region`` (global on the axes it does not make local)."""
    facts = _facts(session, api)
    return facts is not None and (any(first <= where.line <= last for first, last in facts.global_spans)
                                  or any(first <= where.line <= last for first, last, _ in facts.region_spans))


def local_axes(session: Session, api: CheckerPluginInterface, where: Context) -> frozenset[str]:
    """The axes that ``where`` is local SPMD on, inside a function decorated with ``@spmd_types.local_region``
    (:mod:`spmd_mypy.regions`): the global rules are not applied on them."""
    facts = _facts(session, api)
    if facts is None:
        return frozenset()
    return frozenset(axis for first, last, axes in facts.region_spans if first <= where.line <= last for axis in axes)


def size_one_axes(session: Session, api: CheckerPluginInterface, where: Context) -> frozenset[str]:
    """The axes that code at ``where`` runs with one rank on (see :mod:`spmd_mypy.size_one`)."""
    facts = _facts(session, api)
    return facts.size_one_axes(session, where.line) if facts is not None else frozenset()


def size_one_axes_at(session: Session, path: str, line: int) -> frozenset[str]:
    """The same, for a line of a file mypy has checked (where mypy reports an error of its own)."""
    facts = session.files.get(path)
    if facts is None:
        tree = next((tree for tree in (session.modules or {}).values() if tree.path == path), None)
        if tree is None:
            return frozenset()
        facts = FileFacts(tree, redefinable_parameters=False)  # not kept: only its size-one spans are read
    return facts.size_one_axes(session, line)


class FileFacts:
    """Facts about one parsed file, each computed when first asked for."""

    def __init__(self, tree: MypyFile, redefinable_parameters: bool) -> None:
        self.tree = tree
        self.defs = tree.defs
        self.redefinable_parameters = redefinable_parameters
        self._size_one: list[tuple[int, int, str]] | None = None
        self.values_assigned: dict[tuple[str, int], list[Expression]] = {}  # see values_assigned()

    @functools.cached_property
    def uses_spmd(self) -> bool:
        return _imports_spmd_types(self.tree)

    @functools.cached_property
    def without_autograd(self) -> list[tuple[int, int]]:
        return without_autograd_spans(self.tree)

    @functools.cached_property
    def global_spans(self) -> list[tuple[int, int]]:
        return decorated_spans(self.tree, GLOBAL_SPMD)

    @functools.cached_property
    def region_spans(self) -> list[tuple[int, int, tuple[str, ...]]]:
        from spmd_mypy.regions import region_axes

        spans = called_decorator_spans(self.tree, LOCAL_REGION)
        return [(first, last, axes) for first, last, call in spans if (axes := region_axes(call)) is not None]

    @functools.cached_property
    def buffers_written_in_place(self) -> set[Expression]:
        return buffers_written_in_place(self.tree)

    @functools.cached_property
    def name_assignments(self) -> dict[str, list[Assignment]]:
        return name_assignments(self.tree)

    @functools.cached_property
    def attribute_assignments(self) -> dict[str, list[tuple[int, int, Expression]]]:
        return attribute_assignments(self.tree)

    @functools.cached_property
    def returned_values(self) -> set[Expression]:
        return returned_values(self.tree)

    @functools.cached_property
    def returned_places(self) -> set[tuple[int, int, int | None, int | None]]:
        return {_place(value) for value in self.returned_values}

    @functools.cached_property
    def inferred_assignments(self) -> set[Expression]:
        return inferred_assignments(self.tree, self.redefinable_parameters)

    def size_one_axes(self, session: Session, line: int) -> frozenset[str]:
        if self._size_one is None:
            from spmd_mypy.size_one import axis_counted
            from spmd_types.typesystem import size_one_when

            self._size_one = size_one_spans(self.tree, lambda e, v: axis_counted(session, e, v), size_one_when)
        return frozenset(axis for first, last, axis in self._size_one if first <= line <= last)


def _place(node: Context) -> tuple[int, int, int | None, int | None]:
    return node.line, node.column, node.end_line, node.end_column


def _imports_spmd_types(file: MypyFile) -> bool:
    for node in file.imports:
        if isinstance(node, Import) and any(name.split(".")[0] == SPMD_PACKAGE for name, _ in node.ids):
            return True
        if isinstance(node, (ImportFrom, ImportAll)) and node.id.split(".")[0] == SPMD_PACKAGE:
            return True
    return False
