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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ConfigError", "PluginOptions", "Variant", "load"]

_INI_SECTION = "mypy.plugins.spmd"
_TOML_TABLE = "spmd-mypy"


class ConfigError(ValueError):
    """An option with a value the plugin does not understand."""


_OPTIONS = ("axes", "strict_axes", "debug", "library_axes", "variants")


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


@dataclass(frozen=True)
class PluginOptions:
    axes: tuple[str, ...] = ()
    strict_axes: bool = False
    debug: bool = False
    library_axes: tuple[tuple[str, str], ...] = ()
    variants: tuple[Variant, ...] = ()

    def as_data(self) -> dict[str, Any]:
        """A JSON-friendly form, stored in mypy's cache so that a change invalidates it.

        ``variants`` is left out: it tells spmd-check which runs to make, and
        each run passes its switches to mypy, whose cache already depends on them.
        """
        return {"axes": list(self.axes), "strict_axes": self.strict_axes, "debug": self.debug,
                "library_axes": dict(self.library_axes)}

    def library_axis(self, role: str) -> str:
        """The mesh axis of the parallel group ``role`` (``"tp"``, ``"cp"``, ...) of other libraries."""
        return dict(self.library_axes).get(role, role)


def load(config_file: str | None) -> PluginOptions:
    """Options from ``config_file`` (an ini or pyproject file); defaults if absent."""
    if not config_file:
        return PluginOptions()
    path = Path(config_file)
    if not path.is_file():
        return PluginOptions()
    if path.suffix == ".toml":
        table = tomllib.loads(path.read_text()).get("tool", {}).get(_TOML_TABLE, {})
        return _build(table, path)
    parser = configparser.ConfigParser()
    parser.read(path)
    if not parser.has_section(_INI_SECTION):
        return PluginOptions()
    section = dict(parser.items(_INI_SECTION))
    values: dict[str, Any] = {}
    if "axes" in section:
        values["axes"] = [a.strip() for a in section["axes"].split(",") if a.strip()]
    for flag in ("strict_axes", "debug"):
        if flag in section:
            values[flag] = _boolean(section[flag], flag, path)
    if "variants" in section:
        values["variants"] = _ini_variants(section["variants"], path)
    if "library_axes" in section:
        values["library_axes"] = dict(_pair(item, path) for item in section["library_axes"].split(",") if item.strip())
    unknown = set(section) - set(_OPTIONS)
    if unknown:
        raise ConfigError(f"{path}: unknown option(s) in [{_INI_SECTION}]: {', '.join(sorted(unknown))}")
    return _build(values, path)


def _boolean(text: str, name: str, path: Path) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{path}: {name} must be true or false, got {text!r}")


def _pair(item: str, path: Path) -> tuple[str, str]:
    role, equals, axis = item.partition("=")
    if not equals or not role.strip() or not axis.strip():
        raise ConfigError(f"{path}: library_axes takes group=axis pairs (tp=model, cp=context), got {item.strip()!r}")
    return role.strip(), axis.strip()


def _ini_variants(text: str, path: Path) -> dict[str, dict[str, bool]]:
    """``sp: SEQUENCE_PARALLEL=true, TP1=false; nosp: ...`` as the pyproject form's table."""
    variants: dict[str, dict[str, bool]] = {}
    for entry in filter(str.strip, text.split(";")):
        name, colon, switches = entry.partition(":")
        if not colon or not name.strip():
            raise ConfigError(
                f"{path}: variants takes `name: SWITCH=true, OTHER=false; name2: ...`, got {entry.strip()!r}"
            )
        variants[name.strip()] = dict(
            (switch.strip(), _boolean(value, f"switch {switch.strip()} of variant {name.strip()}", path))
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


def _build(values: dict[str, Any], path: Path) -> PluginOptions:
    unknown = set(values) - set(_OPTIONS)
    if unknown:
        raise ConfigError(f"{path}: unknown spmd option(s): {', '.join(sorted(unknown))}")
    axes = values.get("axes", [])
    if not isinstance(axes, list) or not all(isinstance(a, str) and a for a in axes):
        raise ConfigError(f"{path}: axes must be a list of mesh-axis names")
    strict, debug = values.get("strict_axes", False), values.get("debug", False)
    if not isinstance(strict, bool) or not isinstance(debug, bool):
        raise ConfigError(f"{path}: strict_axes and debug must be true or false")
    if strict and not axes:
        raise ConfigError(f"{path}: strict_axes needs the list of mesh axes in axes")
    library_axes = values.get("library_axes", {})
    if not isinstance(library_axes, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v for k, v in library_axes.items()
    ):
        raise ConfigError(f"{path}: library_axes must map group names to mesh-axis names")
    variants = _variants(values["variants"], path) if "variants" in values else ()
    return PluginOptions(tuple(axes), strict, debug, tuple(sorted(library_axes.items())), variants)
