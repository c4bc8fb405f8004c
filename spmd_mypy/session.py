"""The one object that holds what the plugin knows while mypy runs; every handler receives it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mypy.nodes import Context, MypyFile, SymbolTableNode
from mypy.types import FunctionLike, Type

from spmd_mypy.config import PluginOptions
from spmd_mypy.identity import IdentityMemo

if TYPE_CHECKING:
    from spmd_mypy.callables import Answer
    from spmd_mypy.files import FileFacts
    from spmd_mypy.flags import FlagTable

__all__ = ["Session", "StubsWarned"]

StubsWarned = dict[str, tuple[MypyFile | None, int, int]]
"""Per module: the parsed file and the position of the annotation told that the stubs are missing."""


class Session:
    """Everything the plugin knows while mypy runs: the state, apart from the code that reads it.

    :class:`~spmd_mypy.plugin.SpmdPlugin` makes one when mypy loads it and
    keeps it for as long as mypy keeps the plugin (the daemon: across runs),
    and every handler receives it.  Nothing else holds state: the few memos
    at module level (:func:`~spmd_mypy.fullnames.public_function_name`, the
    op outcomes in :mod:`spmd_mypy.ops`, parsed type texts in
    :mod:`spmd_mypy.encoding`) remember pure functions of their arguments.
    This module imports nothing of the plugin's logic or the rule core, so
    that a run whose every module is cached pays for neither.

    * ``options``: the plugin's options;
    * ``lookup``: mypy's lookup of a full name among the loaded ``modules``,
      which mypy hands over before it checks anything (``None`` before);
    * ``callables``: whether each user callable has an SPMD signature
      (:mod:`spmd_mypy.callables`), answered once per name;
    * ``relaxed``: per call expression, the declared signature whose SPMD
      parameters the call's signature hook relaxed, for the return hook of the
      same call to check exactly (:mod:`spmd_mypy.boundaries`); ``None`` marks
      a callee whose signature hook ran for several overloads, which is not
      checked (an overloaded ``forward`` is kept whole, and its item matched);
    * ``stubs_warned``: per module, the annotation told that the ``spmd_types``
      stubs are missing (:mod:`spmd_mypy.annotations`);
    * ``files``: what is known about each checked file, by path, while mypy
      keeps the same parse of it (:mod:`spmd_mypy.files`), and ``checked_file``
      the one of them asked about last;
    * ``flag_tables``: per class, which constructor overload sets which
      configuration flag (:mod:`spmd_mypy.flags`), while the class keeps its
      constructor;
    * ``mismatch_filter``: the filter of mypy's own errors that are no
      mistake under SPMD typing (:mod:`spmd_mypy.mismatches`), once installed;
    * ``typed_results``: each op's result type with its SPMD type, by mypy's
      result type and the SPMD type (:func:`spmd_mypy.values.typed_result`),
      until a module is (re)parsed.
    """

    def __init__(self, options: PluginOptions, lookup: Callable[[str], SymbolTableNode | None]) -> None:
        self.options = options
        self.lookup = lookup
        self.modules: dict[str, MypyFile] | None = None
        self.callables: dict[tuple[str, str], Answer] = {}
        self.relaxed: dict[Context, FunctionLike | None] = {}
        self.stubs_warned: StubsWarned = {}
        self.files: dict[str, FileFacts] = {}
        self.checked_file: FileFacts | None = None
        self.flag_tables: dict[str, FlagTable] = {}
        self.mismatch_filter: object | None = None
        self.typed_results: IdentityMemo[Type, dict[tuple[object, ...], Type]] = IdentityMemo(4096)

    def forget_callables(self) -> None:
        """Drop what is known about callables, and the typed results: a module was (re)parsed, and may have
        changed them (the stubs' SPMD classes, whose instances the typed results are, among them)."""
        self.callables.clear()
        self.typed_results.clear()
