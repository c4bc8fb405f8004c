"""The mypy configuration spmd-typecheck recommends, as data, written out as ini or pyproject.

One definition serves every place a configuration is needed:
``spmd-check --print-config`` prints it, ``spmd-check`` runs with it when the
project's own configuration does not load the plugin, the repository's
``mypy.ini.example`` is its ini form (a test keeps the two equal), and the
tests build their configurations from it.

The default is safe for every client, the mypy daemon and editors included.
``skip_torch_internals=True`` adds per-module ``follow_imports = skip`` for
torch's heavy subpackages: a cold ``mypy`` run drops from about 11 s to about
3.6 s (docs/performance.md) while ``Tensor``, ``torch.nn.functional``,
``ProcessGroup`` and ``DeviceMesh`` stay fully typed, but the daemon mishandles
such sections (python/mypy#16190): after an edit it re-checks all of torch, and
a later edit can crash it.  Use it for one-shot runs (CI, pre-commit,
``spmd-check``), never for ``dmypy``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from spmd_mypy.config import INI_SECTION, PLUGIN, TOML_TABLE, option_help

__all__ = ["FORMATS", "TORCH_INTERNALS", "Format", "render"]

Format = Literal["ini", "pyproject"]
FORMATS: Final[tuple[Format, ...]] = ("ini", "pyproject")


@dataclass(frozen=True)
class _Option:
    """One option: its name, its value (``None``: shown commented out, as an example), and why."""

    name: str
    value: str | bool | tuple[str, ...] | None
    example: str | bool | tuple[str, ...] | None = None
    why: str = ""


_MYPY_OPTIONS: Final = (
    _Option("plugins", (PLUGIN,)),
    _Option(
        "allow_redefinition",
        True,
        why="Let a variable be re-bound to a value of another type (as in `h = all_reduce(h, \"tp\", dst=R)`), "
        "so that a variable whose SPMD type differs between branches is reported. mypy requires "
        "local_partial_types with it. Both can also be set per module.",
    ),
    _Option("local_partial_types", True),
)

_PLUGIN_OPTIONS: Final = tuple(_Option(name, None, shown.example, shown.why) for name, shown in option_help().items())

TORCH_INTERNALS: Final[tuple[str, ...]] = (
    "torch._dynamo.*", "torch._inductor.*", "torch.fx.*", "torch._functorch.*", "torch.onnx.*",
    "torch.export.*", "torch._export.*", "torch._higher_order_ops.*", "torch._subclasses.*", "torch.testing.*",
    "torch.utils._sympy.*", "torch.ao.*", "torch.distributed.fsdp.*", "torch.distributed.pipelining.*",
    "torch.distributed.checkpoint.*",
    "torch._prims.*", "torch._refs.*", "torch._decomp.*", "torch.jit.*", "torch.package.*", "torch.sparse.*",
    "torch.masked.*", "torch.nested.*", "torch.utils.data.*", "torch.utils.benchmark.*",
    "torch.utils.tensorboard.*", "torch._library.*", "torch.compiler.*", "sympy.*", "torch.quantization.*",
    "torch.nn.quantized.*", "torch.distributions.*", "torch.distributed.elastic.*", "torch.distributed.rpc.*",
    "torch.distributed.algorithms.*", "torch.distributed.optim.*", "torch._guards", "torch._logging.*",
    "torch.cuda.*", "torch.mtia.*", "torch.xpu.*", "torch.backends.*", "torch.profiler.*",
    "torch.autograd.profiler", "torch.autograd.profiler_util", "torch._C._distributed_rpc", "torch.func.*",
    "torch._lazy.*", "torch.hub", "torch.overrides", "torch._tensor_str", "torch._ops", "torch.library",
    "torch._meta_registrations", "torch._prims_common.*",
)
"""Modules of torch (and sympy) that SPMD code never needs typed, skipped with ``skip_torch_internals``.

