"""What is known about each file mypy checks: its imports, returns, assignments, where no autograd runs,
and which functions are checked in global SPMD.

The facts of a file's statements are all read from one walk of its parse
tree (:func:`spmd_mypy.compat.file_scopes`) when the first of them is asked
for, and kept in the session while mypy keeps the same parse of the file.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from mypy.nodes import Context, Expression, Import, ImportAll, ImportFrom, MypyFile
from mypy.plugin import CheckerPluginInterface

from spmd_mypy.compat import (
    Scope,
    attribute_assignments,
    buffers_written_in_place,
    called_decorator_spans,
    checked_file,
    decorated_spans,
    file_scopes,
    inferred_assignments,
    name_assignments,
    releases_checked_trees,
    returned_values,
    size_one_spans,
    without_autograd_spans,
)
from spmd_mypy.fullnames import GLOBAL_SPMD, LOCAL_REGION, SPMD_PACKAGE
from spmd_mypy.session import Session

__all__ = [
    "FileFacts",
    "Place",
    "StatementFacts",
    "assigned_to_inferred",
    "attribute_values",
    "file_facts",
    "is_returned",
    "is_written_later",
    "place",
    "size_one_axes",
    "size_one_axes_at",
    "uses_spmd",
    "value_of",
    "values_assigned",
]


def file_facts(session: Session, api: CheckerPluginInterface) -> FileFacts | None:
    """The facts of the module being checked, kept in the session by path.

    Each call reads mypy's attributes to tell that the facts still describe the
    file (a few thousand instructions from compiled code): a handler that asks
    several questions about one call asks this once and the facts the rest.
    """
    tree = checked_file(api)
    if tree is None:
        return None
    facts = session.checked_file  # questions come in runs about one file: the one asked about last
    if facts is None or not facts.describe(tree):
        facts = session.files.get(tree.path)
        if facts is None or not facts.describe(tree):
            if releases_checked_trees(api.options):
                _forget_released(session)
            facts = session.files[tree.path] = FileFacts(tree, bool(api.options.allow_redefinition))
        session.checked_file = facts
    return facts


def _forget_released(session: Session) -> None:
    """Drop the facts of the files whose parse mypy has let go of: it is done checking them.

    The facts hold the file's statements, and with them its whole parse tree:
    kept for every checked file of a batch run, that was the size of all their
    trees in memory, and enough young objects to set off garbage collections
    that walk them all (800-block model: 600,000 objects, 40 MB, two
    collections of 50 ms each).  A file asked about again is read again.
    """
    for path in [path for path, facts in session.files.items() if facts.released()]:
        del session.files[path]


def _statements(session: Session, api: CheckerPluginInterface) -> StatementFacts | None:
    """The facts of the statements of the module being checked."""
    facts = file_facts(session, api)
    return facts.statements if facts is not None else None


def uses_spmd(session: Session, api: CheckerPluginInterface) -> bool:
    """Whether the module being checked imports ``spmd_types``."""
    facts = file_facts(session, api)
    return facts is not None and facts.uses_spmd


def assigned_to_inferred(session: Session, api: CheckerPluginInterface, value: Context) -> bool:
    """Whether ``value`` is assigned to a variable without a declared type, or one mypy lets re-bind.

    Under ``allow_redefinition`` mypy lets a parameter be re-bound to a value of
    another type (``x = all_reduce(x, "tp", src=V, dst=R)``), as an inferred variable.
    """
    statements = _statements(session, api)
    return statements is not None and value in statements.inferred_assignments


def is_written_later(session: Session, api: CheckerPluginInterface, value: Context) -> bool:
    """Whether ``value`` starts a buffer that its function writes in place (see :mod:`spmd_mypy.compat`)."""
    facts = file_facts(session, api)
    return facts is not None and facts.is_written_later(value)


def value_of(session: Session, api: CheckerPluginInterface, name: str, used: Context) -> Expression | None:
    """The value last assigned to ``name`` before ``used``, in the function that ``used`` is in."""
    statements = _statements(session, api)
    if statements is None:
        return None
    before = [(first, line, value) for line, first, last, value in statements.name_assignments.get(name, ())
              if line < used.line and first <= used.line <= last]
    # The innermost function's (the latest first line), and in it the last assignment.
    return max(before, key=lambda found: found[:2])[2] if before else None


def values_assigned(session: Session, api: CheckerPluginInterface, name: str, used: Context) -> list[Expression]:
    """Every value assigned to ``name`` in the function that ``used`` is in, before or after it (loops)."""
    facts = file_facts(session, api)
    return facts.values_assigned(name, used) if facts is not None else []


def attribute_values(session: Session, api: CheckerPluginInterface, name: str, used: Context) -> list[Expression]:
    """Every value a method of the class that ``used`` is in assigns to ``self.<name>``."""
    statements = _statements(session, api)
    if statements is None:
        return []
    found = [(first, value) for first, last, value in statements.attribute_assignments().get(name, ())
             if first <= used.line <= last]
    innermost = max((first for first, _ in found), default=None)
    return [value for first, value in found if first == innermost]


def is_returned(session: Session, api: CheckerPluginInterface, value: Context) -> bool:
    """Whether ``value`` is the expression of a ``return`` statement."""
    statements = _statements(session, api)
    # By place as well: in mypy's copy of a method for a value of its class's type variable the nodes are copies.
    return statements is not None and (value in statements.returned_values or (
        value.line in statements.returned_lines and _place(value) in statements.returned_places))


class Place(NamedTuple):
    """The facts of a place in a file that the rules consult (a tuple: it goes into the keys of remembered ops).

    * ``without_autograd``: it runs without autograd (see :func:`spmd_mypy.compat.without_autograd_spans`);
    * ``global_mode``: it is in a function decorated with ``@spmd_types.global_spmd``
      (:mod:`spmd_mypy.global_mode`) or ``@spmd_types.local_region`` (global on the axes it does not make local);
    * ``local_axes``: the axes that it is local SPMD on, inside a function decorated with
      ``@spmd_types.local_region`` (:mod:`spmd_mypy.regions`): the global rules are not applied on them.
    """

    without_autograd: bool
    global_mode: bool
    local_axes: frozenset[str]


_ANYWHERE: Final = Place(without_autograd=False, global_mode=False, local_axes=frozenset())
"""The place of all code outside ``no_grad``, autograd Functions, ``global_spmd`` and ``local_region``."""


def place(session: Session, api: CheckerPluginInterface, where: Context) -> Place:
    """The facts of the place of ``where`` in the module being checked."""
    facts = file_facts(session, api)
    return facts.place(where) if facts is not None else _ANYWHERE


def size_one_axes(session: Session, api: CheckerPluginInterface, where: Context) -> frozenset[str]:
    """The axes that code at ``where`` runs with one rank on (see :mod:`spmd_mypy.size_one`)."""
    statements = _statements(session, api)
    return statements.size_one_axes(session, where.line) if statements is not None else frozenset()


def size_one_axes_at(session: Session, path: str, line: int) -> frozenset[str]:
    """The same, for a line of a file mypy has checked (where mypy reports an error of its own)."""
    facts = session.files.get(path)
    if facts is not None:
        return facts.statements.size_one_axes(session, line)
    tree = next((tree for tree in (session.modules or {}).values() if tree.path == path), None)
    if tree is None:
        return frozenset()
    return _on_lines(_size_one_spans(session, file_scopes(tree)), line)  # not kept: only these spans are read


class FileFacts:
    """Facts about one parsed file: whether it imports ``spmd_types``, known at once, and the facts of its
    statements, read when first asked for."""

    def __init__(self, tree: MypyFile, redefinable_parameters: bool) -> None:
        self.tree = tree
        self.defs = tree.defs
        self._had_statements = bool(tree.defs)
        self.redefinable_parameters = redefinable_parameters
        self.uses_spmd = _imports_spmd_types(tree)
        self._statements: StatementFacts | None = None

    def describe(self, tree: MypyFile) -> bool:
        """Whether these are the facts of ``tree`` as it is now parsed.  The daemon merges a re-parsed module
        into its old tree object: new contents (``defs``), same tree."""
        return self.tree is tree and self.defs is tree.defs

    def released(self) -> bool:
        """Whether mypy has let go of this parse: it empties ``defs`` in place once it has checked the file
        (see :func:`spmd_mypy.compat.releases_checked_trees`)."""
        return self._had_statements and not self.defs

    def place(self, where: Context) -> Place:
        """The facts of the place of ``where`` in the file (see :func:`place`)."""
        return self.statements.place(where.line)

    def values_assigned(self, name: str, used: Context) -> list[Expression]:
        """Every value assigned to ``name`` in the function that ``used`` is in (see :func:`values_assigned`)."""
        statements = self.statements
        # Remembered per name and line: the numbers of a call ask for the same names often, and a module
        # assigns a common name (``h``) in every one of its functions, all of which the search goes through.
        key = (name, used.line)
        known = statements.values_assigned.get(key)
        if known is None:
            found = [(first, value) for _, first, last, value in statements.name_assignments.get(name, ())
                     if first <= used.line <= last]
            innermost = max((first for first, _ in found), default=None)
            known = statements.values_assigned[key] = [value for first, value in found if first == innermost]
        return list(known)

    def is_written_later(self, value: Context) -> bool:
        """Whether ``value`` starts a buffer that its function writes in place (see :func:`is_written_later`)."""
        return value in self.statements.buffers_written_in_place

    @property
    def statements(self) -> StatementFacts:
        """The facts of the file's statements (read when first asked for)."""
        if self._statements is None:
            self._statements = StatementFacts(self.tree, self.redefinable_parameters)
        return self._statements


