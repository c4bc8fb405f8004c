"""``PartitionSpec``: how a tensor's dims are sharded over mesh axes (global SPMD).

``PartitionSpec("dp", None, ("tp", "cp"))`` says dim 0 is sharded over ``dp``,
dim 1 is not sharded, and dim 2 over ``tp`` then ``cp``.  It is accepted as
annotation metadata and by the runtime; shard propagation is future work.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["PartitionSpec"]

Entry: TypeAlias = str | tuple[str, ...] | None


class PartitionSpec(tuple[Entry, ...]):
    """A tuple with one entry per tensor dim: ``None``, an axis name, or a tuple of names."""

    __slots__ = ()

    def __new__(cls, *entries: Entry) -> PartitionSpec:
        seen: set[str] = set()
        normalized: list[Entry] = []
        for entry in entries:
            names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
            for name in names:
                if not isinstance(name, str) or not name:
                    raise TypeError(f"PartitionSpec entries are axis names, tuples of them, or None; got {entry!r}")
                if name in seen:
                    raise ValueError(f"PartitionSpec shards two dims over axis {name!r}")
                seen.add(name)
            if entry is not None and not names:
                raise ValueError("PartitionSpec: use None, not an empty tuple, for an unsharded dim")
            normalized.append(None if entry is None else names[0] if len(names) == 1 else names)
        return super().__new__(cls, normalized)

    def __repr__(self) -> str:
        return f"PartitionSpec{tuple.__repr__(self)}"

    @property
    def axes(self) -> tuple[str, ...]:
        """Every mesh axis that shards some dim, in dim order."""
        return tuple(
            name for entry in self if entry is not None for name in ((entry,) if isinstance(entry, str) else entry)
        )