``torch.distributed.tensor`` is not among them: the checker reads DTensor's
``from_local``, ``to_local`` and placements.
"""

_HEADER: Final = (
    "mypy configuration for a codebase checked by spmd-typecheck, printed by `spmd-check --print-config` "
    "(`--print-config pyproject` for pyproject.toml)."
)
_SAFE_FOR: Final = {
    False: "Safe for mypy, the mypy daemon (dmypy) and editors.",
    True: "For one-shot runs (CI, pre-commit, mypy from the shell); give dmypy and editors the form printed "
    "without --skip-torch-internals.",
}
_PLUGIN_HEADER: Final = "spmd-typecheck's own options (all optional)."
_SKIP_WHY: Final = (
    "Faster one-shot runs (CI, pre-commit, spmd-check): do not analyze torch's compiler, export and other "
    "heavy subpackages; a cold run drops from about 11 s to about 3.6 s while Tensor, torch.nn.functional, "
    "ProcessGroup and DeviceMesh stay fully typed. Never give this section to the mypy daemon: dmypy "
    "mishandles per-module follow_imports=skip (python/mypy#16190), re-checks all of torch after an edit "
    "and can crash on a later one."
)
_WIDTH: Final = 100


def _comment(text: str) -> list[str]:
    """``text`` as ``#`` comment lines no wider than the page."""
    lines: list[str] = []
    line = "#"
    for word in text.split():
        if len(line) + 1 + len(word) > _WIDTH and line != "#":
            lines.append(line)
            line = "#"
        line += " " + word
    return [*lines, line]


def _ini_value(value: str | bool | tuple[str, ...]) -> str:
    return ", ".join(value) if isinstance(value, tuple) else str(value)


def _toml_value(value: str | bool | tuple[str, ...]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(f'"{item}"' for item in value) + "]"
    return f'"{value}"'


def _ini_skip_section(modules: tuple[str, ...]) -> list[str]:
    return [f"[mypy-{','.join(modules)}]", "follow_imports = skip"]


def _toml_skip_section(modules: tuple[str, ...]) -> list[str]:
    listed = [f'    "{module}",' for module in modules]
    return ["[[tool.mypy.overrides]]", "module = [", *listed, "]", 'follow_imports = "skip"']


@dataclass(frozen=True)
class _Spelling:
    """How one file format writes its sections and values."""

    mypy_section: str
    plugin_section: str
    value: Callable[[str | bool | tuple[str, ...]], str]
    skip_section: Callable[[tuple[str, ...]], list[str]]

    def options(self, options: tuple[_Option, ...]) -> list[str]:
        """Each option with its explanation; an example value commented out."""
        lines: list[str] = []
        for option in options:
            if option.why:
                lines += _comment(option.why)
            if option.value is not None:
                lines.append(f"{option.name} = {self.value(option.value)}")
            elif option.example is not None:
                lines.append(f"# {option.name} = {self.value(option.example)}")
        return lines


_SPELLINGS: Final[dict[Format, _Spelling]] = {
    "ini": _Spelling("[mypy]", f"[{INI_SECTION}]", _ini_value, _ini_skip_section),
    "pyproject": _Spelling("[tool.mypy]", f"[tool.{TOML_TABLE}]", _toml_value, _toml_skip_section),
}


def render(form: Format = "ini", *, skip_torch_internals: bool = False) -> str:
    """The recommended configuration as the text of a ``mypy.ini`` or a ``pyproject.toml``.

    ``skip_torch_internals`` adds the section that skips :data:`TORCH_INTERNALS`
    (for one-shot runs only: see the module docstring).
    """
    spell = _SPELLINGS[form]
    lines = [*_comment(f"{_HEADER} {_SAFE_FOR[skip_torch_internals]}"), ""]
    lines += [spell.mypy_section, *spell.options(_MYPY_OPTIONS), ""]
    lines += [*_comment(_PLUGIN_HEADER), spell.plugin_section, *spell.options(_PLUGIN_OPTIONS)]
    if skip_torch_internals:
        lines += ["", *_comment(_SKIP_WHY), *spell.skip_section(TORCH_INTERNALS)]
    return "\n".join(lines) + "\n"
