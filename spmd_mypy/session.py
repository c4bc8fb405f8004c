"""State the hooks share for one mypy run: options, reporting, and call-site bookkeeping."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from mypy.nodes import Context, Expression, Import, ImportAll, ImportFrom, MypyFile
from mypy.plugin import CheckerPluginInterface
from mypy.types import CallableType

from spmd_mypy.annotations import StubsWarned
from spmd_mypy.compat import checked_file, inferred_assignments
from spmd_mypy.config import PluginOptions
from spmd_mypy.encoding import Encoder
from spmd_mypy.report import Reporter

__all__ = ["Session"]


@dataclass
class Session:
    """What every hook needs.

    In modules that import ``spmd_types``, constants such as ``torch.ones(3)``
    get an SPMD type; elsewhere the plugin only follows values that already
    have one, so it stays inert on plain code.  ``relaxed`` remembers, per call expression, the declared signature whose
    SPMD parameters a signature hook relaxed, for the return hook to check
    exactly; ``None`` marks an overloaded callee, which is not checked.
    ``stubs_warned`` records, per module, the annotation told that the ``spmd_types`` stubs are missing.
    """

    options: PluginOptions
    reporter: Reporter
    modules: dict[str, MypyFile] | None = None
    relaxed: dict[Context, CallableType | None] = field(default_factory=dict)
    stubs_warned: StubsWarned = field(default_factory=dict)

    def encoder(self, api: CheckerPluginInterface) -> Encoder:
        rebindable = not api.options.allow_redefinition
        return Encoder(self.modules, api.named_generic_type("builtins.str", []), rebindable)

    # What is known about each checked file, while mypy keeps the same parse of it.
    _files: dict[str, _FileFacts] = field(default_factory=dict)

    def _facts(self, api: CheckerPluginInterface) -> _FileFacts | None:
        tree = checked_file(api)
        if tree is None:
            return None
        facts = self._files.get(tree.path)
        if facts is None or facts.tree is not tree:
            facts = self._files[tree.path] = _FileFacts(tree)
        return facts

    def uses_spmd(self, api: CheckerPluginInterface) -> bool:
        """Whether the module being checked imports ``spmd_types``."""
        facts = self._facts(api)
        return facts is not None and facts.uses_spmd

    def assigned_to_inferred(self, api: CheckerPluginInterface, value: Context) -> bool:
        """Whether ``value`` is assigned to a variable without a declared type."""
        facts = self._facts(api)
        return facts is not None and value in facts.inferred_assignments


class _FileFacts:
    """Facts about one parsed file, each computed when first asked for."""

    def __init__(self, tree: MypyFile) -> None:
        self.tree = tree

    @functools.cached_property
    def uses_spmd(self) -> bool:
        return _imports_spmd_types(self.tree)

    @functools.cached_property
    def inferred_assignments(self) -> set[Expression]:
        return inferred_assignments(self.tree)


def _imports_spmd_types(file: MypyFile) -> bool:
    for node in file.imports:
        if isinstance(node, Import) and any(name.split(".")[0] == "spmd_types" for name, _ in node.ids):
            return True
        if isinstance(node, (ImportFrom, ImportAll)) and node.id.split(".")[0] == "spmd_types":
            return True
    return False
