"""The plugin's options, read from the mypy configuration file.

In ``mypy.ini`` or ``setup.cfg``::

    [mypy.plugins.spmd]
    axes = dp, tp, cp
    strict_axes = true
    library_axes = tp=model, cp=context

In ``pyproject.toml``::

    [tool.spmd-mypy]
    axes = ["dp", "tp", "cp"]
    strict_axes = true
    library_axes = {tp = "model", cp = "context"}

``axes`` names the mesh axes; an annotation naming another axis is an error
(a typo such as ``"pd"`` is caught).  ``strict_axes`` makes every annotation
name every axis in ``axes``.  ``debug`` reports internal plugin failures as
notes instead of silently treating the expression as unknown.
``variants`` names configurations of the codebase that ``spmd-check`` checks
one after the other (the plugin itself ignores it): each sets module-level
switches true or false, as mypy's ``always_true``/``always_false`` do::

    variants = sp: SEQUENCE_PARALLEL=true; nosp: SEQUENCE_PARALLEL=false

    variants = {sp = {SEQUENCE_PARALLEL = true}, nosp = {SEQUENCE_PARALLEL = false}}

``library_axes`` names the mesh axis of each parallel group that other
libraries pick by themselves (Megatron's mapping functions use the
tensor-parallel group ``tp`` when given no group); by default each is the axis
named like the group.
"""

from __future__ import annotations

import configparser
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final, NamedTuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "INI_SECTION", "PLUGIN", "TOML_TABLE", "ConfigError", "OptionHelp", "PluginOptions", "Variant", "load",
    "option_help",
]

PLUGIN: Final = "spmd_mypy.plugin"
"""What mypy's ``plugins`` option names to load the plugin."""

INI_SECTION: Final = "mypy.plugins.spmd"
TOML_TABLE: Final = "spmd-mypy"
"""Where the options are: ``[mypy.plugins.spmd]`` in an ini file, ``[tool.spmd-mypy]`` in ``pyproject.toml``."""


class ConfigError(ValueError):
    """An option with a value the plugin does not understand."""


@dataclass(frozen=True)
class Variant:
    """A named configuration: the switches mypy is told are always true, and always false."""

    name: str
    true: tuple[str, ...] = ()
    false: tuple[str, ...] = ()

    def mypy_flags(self) -> list[str]:
        """mypy's command-line flags for this configuration."""
        return [flag for name in self.true for flag in ("--always-true", name)] + [
            flag for name in self.false for flag in ("--always-false", name)
        ]


# Named tuples rather than dataclasses: mypy loads this module on every run, a warm one included.
class OptionHelp(NamedTuple):
    """How the recommended configuration shows an option: an example value, commented out, and why."""

    example: str | bool | tuple[str, ...]
    why: str


class _Reading(NamedTuple):
    """How one option is read: its ini text into the value the TOML form holds, that value into the field's."""

    from_ini: Callable[[str, str, Path], object]
    from_toml: Callable[[object, Path], object]
    as_data: Callable[[Any], object] | None  # its form in mypy's cache; None: left out of the cache
    help: OptionHelp | None = None


def _option(default: object, reading: _Reading) -> Any:
    return field(default=default, metadata={"reading": reading})


def _boolean(text: str, name: str, path: Path) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{path}: {name} must be true or false, got {text!r}")


def _names(text: str, name: str, path: Path) -> list[str]:
    return [a.strip() for a in text.split(",") if a.strip()]


def _axes(value: object, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(a, str) and a for a in value):
        raise ConfigError(f"{path}: axes must be a list of mesh-axis names")
    return tuple(value)


def _flag(value: object, path: Path) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: {' and '.join(_FLAGS)} must be true or false")
    return value


def _pairs(text: str, name: str, path: Path) -> dict[str, str]:
    return dict(_pair(item, path) for item in text.split(",") if item.strip())


def _pair(item: str, path: Path) -> tuple[str, str]:
    role, equals, axis = item.partition("=")
    if not equals or not role.strip() or not axis.strip():
        raise ConfigError(f"{path}: library_axes takes group=axis pairs (tp=model, cp=context), got {item.strip()!r}")
    return role.strip(), axis.strip()


def _library_axes(value: object, path: Path) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v for k, v in value.items()
    ):
        raise ConfigError(f"{path}: library_axes must map group names to mesh-axis names")
    return tuple(sorted(value.items()))


