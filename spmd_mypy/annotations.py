"""Reading SPMD annotations: ``Annotated[Tensor, R["dp"], V["tp"]]`` and ``Spmd[Tensor, Literal["dp:R, tp:V"]]``.

The hook runs during semantic analysis, before mypy would drop ``Annotated``
metadata, and sees the metadata unevaluated: ``R["dp"]`` arrives as an
unbound type ``R`` with argument ``"dp"``, ``S["tp", 0]`` keeps its int.  It
resolves the marker names (so ``spmd.R`` and aliased imports work), builds the
:class:`SpmdType` and encodes it.  Metadata of other libraries is left alone.
Mistakes are ``spmd-annotation`` errors and fall back to the unannotated type.

``Annotated`` metadata is dropped by mypy inside type aliases (python/mypy#17514);
``Spmd[Tensor, Literal["dp:R, tp:V"]]`` is the spelling that survives them, with
the SPMD type in its canonical text form.  Checkers without the plugin read it
as ``Tensor`` (the stubs declare ``Spmd`` a generic alias of its first
argument).  A bare string or markers in its place are read too, and reported:
those checkers reject them, and mypy looks up ``"dp"`` in ``R["dp"]`` as a name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from mypy.plugin import AnalyzeTypeContext
from mypy.types import (
    AnyType,
    Instance,
    RawExpressionType,
    Type,
    TypeOfAny,
    UnboundType,
    UnionType,
    get_proper_type,
)

from spmd_mypy.compat import analyze_base, analyzed_file, analyzed_module, lookup_type_name
from spmd_mypy.config import PluginOptions
from spmd_mypy.encoding import Encoder, is_tensor
from spmd_mypy.error_codes import ANNOTATION, CODES
from spmd_mypy.fullnames import (
    AXIS_MARKERS,
    DEVICE_MESH,
    LITERAL,
    LOCAL_TYPE_MARKERS,
    PARAMETER,
    PARTITION_SPEC,
    PROCESS_GROUP,
    SHARD_MARKERS,
    TENSOR,
)
from spmd_mypy.partition_specs import calls_at, partition_spec
from spmd_mypy.session import Session, StubsWarned
from spmd_types.typesystem import (
    LOCAL_TYPES,
    AnnotationError,
    Axis,
    AxisTypes,
    Code,
    EntryOrders,
    PartitionSpec,
    SpmdType,
    axis_types_marker,
    bounded_put,
    markers_from_text,
    replicated_elsewhere,
    shard_marker,
    spec_orders,
    spmd_type_from_metadata,
)

__all__ = ["analyze"]


class _Bad(Exception):
    """A malformed annotation; the message is for the user."""


# The same annotations recur thousands of times in a program: what each annotation's metadata, each marker,
# each text form and each set of markers declares is remembered (a function of what is read, never of the
# place).  Mistakes are not remembered: each place reads its annotation again and reports it.  Bounded, as a
# daemon runs on.
_READINGS: Final[dict[tuple[object, ...], _Declared | tuple[str, ...]]] = {}
_MARKERS: Final[dict[tuple[object, ...], AxisTypes]] = {}
_FROM_TEXT: Final[dict[str, tuple[AxisTypes, ...]]] = {}
_COMBINED: Final[dict[tuple[AxisTypes | PartitionSpec, ...], SpmdType]] = {}
_REMEMBERED_MAX: Final = 4096


class _Declared(NamedTuple):
    """The SPMD type an annotation declares, and the tensor's rank and entry orders where a ``PartitionSpec`` says
    them; ``respell``: a ``Spmd[...]`` spelled as plain mypy and pyright reject, to be reported at each place."""

    spmd: SpmdType
    rank: int | None = None
    orders: EntryOrders = ()
    respell: bool = False


def analyze(session: Session, ctx: AnalyzeTypeContext, is_alias_form: bool) -> Type:
    """The type an ``Annotated[...]`` or ``Spmd[...]`` annotation stands for.

    That the stubs are missing is told once per module, not once per
    annotation (see :func:`_stubs_missing`).
    """
    api = ctx.api
    args = ctx.type.args
    if len(args) < 2:
        what = "Spmd[...] needs a tensor type and an SPMD type" if is_alias_form else (
            "Annotated[...] must have exactly one type argument and at least one annotation")
        api.fail(what, ctx.context, code=ANNOTATION if is_alias_form else None)
        return AnyType(TypeOfAny.from_error)
    base = analyze_base(api, args[0])
    metadata = args[1:]
    if not is_alias_form and not any(_could_be_ours(m) for m in metadata):
        return base  # foreign metadata only (jaxtyping, torch's own): what mypy would do
    names, key = _resolve(ctx, metadata, is_alias_form)
    axes_or_type = _READINGS.get(key) if key is not None else None
    if axes_or_type is None:
        try:
            axes_or_type = _read_metadata(ctx, metadata, names, is_alias_form, session.options)
        except _Bad as error:
            api.fail(str(error), ctx.context, code=ANNOTATION)
            return base
        if axes_or_type is None:
            return base  # nothing of the plugin's (read each time, as are mistakes)
        if key is not None:
            bounded_put(_READINGS, key, axes_or_type, _REMEMBERED_MAX)
    encoder = Encoder(session.modules, api.named_type)
    if isinstance(axes_or_type, _Declared):
        if axes_or_type.respell:
            _respell(ctx, axes_or_type.spmd)
        typed = _tensor(ctx, base, axes_or_type, encoder, session.options)
    else:
        typed = _axis_group(ctx, base, axes_or_type, encoder)
    if typed is None:
        _stubs_missing(ctx, encoder, session.stubs_warned)
    return typed or base


def _could_be_ours(item: Type) -> bool:
    # Markers are names (possibly imported under another name); literals never are; a call may be a PartitionSpec.
    return (isinstance(item, UnboundType) and item.original_str_expr is None) or _is_call(item)


def _is_call(item: Type) -> bool:
    """Whether ``item`` is what mypy makes of an expression that is no type, such as a call."""
    return isinstance(item, RawExpressionType) and item.literal_value is None


def _resolve(
    ctx: AnalyzeTypeContext, metadata: Sequence[Type], is_alias_form: bool
) -> tuple[list[str | None], tuple[object, ...] | None]:
    """The full name each item of ``metadata`` resolves to (``None``: an item that is no name), and the key of
    what :func:`_read_metadata` reads of it, where that is all it reads: the form, and each item's marker key
    (see :func:`_add_marker_key`).  The key is ``None`` where an item is anything but a name with strings or
    literals for arguments (a call, which may be a ``PartitionSpec`` read from the source and completed from the
    configured axes; a string; a nested type): such metadata is read each time.

    Names resolve in the scope of the annotation, so each place looks them up; the key is one flat tuple,
    which is cheaper to build and hash than a tuple of tuples."""
    api = ctx.api
    context = ctx.context
    names: list[str | None] = []
    key: list[object] | None = [is_alias_form]
    for item in metadata:
        if not isinstance(item, UnboundType):
            names.append(None)
            key = None
            continue
        fullname = lookup_type_name(api, item.name, context)
        names.append(fullname)
        if key is not None and (item.original_str_expr is not None or not _add_marker_key(key, item, fullname)):
            key = None
    return names, tuple(key) if key is not None else None


def _read_metadata(
    ctx: AnalyzeTypeContext, metadata: Sequence[Type], names: Sequence[str | None], is_alias_form: bool,
    options: PluginOptions,
) -> _Declared | tuple[str, ...] | None:
    """What the metadata, whose names resolve to ``names`` (``None``: an item that is no name), declares: an SPMD
    type, the axes of its ``Axis[...]`` markers in order, or ``None`` (nothing of the plugin's)."""
    if is_alias_form:
        return _read_alias_form(metadata, names)
    markers: list[AxisTypes] = []
    specs: list[PartitionSpec] = []
    axes: list[str] = []
    for item, fullname in zip(metadata, names):
        if _is_call(item):
            spec = _partition_spec(ctx, item)
            if spec is not None:
                specs.append(spec)
            continue
        if not isinstance(item, UnboundType):
            continue  # another library's metadata
        if fullname in AXIS_MARKERS:
            axes.append(_axis_name(item))
        elif fullname in LOCAL_TYPE_MARKERS or fullname in SHARD_MARKERS:
            markers.append(_marker(item, fullname))
    if axes and markers:
        raise _Bad("Axis[...] marks process groups and cannot be combined with tensor markers")
    if len(set(axes)) < len(axes):
        raise _Bad(f"Axis[...] names each mesh axis once, got {', '.join(axes)}")
    if axes and specs:
        raise _Bad("Axis[...] marks process groups and cannot be combined with a PartitionSpec")
    if axes:
        return tuple(axes)
    if len(specs) > 1:
        raise _Bad("an annotation takes one PartitionSpec")
    spmd = _combined([*specs, *markers])
    if spmd is None:
        return None
    if not specs:
        return _Declared(spmd)
    # The mesh's other axes, where configured, are replicated (markers may say otherwise).
    return _Declared(replicated_elsewhere(spmd, options.axes), len(specs[0]), spec_orders(specs[0]))


def _partition_spec(ctx: AnalyzeTypeContext, item: Type) -> PartitionSpec | None:
    """The ``PartitionSpec`` that the call ``item`` stands for, read from the source; ``None``: another call."""
    tree = analyzed_file(ctx.api)
    if tree is None:
        return None
    calls = calls_at(tree.path, item.line, item.column)
    try:
        return partition_spec(calls, lambda name: lookup_type_name(ctx.api, name, ctx.context) in PARTITION_SPEC)
    except AnnotationError as error:
        raise _Bad(str(error)) from None


_ALIAS_FORM = 'Spmd[...] takes a tensor type and the SPMD type as a Literal string, as in Spmd[Tensor, Literal["dp:R"]]'


def _read_alias_form(metadata: Sequence[Type], names: Sequence[str | None]) -> _Declared | None:
    """The SPMD type of ``Spmd[Tensor, Literal["dp:R, tp:V"]]``.

    A bare string (``Spmd[Tensor, "dp:R"]``) or markers (``Spmd[Tensor, R["dp"]]``)
    are read as well, marked to be reported with the spelling to write instead
    (:func:`_respell`): checkers without the plugin reject them.
    """
    markers: list[AxisTypes] = []
    rejected_elsewhere = False
    for item, fullname in zip(metadata, names):
        if isinstance(item, RawExpressionType) and isinstance(item.literal_value, str):
            markers.extend(_from_text(item.literal_value))
            rejected_elsewhere = True
            continue
        if not isinstance(item, UnboundType):
            raise _Bad(_ALIAS_FORM)
        if fullname in LITERAL and item.args:
            for arg in item.args:
                markers.extend(_from_text(_literal_string(arg)))
        elif fullname in LOCAL_TYPE_MARKERS or fullname in SHARD_MARKERS:
            markers.append(_marker(item, fullname))
            rejected_elsewhere = True
        else:
            raise _Bad(f"{_ALIAS_FORM}; {item.name} is neither")
    spmd = _combined(markers)
    return _Declared(spmd, respell=rejected_elsewhere) if spmd is not None else None


def _respell(ctx: AnalyzeTypeContext, spmd: SpmdType) -> None:
    """Report a ``Spmd[...]`` that only the plugin reads, with the spelling to write instead."""
    base = ctx.type.args[0]
    shown = base.name if isinstance(base, UnboundType) else "Tensor"
    _fail(ctx, f'Spmd[...] is read here, but plain mypy and pyright reject this spelling; write '
               f'Spmd[{shown}, Literal["{spmd}"]] (or Annotated[{shown}, ...] with the markers)', Code.ANNOTATION)


def _literal_string(arg: Type) -> str:
    """The string of one ``Literal[...]`` argument (``"dp"`` arrives as a name, ``"dp:R"`` as raw text)."""
    if isinstance(arg, UnboundType) and arg.original_str_expr is not None:
        return arg.original_str_expr
    if isinstance(arg, RawExpressionType) and isinstance(arg.literal_value, str):
        return arg.literal_value
    raise _Bad(_ALIAS_FORM)


def _from_text(text: str) -> tuple[AxisTypes, ...]:
    found = _FROM_TEXT.get(text)
    if found is None:
        try:
            found = tuple(markers_from_text(text))
        except AnnotationError as error:
            raise _Bad(str(error)) from None
        bounded_put(_FROM_TEXT, text, found, _REMEMBERED_MAX)
    return found


def _combined(markers: Sequence[AxisTypes | PartitionSpec]) -> SpmdType | None:
    key = tuple(markers)  # markers and specs compare by value: the type is a function of them
    found = _COMBINED.get(key)
    if found is None:
        try:
            found = spmd_type_from_metadata(markers)
        except AnnotationError as error:
            raise _Bad(str(error)) from None
        if found is not None:
            bounded_put(_COMBINED, key, found, _REMEMBERED_MAX)
    return found


def _string_arg(arg: Type, marker: str) -> str:
    if isinstance(arg, UnboundType) and arg.original_str_expr is not None:
        return arg.original_str_expr
    if isinstance(arg, RawExpressionType) and arg.literal_value is not None:
        raise _Bad(f"{marker}[...] takes mesh-axis names as strings, got {arg.literal_value!r}")
    shown = arg.name if isinstance(arg, UnboundType) else str(arg)
    raise _Bad(f'{marker}[...] takes mesh-axis names as strings, as in {marker}["{shown}"], got {shown}')


def _marker(item: UnboundType, fullname: str) -> AxisTypes:
    """What marker ``item`` (``R["dp"]``, ``S["tp", 0]``), whose name resolves to ``fullname``, declares."""
    parts: list[object] = []
    key = tuple(parts) if _add_marker_key(parts, item, fullname) else None
    found = _MARKERS.get(key) if key is not None else None
    if found is None:
        found = _read_marker(item, fullname)
        if key is not None:
            bounded_put(_MARKERS, key, found, _REMEMBERED_MAX)
    return found


def _add_marker_key(key: list[object], item: UnboundType, fullname: str | None) -> bool:
    """Add to ``key`` what :func:`_read_marker` reads of ``item``, and say whether it can succeed: the full name its
    name resolves to (never the name: a module may import ``R`` from elsewhere), the number of arguments, and each
    argument: its string, or ``None`` then the type name and value of a literal (the type tells 1 from True; the
    ``None`` keeps the flat key unambiguous).  ``False`` for an argument that is neither, which is read (and
    reported) each time."""
    args = item.args
    key.append(fullname)
    key.append(len(args))
    for arg in args:
        if isinstance(arg, UnboundType):
            text = arg.original_str_expr
            if text is None:
                return False
            key.append(text)
        elif isinstance(arg, RawExpressionType):
            value = arg.literal_value
            if value is None:
                return False
            key.append(None)
            key.append(arg.base_type_name)
            key.append(value)
        else:
            return False
    return True


def _read_marker(item: UnboundType, fullname: str) -> AxisTypes:
    code = LOCAL_TYPE_MARKERS.get(fullname)
    short = item.name.rpartition(".")[2]
    if code is not None:
        if not item.args:
            raise _Bad(f'{short} needs mesh-axis names: {short}["dp"]')
        names = tuple(_string_arg(arg, short) for arg in item.args)
        try:
            return axis_types_marker(LOCAL_TYPES[code], names)
        except AnnotationError as error:
            raise _Bad(str(error)) from None
    # A shard: S["tp", 0].
    if len(item.args) != 2:
        raise _Bad(f'{short}[...] takes a mesh-axis name and a tensor dim, as in {short}["tp", 0]')
    axis = _string_arg(item.args[0], short)
    dim = item.args[1]
    if not (isinstance(dim, RawExpressionType) and isinstance(dim.literal_value, int)
            and not isinstance(dim.literal_value, bool)):
        raise _Bad(f'{short}[axis, dim]: the dim must be an int literal, as in {short}["{axis}", 0]')
    return shard_marker((axis, dim.literal_value))


def _axis_name(item: UnboundType) -> str:
    if len(item.args) != 1:
        raise _Bad('Axis[...] takes one mesh-axis name: Axis["tp"]')
    name = _string_arg(item.args[0], "Axis")
    try:
        return Axis(name).name
    except AnnotationError as error:
        raise _Bad(str(error)) from None


def _tensor(
    ctx: AnalyzeTypeContext, base: Type, declared: _Declared, encoder: Encoder, options: PluginOptions
) -> Type | None:
    """The SPMD-typed tensor; ``base`` after a reported mistake; ``None`` if it cannot be written."""
    proper = get_proper_type(base)
    info = proper.type if isinstance(proper, Instance) else None
    if info is None or not info.has_base(TENSOR):  # is_tensor(proper), its type read once
        inside = (" (fix: put the SPMD type on the tensor, inside the union: Optional[Annotated[Tensor, ...]])"
                  if isinstance(proper, UnionType) and any(is_tensor(get_proper_type(t)) for t in proper.items)
                  else "")
        _fail(ctx, f"SPMD types apply to tensors, not to {base}{inside}", Code.ANNOTATION)
        return base
    assert isinstance(proper, Instance)
    if info.fullname not in (TENSOR, PARAMETER):
        _fail(ctx, f"SPMD types apply to torch.Tensor and nn.Parameter, not to {info.name}", Code.ANNOTATION)
        return base
    _check_axes(ctx, declared.spmd.axes, options)
    return encoder.tensor(declared.spmd, proper, inferred=False, rank=declared.rank, orders=declared.orders)


def _axis_group(ctx: AnalyzeTypeContext, base: Type, axes: tuple[str, ...], encoder: Encoder) -> Type | None:
    """A ProcessGroup of one mesh axis, or a DeviceMesh whose dims are ``axes`` in order."""
    proper = get_proper_type(base)
    if isinstance(proper, Instance) and proper.type.has_base(DEVICE_MESH):
        return encoder.named_mesh(axes)
    if not (isinstance(proper, Instance) and proper.type.has_base(PROCESS_GROUP)):
        _fail(ctx, f"Axis[...] applies to a ProcessGroup or a DeviceMesh, not to {base}", Code.ANNOTATION)
        return base
    if len(axes) > 1:
        _fail(ctx, f"a process group belongs to one mesh axis, got {', '.join(axes)}", Code.ANNOTATION)
        return base
    return encoder.axis_group(axes[0])


def _stubs_missing(ctx: AnalyzeTypeContext, encoder: Encoder, warned: StubsWarned) -> None:
    """Tell a module, at one annotation, that its SPMD annotations are not checked.

    The annotation told is the first one analyzed in the parsed module, and it
    is told again each time it is analyzed again: the daemon re-analyzes a
    module after an edit, or one function of it, and drops that target's
    errors first, so that remembering only the module would lose the error.
    """
    source = encoder.runtime_source()
    if source is None:
        return  # spmd_types is not loaded at all: mypy reports the import
    module = analyzed_module(ctx.api)
    if module is not None:
        here = (analyzed_file(ctx.api), ctx.context.line, ctx.context.column)
        told = warned.get(module)
        if told is None or told[0] is not here[0]:
            warned[module] = told = here
        if told[1:] != here[1:]:
            return
    _fail(ctx, f"SPMD annotations are not checked: mypy reads spmd_types from its source ({source}), "
               "not from its stubs; install spmd-typecheck with pip, or add the checkout's stubs/ "
               "directory to mypy_path (spmd-check does this for you)", Code.ANNOTATION)


def _check_axes(ctx: AnalyzeTypeContext, named: tuple[str, ...], options: PluginOptions) -> None:
    if not options.axes:
        return
    unknown = [axis for axis in named if axis not in options.axes]
    if unknown:
        _fail(ctx, f"unknown mesh axis {', '.join(map(repr, unknown))} "
                   f"(the configured axes are {', '.join(options.axes)})", Code.AXIS)
    if options.strict_axes:
        missing = [axis for axis in options.axes if axis not in named]
        if missing:
            _fail(ctx, f"strict_axes: the annotation does not say the type on {', '.join(map(repr, missing))}",
                  Code.AXIS)


def _fail(ctx: AnalyzeTypeContext, message: str, code: Code) -> None:
    ctx.api.fail(message, ctx.context, code=CODES[code])
