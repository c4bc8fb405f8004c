"""The SPMD type of a tensor: one local type per mesh axis.

An :class:`SpmdType` maps mesh-axis names to :data:`AxisType` values.  An axis
it does not mention is *unknown* (gradual typing: nothing is checked there),
unless the type has a ``default``: constants such as ``torch.ones(3)`` are
``weak`` on every axis, zeros are ``zero`` on every axis.

The text form is compact, canonical and round-trips through :func:`parse`::

    dp:R, tp:S(0)          R on "dp", shard of dim 0 on "tp", others unknown
    *:weak                 a constant on every axis
    dp:V, *:zero           V on "dp", zero on every other axis
    (the empty string)     unknown on every axis
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from spmd_types.typesystem.local_types import AxisType, Constant, parse_axis_type

__all__ = ["UNKNOWN", "SpmdType", "parse"]

_DEFAULT_KEY: Final = "*"


class SpmdType:
    """An immutable, hashable map from mesh-axis name to :data:`AxisType`.

    ``default`` is the type of every axis not listed (``None``: unknown).
    Axes are kept sorted by name so that equal types have equal text forms.
    """

    __slots__ = ("_axes", "_hash", "default")

    _axes: tuple[tuple[str, AxisType], ...]
    default: Constant | None
    _hash: int

    def __init__(
        self,
        axes: Mapping[str, AxisType] | Iterable[tuple[str, AxisType]] = (),
        default: Constant | None = None,
    ) -> None:
        items = dict(axes.items() if isinstance(axes, Mapping) else axes)
        for name in items:
            _check_axis_name(name)
        if default is not None:
            # An axis whose type equals the default carries no information.
            items = {name: t for name, t in items.items() if t is not default}
        object.__setattr__(self, "_axes", tuple(sorted(items.items())))
        object.__setattr__(self, "default", default)
        object.__setattr__(self, "_hash", hash((self._axes, default)))

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("SpmdType is immutable")

    # -- mapping-like access ------------------------------------------------

    def get(self, axis: str) -> AxisType | None:
        """The type on ``axis``; the default if unlisted; ``None`` if unknown."""
        for name, t in self._axes:
            if name == axis:
                return t
        return self.default

    @property
    def axes(self) -> tuple[str, ...]:
        """The explicitly listed axis names, sorted."""
        return tuple(name for name, _ in self._axes)

    def items(self) -> tuple[tuple[str, AxisType], ...]:
        """The explicitly listed ``(axis, type)`` pairs, sorted by axis."""
        return self._axes

    def __iter__(self) -> Iterator[str]:
        return iter(self.axes)

    def __len__(self) -> int:
        return len(self._axes)

    @property
    def is_unknown(self) -> bool:
        """Whether nothing is known on any axis."""
        return not self._axes and self.default is None

    def with_axis(self, axis: str, t: AxisType | None) -> SpmdType:
        """A copy with ``axis`` set to ``t`` (``None`` makes it unknown)."""
        items = dict(self._axes)
        if t is None:
            items.pop(axis, None)
            if self.default is not None:
                raise ValueError("cannot make one axis unknown in a type with a default")
        else:
            items[axis] = t
        return SpmdType(items, self.default)

    # -- value semantics ----------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpmdType):
            return NotImplemented
        return self._axes == other._axes and self.default is other.default

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        parts = [f"{name}:{t.code}" for name, t in self._axes]
        if self.default is not None:
            parts.append(f"{_DEFAULT_KEY}:{self.default.code}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"SpmdType({str(self)!r})"

    def describe(self) -> str:
        """Human-readable form for messages: the text form, or ``unknown``."""
        return str(self) if not self.is_unknown else "unknown"


UNKNOWN: Final = SpmdType()
"""The type of a tensor nothing is known about."""


def parse(text: str) -> SpmdType:
    """Parse the text form produced by ``str(SpmdType)``."""
    axes: dict[str, AxisType] = {}
    default: Constant | None = None
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, code = part.partition(":")
        name, code = name.strip(), code.strip()
        if not sep:
            raise ValueError(f"bad SPMD type {text!r}: expected 'axis:type' items, got {part!r}")
        t = parse_axis_type(code)
        if name == _DEFAULT_KEY:
            if not isinstance(t, Constant):
                raise ValueError(f"bad SPMD type {text!r}: only weak or zero can be a default")
            default = t
        elif name in axes and axes[name] != t:
            raise ValueError(f"bad SPMD type {text!r}: axis {name!r} given twice")
        else:
            axes[name] = t
    return SpmdType(axes, default)


def _check_axis_name(name: object) -> None:
    if not isinstance(name, str) or not name or name == _DEFAULT_KEY:
        raise ValueError(f"mesh-axis names are non-empty strings, got {name!r}")
    if any(ch in name for ch in ",:") or name != name.strip():
        raise ValueError(f"mesh-axis name {name!r} may not contain ',' or ':' or surrounding spaces")
