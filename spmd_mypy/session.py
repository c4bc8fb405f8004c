"""The one object that holds what the plugin knows while mypy runs; every handler receives it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mypy.nodes import Context, Expression, Import, ImportAll, ImportFrom, MypyFile, SymbolTableNode
from mypy.plugin import CheckerPluginInterface
from mypy.types import CallableType

from spmd_mypy.compat import (
    Assignment,
    buffers_written_in_place,
    checked_file,
    inferred_assignments,
    name_assignments,
    returned_values,
    without_autograd_spans,
)
from spmd_mypy.config import PluginOptions
from spmd_mypy.fullnames import SPMD_PACKAGE, STR

if TYPE_CHECKING:
    from spmd_mypy.callables import Answer
    from spmd_mypy.encoding import Encoder

__all__ = ["Session", "StubsWarned"]

StubsWarned = dict[str, tuple[MypyFile | None, int, int]]
"""Per module: the parsed file and the position of the annotation told that the stubs are missing."""


@dataclass
class Session:
    """Everything the plugin knows while mypy runs.

    :class:`~spmd_mypy.plugin.SpmdPlugin` makes one when mypy loads it and
    keeps it for as long as mypy keeps the plugin (the daemon: across runs),
    and every handler receives it.  Nothing else holds state: the few memos
    at module level (:func:`~spmd_mypy.fullnames.public_function_name`, the
    op outcomes in :mod:`spmd_mypy.ops`, parsed type texts in
    :mod:`spmd_mypy.encoding`) remember pure functions of their arguments.
    Importing this module loads neither the rule core nor the hooks, so that
    a run whose every module is cached pays for neither.

    * ``options``: the plugin's options;
    * ``lookup``: mypy's lookup of a full name among the loaded ``modules``,
      which mypy hands over before it checks anything (``None`` before);
    * ``callables``: whether each user callable has an SPMD signature
      (:mod:`spmd_mypy.callables`), answered once per name;
    * ``relaxed``: per call expression, the declared signature whose SPMD
      parameters the call's signature hook relaxed, for the return hook of the
      same call to check exactly (:mod:`spmd_mypy.boundaries`); ``None`` marks
      an overloaded callee, which is not checked;
    * ``stubs_warned``: per module, the annotation told that the ``spmd_types``
      stubs are missing;
    * what is known about each checked file (:meth:`uses_spmd` and the other
      methods), computed when first asked, while mypy keeps the same parse.

    In modules that import ``spmd_types``, constants such as ``torch.ones(3)``
    get an SPMD type; elsewhere the plugin only follows values that already
    have one, so it stays inert on plain code.
    """

    options: PluginOptions
    lookup: Callable[[str], SymbolTableNode | None]
    modules: dict[str, MypyFile] | None = None
    callables: dict[tuple[str, str], Answer] = field(default_factory=dict)
    relaxed: dict[Context, CallableType | None] = field(default_factory=dict)
    stubs_warned: StubsWarned = field(default_factory=dict)
    _files: dict[str, _FileFacts] = field(default_factory=dict)

    def encoder(self, api: CheckerPluginInterface) -> Encoder:
        """How SPMD types are written as mypy types while ``api`` checks a module."""
        from spmd_mypy.encoding import Encoder  # loads the rule core: not at the plugin's start

        rebindable = not api.options.allow_redefinition
        return Encoder(self.modules, api.named_generic_type(STR, []), rebindable)

    def forget_callables(self) -> None:
        """Drop what is known about callables: a module was (re)parsed, and may have changed them."""
        self.callables.clear()

    def _facts(self, api: CheckerPluginInterface) -> _FileFacts | None:
        tree = checked_file(api)
        if tree is None:
            return None
        facts = self._files.get(tree.path)
        # The daemon merges a re-parsed module into its old tree object: new contents, same tree.
        if facts is None or facts.tree is not tree or facts.defs is not tree.defs:
            facts = self._files[tree.path] = _FileFacts(tree, bool(api.options.allow_redefinition))
        return facts

    def uses_spmd(self, api: CheckerPluginInterface) -> bool:
        """Whether the module being checked imports ``spmd_types``."""
        facts = self._facts(api)
        return facts is not None and facts.uses_spmd

    def assigned_to_inferred(self, api: CheckerPluginInterface, value: Context) -> bool:
        """Whether ``value`` is assigned to a variable without a declared type, or one mypy lets re-bind.

        Under ``allow_redefinition`` mypy lets a parameter be re-bound to a value of
        another type (``x = all_reduce(x, "tp", src=V, dst=R)``), as an inferred variable.
        """
        facts = self._facts(api)
        return facts is not None and value in facts.inferred_assignments

    def is_written_later(self, api: CheckerPluginInterface, value: Context) -> bool:
        """Whether ``value`` starts a buffer that its function writes in place (see :mod:`spmd_mypy.compat`)."""
        facts = self._facts(api)
        return facts is not None and value in facts.buffers_written_in_place

    def value_of(self, api: CheckerPluginInterface, name: str, used: Context) -> Expression | None:
        """The value last assigned to ``name`` before ``used``, in the function that ``used`` is in."""
        facts = self._facts(api)
        if facts is None:
            return None
        before = [(first, line, value) for line, first, last, value in facts.name_assignments.get(name, ())
                  if line < used.line and first <= used.line <= last]
        # The innermost function's (the latest first line), and in it the last assignment.
        return max(before, key=lambda found: found[:2])[2] if before else None

    def is_returned(self, api: CheckerPluginInterface, value: Context) -> bool:
        """Whether ``value`` is the expression of a ``return`` statement."""
        facts = self._facts(api)
        return facts is not None and value in facts.returned_values

    def without_autograd(self, api: CheckerPluginInterface, where: Context) -> bool:
        """Whether ``where`` runs without autograd (see :func:`spmd_mypy.compat.without_autograd_spans`)."""
        facts = self._facts(api)
        return facts is not None and any(first <= where.line <= last for first, last in facts.without_autograd)


class _FileFacts:
    """Facts about one parsed file, each computed when first asked for."""

    def __init__(self, tree: MypyFile, redefinable_parameters: bool) -> None:
        self.tree = tree
        self.defs = tree.defs
        self.redefinable_parameters = redefinable_parameters

    @functools.cached_property
    def uses_spmd(self) -> bool:
        return _imports_spmd_types(self.tree)

    @functools.cached_property
    def without_autograd(self) -> list[tuple[int, int]]:
        return without_autograd_spans(self.tree)

    @functools.cached_property
    def buffers_written_in_place(self) -> set[Expression]:
        return buffers_written_in_place(self.tree)

    @functools.cached_property
    def name_assignments(self) -> dict[str, list[Assignment]]:
        return name_assignments(self.tree)

    @functools.cached_property
    def returned_values(self) -> set[Expression]:
        return returned_values(self.tree)

    @functools.cached_property
    def inferred_assignments(self) -> set[Expression]:
        return inferred_assignments(self.tree, self.redefinable_parameters)


def _imports_spmd_types(file: MypyFile) -> bool:
    for node in file.imports:
        if isinstance(node, Import) and any(name.split(".")[0] == SPMD_PACKAGE for name, _ in node.ids):
            return True
        if isinstance(node, (ImportFrom, ImportAll)) and node.id.split(".")[0] == SPMD_PACKAGE:
            return True
    return False
