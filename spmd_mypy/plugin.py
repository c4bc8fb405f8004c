"""The mypy plugin: ``plugins = spmd_mypy.plugin`` in the mypy configuration.

A thin adapter from mypy's hooks to the rule core in ``spmd_types.typesystem``.
This module is what mypy loads: it reads the plugin's options into the
:class:`~spmd_mypy.session.Session` that holds everything the plugin knows
while mypy runs, and tells mypy's cache what the results depend on.  Which
hooks are the plugin's, and what they do, is :mod:`spmd_mypy.hooks`, loaded
when mypy first asks for a hook; a run whose every module is cached never
does, and so never loads the rule core.  The plugin imports neither torch nor
the runtime.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from mypy.nodes import MypyFile
from mypy.options import Options
from mypy.plugin import (
    AnalyzeTypeContext,
    AttributeContext,
    FunctionContext,
    FunctionSigContext,
    MethodContext,
    MethodSigContext,
    Plugin,
    ReportConfigContext,
)
from mypy.types import FunctionLike, Type

import spmd_mypy
from spmd_mypy import config, error_codes  # noqa: F401  (registers the spmd-* codes with mypy)
from spmd_mypy.session import Session

if TYPE_CHECKING:
    from spmd_mypy.hooks import Router

__all__ = ["SpmdPlugin", "plugin"]


def _rules_fingerprint() -> str:
    """A hash of the plugin's and the rule core's sources, so that cached results follow rule changes."""
    digest = hashlib.sha256(spmd_mypy.__version__.encode())
    roots = [Path(__file__).parent, Path(__file__).parents[1] / "spmd_types" / "typesystem"]
    for root in roots:
        for path in sorted(root.glob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _check_library_roles(options: config.PluginOptions, config_file: str | None) -> None:
    """``library_axes`` names only groups that libraries pick (loads the core only when it is set)."""
    if not options.library_axes:
        return
    from spmd_types.typesystem import ROLES

    unknown = sorted(role for role, _ in options.library_axes if role not in ROLES)
    if unknown:
        raise config.ConfigError(f"{config_file}: library_axes names unknown group(s) {', '.join(unknown)}; "
                                 f"the groups are {', '.join(ROLES)}")


WITHOUT_REDEFINITION_NOTE: Final = (
    "spmd-mypy: note: allow_redefinition is off, so mypy fixes a variable's type at its first "
    "assignment and the plugin cannot always re-type it: a re-bound variable returned or assigned by "
    "name is not compared with the declaration, a variable first bound to a declared value "
    "(h = x, x a parameter) keeps that value's type when re-bound, and a variable whose SPMD type "
    "differs between branches is not reported (spmd-branch). Set allow_redefinition = True and "
    "local_partial_types = True (spmd-check --print-config shows the recommended configuration)"
)
"""Said once per run on standard error when the checks depend on the missing option."""


class SpmdPlugin(Plugin):
    """Checks SPMD types; see the package documentation for the rules."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        try:
            plugin_options = config.load(options.config_file)
            _check_library_roles(plugin_options, options.config_file)
        except (config.ConfigError, ValueError) as error:
            # A configuration mistake, reported like mypy's own: a message and exit status 2.
            print(f"spmd-mypy: {error}", file=sys.stderr)
            raise SystemExit(2) from None
        if not options.allow_redefinition:
            print(WITHOUT_REDEFINITION_NOTE, file=sys.stderr)
        self._session = Session(plugin_options, self.lookup_fully_qualified)
        # mypy asks for this once per module it reads from its cache (every torch module): built once.
        self._config_data = {"version": spmd_mypy.__version__, "rules": _rules_fingerprint(),
                             **plugin_options.as_data()}
        self._router: Router | None = None

    def set_modules(self, modules: dict[str, MypyFile]) -> None:
        super().set_modules(modules)
        self._session.modules = modules

    def _load_hooks(self) -> Router:
        """The router, imported and made at mypy's first hook question (a fully cached run never asks).

        From then on mypy asks the router itself: its methods, set as attributes of this plugin,
        shadow the ``get_*_hook`` methods below.  This class is interpreted (it subclasses mypy's
        compiled ``Plugin``), and mypy's compiled code reaches its methods through a lookup by name
        and an interpreted frame; the router's methods are compiled in the mypyc build.  mypy asks
        some 30,000 questions per hundred blocks of model code: the shortcut takes 2% off the
        compiled plugin's cost there (docs/performance.md, "A fourth round").
        """
        from spmd_mypy.hooks import Router

        router = self._router = Router(self._session)
        self.get_type_analyze_hook = router.type_analyze_hook  # type: ignore[method-assign]
        self.get_function_hook = router.function_hook  # type: ignore[method-assign]
        self.get_function_signature_hook = router.function_signature_hook  # type: ignore[method-assign]
        self.get_method_hook = router.method_hook  # type: ignore[method-assign]
        self.get_method_signature_hook = router.method_signature_hook  # type: ignore[method-assign]
        self.get_attribute_hook = router.attribute_hook  # type: ignore[method-assign]
        return router

    # -- configuration and dependencies ----------------------------------------------

    def report_config_data(self, ctx: ReportConfigContext) -> object:
        return self._config_data

    def get_additional_deps(self, file: MypyFile) -> list[tuple[int, str, int]]:
        # mypy calls this whenever it (re)parses a module, the daemon after an
        # edit among them: what is known about callables may have changed.
        self._session.forget_callables()
        if self._router is not None:
            self._router.forget_declared()
        return []

    # -- hooks -----------------------------------------------------------------------
    # mypy asks these about 200,000 times on a large model; each of these methods answers only the first
    # question, which loads the router (see _load_hooks).

    def get_type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        return (self._router or self._load_hooks()).type_analyze_hook(fullname)

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        return (self._router or self._load_hooks()).function_hook(fullname)

    def get_function_signature_hook(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        return (self._router or self._load_hooks()).function_signature_hook(fullname)

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return (self._router or self._load_hooks()).method_hook(fullname)

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        return (self._router or self._load_hooks()).method_signature_hook(fullname)

    def get_attribute_hook(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        return (self._router or self._load_hooks()).attribute_hook(fullname)


SUPPORTED_MYPY: Final = range(2, 3)
"""The mypy major versions the plugin is tested with (``mypy>=2.0,<3``)."""


def unsupported_mypy_note(version: str) -> str | None:
    """A note for a mypy ``version`` outside :data:`SUPPORTED_MYPY`; ``None`` inside it."""
    major = version.split(".", 1)[0]
    if major.isdigit() and int(major) in SUPPORTED_MYPY:
        return None
    return (
        f"spmd-mypy: note: mypy {version} is not a version the SPMD plugin supports (mypy>=2.0,<3); "
        "its SPMD diagnostics may be missing or wrong. Install a supported mypy, and in an editor make it "
        "use that mypy rather than a bundled one"
    )


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point; says so on standard error when ``version`` is one the plugin does not support."""
    note = unsupported_mypy_note(version)
    if note is not None:
        print(note, file=sys.stderr)
    return SpmdPlugin
