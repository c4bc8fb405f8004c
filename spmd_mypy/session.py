"""State the hooks share for one mypy run: options, reporting, and call-site bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass, field

from mypy.nodes import Context, MypyFile
from mypy.plugin import CheckerPluginInterface
from mypy.types import CallableType

from spmd_mypy.config import PluginOptions
from spmd_mypy.encoding import Encoder
from spmd_mypy.report import Reporter

__all__ = ["Session"]


@dataclass
class Session:
    """What every hook needs.

    ``spmd_paths`` are the files that import ``spmd_types`` (there, constants
    such as ``torch.ones(3)`` get an SPMD type; elsewhere the plugin only
    follows values that already have one, so it stays inert on plain code).
    ``relaxed`` remembers, per call expression, the declared signature whose
    SPMD parameters a signature hook relaxed, for the return hook to check
    exactly; ``None`` marks an overloaded callee, which is not checked.
    """

    options: PluginOptions
    reporter: Reporter
    modules: dict[str, MypyFile] | None = None
    spmd_paths: set[str] = field(default_factory=set)
    relaxed: dict[Context, CallableType | None] = field(default_factory=dict)

    def encoder(self, api: CheckerPluginInterface) -> Encoder:
        rebindable = not api.options.allow_redefinition
        return Encoder(self.modules, api.named_generic_type("builtins.str", []), rebindable)

    def uses_spmd(self, api: CheckerPluginInterface) -> bool:
        return api.path in self.spmd_paths