def _ini_variants(text: str, name: str, path: Path) -> dict[str, dict[str, bool]]:
    """``sp: SEQUENCE_PARALLEL=true, TP1=false; nosp: ...`` as the pyproject form's table."""
    variants: dict[str, dict[str, bool]] = {}
    for entry in filter(str.strip, text.split(";")):
        variant, colon, switches = entry.partition(":")
        if not colon or not variant.strip():
            raise ConfigError(
                f"{path}: variants takes `name: SWITCH=true, OTHER=false; name2: ...`, got {entry.strip()!r}"
            )
        variants[variant.strip()] = dict(
            (switch.strip(), _boolean(value, f"switch {switch.strip()} of variant {variant.strip()}", path))
            for switch, _, value in (item.partition("=") for item in switches.split(",") if item.strip())
        )
    return variants


def _variants(table: object, path: Path) -> tuple[Variant, ...]:
    if not isinstance(table, dict) or not all(
        isinstance(name, str) and name and isinstance(switches, dict) and switches
        and all(isinstance(k, str) and k and isinstance(v, bool) for k, v in switches.items())
        for name, switches in table.items()
    ):
        raise ConfigError(f"{path}: variants must map each variant's name to switches set true or false")
    return tuple(
        Variant(name, tuple(k for k, v in switches.items() if v), tuple(k for k, v in switches.items() if not v))
        for name, switches in table.items()
    )


@dataclass(frozen=True)
class PluginOptions:
    """The plugin's options; each field is one option, under its own name (see the module docstring)."""

    axes: tuple[str, ...] = _option((), _Reading(_names, _axes, list, OptionHelp(
        ("dp", "tp", "cp"), "The mesh axes of your program: an annotation naming another axis is an error.")))
    strict_axes: bool = _option(False, _Reading(_boolean, _flag, bool, OptionHelp(
        False, "Every annotation must name every axis listed in `axes`.")))
    debug: bool = _option(False, _Reading(_boolean, _flag, bool, OptionHelp(
        False, "Report internal plugin failures as notes (for bug reports).")))
    library_axes: tuple[tuple[str, str], ...] = _option((), _Reading(_pairs, _library_axes, dict))
    # spmd-check's runs, each passing its switches to mypy, whose cache depends on them already.
    variants: tuple[Variant, ...] = _option((), _Reading(_ini_variants, _variants, None))

    def as_data(self) -> dict[str, Any]:
        """A JSON-friendly form, stored in mypy's cache so that a change invalidates it."""
        return {f.name: reading.as_data(getattr(self, f.name))
                for f, reading in _READINGS.items() if reading.as_data is not None}

    def library_axis(self, role: str) -> str:
        """The mesh axis of the parallel group ``role`` (``"tp"``, ``"cp"``, ...) of other libraries."""
        return dict(self.library_axes).get(role, role)


_READINGS: Final = {f: f.metadata["reading"] for f in fields(PluginOptions)}
_FLAGS: Final = tuple(f.name for f in _READINGS if isinstance(f.default, bool))
"""The options that are true or false, checked together (one message names them all)."""


def option_help() -> dict[str, OptionHelp]:
    """The options the recommended configuration shows, by name, in the order they are declared."""
    return {f.name: reading.help for f, reading in _READINGS.items() if reading.help is not None}


def load(config_file: str | None) -> PluginOptions:
    """Options from ``config_file`` (an ini or pyproject file); defaults if absent."""
    if not config_file:
        return PluginOptions()
    path = Path(config_file)
    if not path.is_file():
        return PluginOptions()
    if path.suffix == ".toml":
        table = tomllib.loads(path.read_text()).get("tool", {}).get(TOML_TABLE, {})
        return _build(table, path)
    parser = configparser.ConfigParser()
    parser.read(path)
    if not parser.has_section(INI_SECTION):
        return PluginOptions()
    section = dict(parser.items(INI_SECTION))
    values = {f.name: reading.from_ini(section[f.name], f.name, path)
              for f, reading in _READINGS.items() if f.name in section}
    unknown = set(section) - {f.name for f in _READINGS}
    if unknown:
        raise ConfigError(f"{path}: unknown option(s) in [{INI_SECTION}]: {', '.join(sorted(unknown))}")
    return _build(values, path)


def _build(values: dict[str, Any], path: Path) -> PluginOptions:
    unknown = set(values) - {f.name for f in _READINGS}
    if unknown:
        raise ConfigError(f"{path}: unknown spmd option(s): {', '.join(sorted(unknown))}")
    read = {f.name: reading.from_toml(values[f.name], path) for f, reading in _READINGS.items() if f.name in values}
    options = PluginOptions(**read)
    if options.strict_axes and not options.axes:
        raise ConfigError(f"{path}: strict_axes needs the list of mesh axes in axes")
    return options
