"""The current device mesh and how an ``axis`` argument becomes a process group.

Every collective and cast takes an ``axis``, which is one of

* a mesh-axis name such as ``"tp"``, looked up in the mesh of the innermost
  ``with spmd.set_current_mesh(mesh):`` block;
* a tuple of names such as ``("dp", "cp")``: one collective over the
  flattened group of those axes (see below);
* a :class:`torch.distributed.ProcessGroup` (the group of the axis);
* a one-dimensional :class:`~torch.distributed.device_mesh.DeviceMesh`
  (for example ``mesh["tp"]``).

Resolution produces a :class:`Group`: the process group, its size and this
process's index in it.  Groups are built once (when a mesh is
entered, or the first time a tuple of axes, a process group or a sub-mesh is
seen) so that a call only pays for a dict lookup.

Several axes.  ``axis=("dp", "cp")`` runs one collective on the group of all
ranks that differ only in their ``dp`` and ``cp`` coordinates (the mesh's
``mesh["dp", "cp"]._flatten()``), with ranks ordered row-major over the axes
as listed: index ``dp_index * cp_size + cp_index``.  The names must be listed
in the mesh's order (as ``DeviceMesh`` slicing requires), and each once.  It
is the same as the calls on each axis in turn (an all-reduce over both sums
over both; a gather concatenates the ``cp`` shards, then the ``dp`` ones),
in one collective over the product of the ranks.  The flattened group is
created the first time the tuple is used under a mesh, which, like every
process-group creation, every rank of the world must reach; use
``axis_size(("dp", "cp"))`` once on every rank to create it at a point of
your choosing.

Simulated ranks.  Under ``torch.distributed._local_tensor.LocalTensorMode``
one process runs every rank, so "my index on the axis" is not a Python int:
:func:`axis_index` then returns a per-rank ``SymInt`` (usable in arithmetic and
in ``narrow``, not in ``if`` or as a list index), and the runtime's own
rank-dependent local operations run once per simulated rank (see
:func:`per_rank`).

The mesh stack is per process (not per thread).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeAlias, cast

import torch
from torch.distributed import ProcessGroup
from torch.distributed.device_mesh import DeviceMesh

from spmd_types import _dist
from spmd_types._errors import NoCurrentMeshError, SpmdRuntimeError, SpmdValueError, UnknownAxisError
from spmd_types.typesystem import flattened_axes

__all__ = [
    "AxisLike",
    "Group",
    "axis_index",
    "axis_size",
    "current_axes",
    "current_mesh",
    "per_rank",
    "rank_values",
    "resolve_axis",
    "set_current_mesh",
    "simulated",
]

AxisLike: TypeAlias = str | tuple[str, ...] | ProcessGroup | DeviceMesh
"""What an ``axis`` argument may be: a mesh-axis name, a tuple of them, a process group, a 1-D mesh."""

# -- simulated ranks (LocalTensorMode) -------------------------------------------------

try:  # LocalTensorMode is private and recent; the runtime works without it.
    from torch.distributed._local_tensor import LocalIntNode as _LocalIntNode
    from torch.distributed._local_tensor import LocalTensor as _LocalTensor
    from torch.distributed._local_tensor import enabled_local_tensor_mode as _enabled_mode
    from torch.distributed._local_tensor._c10d import _prepare_collective_groups

    _HAVE_LOCAL_TENSOR = True
except ImportError:  # pragma: no cover - older torch
    _HAVE_LOCAL_TENSOR = False


def simulated() -> Any:
    """The enabled ``LocalTensorMode``, or ``None`` when running real ranks."""
    if not _HAVE_LOCAL_TENSOR:
        return None
    return _enabled_mode()


class Group:
    """A resolved mesh axis: one process group and what the runtime needs from it.

    ``label`` names the axis in error messages (``"tp"``, or the group's name).
    ``rank`` is this process's index in the group; under ``LocalTensorMode``
    it is the index of the real process (rank 0) and :meth:`index_map` gives
    every simulated rank's index instead.
    """

    __slots__ = ("_index_map", "label", "pg", "rank", "size")

    pg: ProcessGroup
    size: int
    rank: int
    label: str
    _index_map: dict[int, int] | None

    def __init__(self, pg: ProcessGroup, label: str) -> None:
        self.pg = pg
        self.size = pg.size()
        self.rank = pg.rank()
        self.label = label
        self._index_map = None

    def __repr__(self) -> str:
        return f"Group({self.label!r}, size={self.size})"

    def index_map(self) -> dict[int, int]:
        """Global rank -> index on this axis, for every rank of the world (simulation only).

        Derived from the group's rank layout exactly as ``LocalTensorMode``
        lays out the copies of a subgroup, so that per-rank local operations
        agree with the simulated collectives.
        """
        if self._index_map is None:
            self._index_map = {r: i for members in self.members() for i, r in enumerate(members)}
        return self._index_map

    def members(self) -> list[list[int]]:
        """The global ranks of every copy of this group in the world, each in axis order (simulation only)."""
        ranks, offsets, _ = _prepare_collective_groups(self.pg)
        return [[offset + r for r in ranks] for offset in offsets]


def per_rank(x: torch.Tensor, group: Group, fn: Callable[[torch.Tensor, int], torch.Tensor]) -> torch.Tensor:
    """``fn(local_tensor, my_index_on_axis)`` on every rank this process runs.

    On a real process group that is one call with this process's index.  Under
    ``LocalTensorMode`` it is one call per simulated rank, each with that
    rank's index as a plain int, so ``fn`` may branch and index freely.
    """
    mode = simulated()
    if mode is None:
        return fn(x, group.rank)
    if not isinstance(x, _LocalTensor):
        raise SpmdRuntimeError(
            f"under LocalTensorMode the input must be a LocalTensor (one tensor per simulated rank), got a "
            f"plain {type(x).__name__}: create it inside the mode, e.g. with mode.rank_map(lambda rank: ...)"
        )
    index = group.index_map()
    return mode.tensor_map(x, lambda r, t: fn(t, index[r]))  # type: ignore[no-any-return]


def local_tensors(x: torch.Tensor) -> dict[int, torch.Tensor] | None:
    """Global rank -> local tensor when ``x`` is a simulated ``LocalTensor``, else ``None``."""
    if _HAVE_LOCAL_TENSOR and isinstance(x, _LocalTensor):
        return dict(x._local_tensors)
    return None


def rank_values(value: int | torch.SymInt, ranks: Iterable[int]) -> dict[int, int]:
    """What ``value`` is on each of the simulated ``ranks``: a plain int everywhere, or a per-rank ``SymInt``'s ints."""
    node = getattr(value, "node", None)
    local = getattr(node, "_local_ints", None)
    if local is not None:
        return {r: int(local[r]) for r in ranks}
    constant = node.maybe_as_int() if node is not None else None  # a SymInt that holds one int
    return dict.fromkeys(ranks, int(value) if constant is None else int(constant))


def per_rank_int(group: Group, values: tuple[int, ...]) -> int | torch.SymInt:
    """``values[my index on the axis]``: an int, or a per-rank ``SymInt`` under ``LocalTensorMode``."""
    mode = simulated()
    if mode is None:
        return values[group.rank]
    index = group.index_map()
    mine = {r: values[index[r]] for r in mode.ranks}
    distinct = set(mine.values())
    if len(distinct) == 1:
        return distinct.pop()
    return torch.SymInt(_LocalIntNode(mine))  # type: ignore[no-untyped-call]


# -- the current mesh --------------------------------------------------------------


class _MeshEntry:
    __slots__ = ("groups", "mesh", "names")

    def __init__(self, mesh: DeviceMesh) -> None:
        if not isinstance(mesh, DeviceMesh):
            raise SpmdValueError(
                f"set_current_mesh needs a DeviceMesh, got {type(mesh).__name__}; e.g. "
                'init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))'
            )
        names = mesh.mesh_dim_names
        if not names:
            raise UnknownAxisError(
                "set_current_mesh needs a DeviceMesh with mesh_dim_names, e.g. "
                'init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))'
            )
        self.mesh = mesh
        self.names: tuple[str, ...] = tuple(names)
        self.groups: dict[str | tuple[str, ...], Group] = {name: Group(mesh.get_group(name), name) for name in names}

    def flattened(self, axes: tuple[object, ...]) -> Group:
        """The group of several axes flattened into one, created (collectively) on first use."""
        names, problem = flattened_axes(axes)
        if names is None:
            raise UnknownAxisError(problem)
        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise UnknownAxisError.with_known(
                f"the current mesh has no axis {unknown[0]!r}; its axes are {', '.join(map(repr, self.names))}",
                self.names,
            )
        if len(names) == 1:
            return self.groups[names[0]]
        order = [self.names.index(name) for name in names]
        if order != sorted(order):
            in_order = tuple(sorted(names, key=self.names.index))
            raise UnknownAxisError(
                f"the axes {names!r} are not in the order of the mesh's axes {self.names!r}; write {in_order!r} "
                f"(the flattened group orders ranks row-major over the axes as the mesh lays them out)"
            )
        group = Group(self.mesh[names]._flatten().get_group(), ",".join(names))
        self.groups[names] = group
        return group


_STACK: list[_MeshEntry] = []


@contextlib.contextmanager
def set_current_mesh(mesh: DeviceMesh) -> Iterator[DeviceMesh]:
    """``with set_current_mesh(mesh: DeviceMesh):`` makes ``mesh``'s axis names usable as ``axis``.

    Blocks nest; the innermost mesh wins and the previous one is restored on
    exit (also when an exception leaves the block).  The mesh must have
    ``mesh_dim_names``.  Yields ``mesh``.
    """
    entry = _MeshEntry(mesh)
    _STACK.append(entry)
    try:
        yield mesh
    finally:
        _STACK.remove(entry)


def current_mesh() -> DeviceMesh | None:
    """``current_mesh() -> DeviceMesh | None``: the mesh of the innermost ``set_current_mesh`` block."""
    return _STACK[-1].mesh if _STACK else None


def current_axes() -> tuple[str, ...]:
    """The axis names of the current mesh, in its order; ``()`` when no mesh is current."""
    return _STACK[-1].names if _STACK else ()


# Process groups and 1-D meshes passed directly as ``axis``, keyed by identity.
_BY_OBJECT: dict[int, tuple[object, Group]] = {}


def resolve_axis(axis: AxisLike) -> Group:
    """The :class:`Group` of ``axis`` (a name in the current mesh, a group, or a 1-D mesh)."""
    if type(axis) is str:
        if not _STACK:
            raise NoCurrentMeshError(
                f"axis {axis!r} is a mesh-axis name, but no mesh is current; wrap the code in "
                f"`with spmd_types.set_current_mesh(device_mesh):` or pass the axis's ProcessGroup"
            )
        group = _STACK[-1].groups.get(axis)
        if group is None:
            known = _STACK[-1].names
            raise UnknownAxisError.with_known(
                f"the current mesh has no axis {axis!r}; its axes are {', '.join(map(repr, known))}", known
            )
        return group
    if type(axis) is tuple:
        if not _STACK:
            raise NoCurrentMeshError(
                f"axis {axis!r} names mesh axes, but no mesh is current; wrap the code in "
                f"`with spmd_types.set_current_mesh(device_mesh):`"
            )
        return _STACK[-1].groups.get(axis) or _STACK[-1].flattened(axis)
    cached = _BY_OBJECT.get(id(axis))
    if cached is not None and cached[0] is axis:
        return cached[1]
    return _resolve_object(axis)


def _resolve_object(axis: object) -> Group:
    if isinstance(axis, _dist.ProcessGroup):
        group = Group(axis, f"group {axis.group_name}")
    elif isinstance(axis, DeviceMesh):
        if axis.ndim != 1:
            raise UnknownAxisError(
                f"a DeviceMesh passed as axis must be one-dimensional, got one with {axis.ndim} dims "
                f"{axis.mesh_dim_names}; pass one of its axis names or mesh[name]"
            )
        names = axis.mesh_dim_names
        group = Group(axis.get_group(), names[0] if names else f"group {axis.get_group().group_name}")
    elif isinstance(axis, str):  # a str subclass
        return resolve_axis(str(axis))
    else:
        raise UnknownAxisError(
            f"axis must be a mesh-axis name, a tuple of them, a ProcessGroup or a 1-D DeviceMesh, "
            f"got {type(axis).__name__}"
        )
    _BY_OBJECT[id(axis)] = (axis, group)
    return group


def axis_size(axis: AxisLike) -> int:
    """``axis_size(axis) -> int``: the number of ranks on ``axis`` (name, process group or 1-D mesh)."""
    return resolve_axis(axis).size


def axis_index(axis: AxisLike) -> int:
    """``axis_index(axis) -> int``: this rank's index on ``axis``, in ``range(axis_size(axis))``.

    On real ranks an ``int``.  Under ``LocalTensorMode`` a per-rank ``SymInt``
    (``dist.get_rank(group)`` would give the real process's rank for every
    simulated rank): it works in arithmetic and as a ``narrow`` offset, but
    not in ``if``/``bool()`` or as a Python index.  It is typed ``int``, as
    torch types its own symbolic sizes, so that it works with torch's
    operators; the mypy plugin treats it as varying on ``axis``.
    """
    group = resolve_axis(axis)
    mode = simulated()
    if mode is None:
        return group.rank
    if type(axis) is str:
        return _STACK[-1].mesh.get_local_rank(axis)
    # A per-rank SymInt, which behaves as an int (see the docstring).
    return cast(int, per_rank_int(group, tuple(range(group.size))))