class StatementFacts:
    """The facts of one file's statements, all read from one walk of them (:func:`spmd_mypy.compat.file_scopes`).

    ``redefinable_parameters`` is mypy's ``allow_redefinition``
    (see :func:`assigned_to_inferred`).  The answers to :meth:`place` and
    :func:`values_assigned` are remembered; the size-one spans (they need
    the session) and the assignments to attributes are read when first asked for.
    """

    def __init__(self, tree: MypyFile, redefinable_parameters: bool) -> None:
        from spmd_mypy.regions import region_axes

        self.scopes = file_scopes(tree)
        self.without_autograd = without_autograd_spans(tree, self.scopes)
        self.global_spans = decorated_spans(self.scopes, GLOBAL_SPMD)
        regions = called_decorator_spans(self.scopes, LOCAL_REGION)
        self.region_spans = [(first, last, axes) for first, last, call in regions
                             if (axes := region_axes(call)) is not None]
        self.buffers_written_in_place = buffers_written_in_place(self.scopes)
        self.name_assignments = name_assignments(self.scopes)
        self.returned_values = returned_values(self.scopes)
        self.returned_places = {_place(value) for value in self.returned_values}
        self.returned_lines = {line for line, _, _, _ in self.returned_places}  # most values asked about are on none
        self.inferred_assignments = inferred_assignments(self.scopes, redefinable_parameters)
        self.values_assigned: dict[tuple[str, int], list[Expression]] = {}  # see values_assigned()
        self._places: dict[int, Place] = {}
        self._size_one: list[tuple[int, int, str]] | None = None
        self._attributes: dict[str, list[tuple[int, int, Expression]]] | None = None

    def place(self, line: int) -> Place:
        """The facts of the place at ``line``; one constant in a file without spans that change them."""
        if not (self.without_autograd or self.global_spans or self.region_spans):
            return _ANYWHERE
        found = self._places.get(line)
        if found is None:
            regions = [axes for first, last, axes in self.region_spans if first <= line <= last]
            found = self._places[line] = Place(
                without_autograd=any(first <= line <= last for first, last in self.without_autograd),
                global_mode=bool(regions) or any(first <= line <= last for first, last in self.global_spans),
                local_axes=frozenset(axis for axes in regions for axis in axes))
        return found

    def attribute_assignments(self) -> dict[str, list[tuple[int, int, Expression]]]:
        """Every ``self.name = value`` of the file, by name (see :func:`spmd_mypy.compat.attribute_assignments`)."""
        if self._attributes is None:
            self._attributes = attribute_assignments(self.scopes)
        return self._attributes

    def size_one_axes(self, session: Session, line: int) -> frozenset[str]:
        """The axes that code at ``line`` runs with one rank on."""
        if self._size_one is None:
            self._size_one = _size_one_spans(session, self.scopes)
        return _on_lines(self._size_one, line)


def _size_one_spans(session: Session, scopes: list[Scope]) -> list[tuple[int, int, str]]:
    """The spans of code guarded by a test that an axis has one rank, with the axis (see :mod:`spmd_mypy.size_one`)."""
    from spmd_mypy.size_one import axis_counted
    from spmd_types.typesystem import size_one_when

    return size_one_spans(scopes, lambda e, v: axis_counted(session, e, v), size_one_when)


def _on_lines(spans: list[tuple[int, int, str]], line: int) -> frozenset[str]:
    """The axes of the ``spans`` that hold ``line``."""
    return frozenset(axis for first, last, axis in spans if first <= line <= last)


def _place(node: Context) -> tuple[int, int, int | None, int | None]:
    return node.line, node.column, node.end_line, node.end_column


def _imports_spmd_types(file: MypyFile) -> bool:
    for node in file.imports:
        if isinstance(node, Import) and any(name.split(".")[0] == SPMD_PACKAGE for name, _ in node.ids):
            return True
        if isinstance(node, (ImportFrom, ImportAll)) and node.id.split(".")[0] == SPMD_PACKAGE:
            return True
    return False
