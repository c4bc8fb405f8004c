"""Where a shard's tensor dim goes through an op: the layout rules of ``S(i)``.

On a mesh axis, ``S(i)`` says more than ``V``: the ranks' tensors assemble
into the global one by concatenation along dim ``i``.  An op that moves,
merges, splits, inserts or removes dims moves that dim with it:

=====================================  =========================================
op on a tensor sharded on dim ``i``    result
=====================================  =========================================
pointwise ops, dropout, casts          ``S(i)``, broadcasting aligned from the last dim
transpose, permute, movedim, ``.T``    the dim ``i`` went to
unsqueeze, stack                       ``i``, shifted past the new dim
squeeze, select, unbind, indexing      ``i``, shifted past the dims removed
flatten, view, reshape, unflatten      the group's first dim, when ``i`` is the outer
                                       factor of a merge or split; otherwise an error
cat, chunk, split along another dim    ``S(i)``
reductions over other dims             ``i``, shifted past the dims removed
softmax, cumsum, sort along another    ``S(i)``
linear, matmul, einsum, embedding      the output dim the sharded dim maps to
=====================================  =========================================

What each rank holds after an op *along* the sharded dim (a sum or softmax
over it, a cat, a slice or an index of it) is its own piece of a different
computation: varying data assembled in no known way, ``V``.  So is the result
of any op the table does not name, and of one whose dims cannot be known.

Rules are written for tensors of known rank.  Where the rank is not known (a
static checker rarely knows it), the rule is evaluated for every rank from 1
to :data:`RANKS_TRIED` and for a large one, and an answer is kept only where
all of them agree on it, counted from the first or from the last dim: ``S(0)``
transposed by ``.T`` is ``S(-1)`` whatever the rank, ``S(-1)`` transposed by
``transpose(0, 1)`` depends on it and is ``V``.

A rule returns a :class:`Moved`, :data:`LOST` or a :class:`Broken`: the op
merges or splits the sharded dim so that no concatenation of the ranks'
results is the global one.  In local SPMD that result is still correct
per-rank data (``V``); the reason says what was scrambled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, TypeAlias

from spmd_types.typesystem.local_types import Shard
from spmd_types.typesystem.spmd_type import SpmdType

__all__ = [
    "LOST",
    "NOT_KNOWN",
    "POINTWISE_OPS",
    "SHARD_RULES",
    "SPLITTING_OPS",
    "Broken",
    "LayoutCall",
    "Moved",
    "Outcome",
    "counted_like",
    "layout_rank",
    "result_dim",
    "same_dim",
]

RANKS_TRIED: Final = 8
"""Ranks evaluated one by one when the rank is not known; a rank of 64 stands for the larger ones."""

_LARGE_RANK: Final = 64


@dataclass(frozen=True)
class Moved:
    """The shard is on dim ``dim`` (counted from 0) of a result of rank ``ndim``."""

    dim: int
    ndim: int


class _Lost:
    """The result varies, assembled in no known way: ``V``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "LOST"


LOST: Final = _Lost()


@dataclass(frozen=True)
class Broken:
    """The op splits or merges the sharded dim so that no concatenation of the ranks' results is the global one."""

    reason: str


Outcome: TypeAlias = Moved | _Lost | Broken


NOT_KNOWN: Final = object()
"""The value of an argument that was passed but is not known (not a literal)."""


@dataclass(frozen=True)
class LayoutCall:
    """What a rule may read of one call of its op.

    ``args``: the call's non-tensor arguments by parameter name, as Python
    values (an index is a tuple of ints, slices, ``None`` and ``...``);
    :data:`NOT_KNOWN` for one that was passed with a value not known, absent
    when not passed.  ``params``, ``ranks`` and ``shapes`` describe the op's
    operands in order: each one's parameter name, rank (a Python number is
    rank 0) and local shape, ``None`` where not known.
    """

    args: Mapping[str, object] = field(default_factory=dict)
    params: Sequence[str] = ()
    ranks: Sequence[int | None] = ()
    shapes: Sequence[tuple[int, ...] | None] = ()
    shape: tuple[int, ...] | None = None
    """The local shape of the sharded operand a rule is applied to (set by the evaluation)."""

    def rank(self, position: int) -> int | None:
        return self.ranks[position] if position < len(self.ranks) else None

    def param(self, position: int) -> str:
        return self.params[position] if position < len(self.params) else ""


class _Invalid(Exception):
    """The call is impossible for the rank tried (a dim out of range): that rank is skipped."""


# A rule sees one sharded operand at a known rank: (its dim, from 0; the rank; the call).
_Rule: TypeAlias = Callable[[int, int, LayoutCall], Outcome]


def _norm(dim: object, ndim: int) -> int:
    """``dim`` counted from 0 in a tensor of rank ``ndim``; :class:`_Invalid` if it is not a dim there."""
    if isinstance(dim, bool) or not isinstance(dim, int) or not -ndim <= dim < max(ndim, 1):
        raise _Invalid
    return dim + ndim if dim < 0 else dim


def _dims(value: object, ndim: int) -> tuple[int, ...]:
    """An int or a sequence of ints, each counted from 0."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (_norm(value, ndim),)
    if isinstance(value, (tuple, list)) and value:
        return tuple(_norm(d, ndim) for d in value)
    raise _Invalid


# -- rules ----------------------------------------------------------------------------


def _keep(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    return Moved(dim, ndim)


def _along(*names: str, default: object = None) -> _Rule:
    """An op that keeps the shape and works along the dim(s) named by argument ``names`` (the first given)."""

    def rule(dim: int, ndim: int, call: LayoutCall) -> Outcome:
        value = next((call.args[name] for name in names if name in call.args), default)
        if value is None:
            return LOST
        return LOST if dim in _dims(value, ndim) else Moved(dim, ndim)

    return rule


def _reduction(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    """``sum(dim, keepdim)`` and its kin: the sharded dim survives a reduction over the others."""
    if "dim" not in call.args or call.args["dim"] is None:
        return LOST  # every dim is reduced
    reduced = set(_dims(call.args["dim"], ndim))
    if dim in reduced:
        return LOST
    if call.args.get("keepdim") is True:
        return Moved(dim, ndim)
    if "keepdim" in call.args and call.args["keepdim"] is not False:
        return LOST
    return Moved(dim - sum(1 for d in reduced if d < dim), ndim - len(reduced))


def _swap(first: str, second: str) -> _Rule:
    def rule(dim: int, ndim: int, call: LayoutCall) -> Outcome:
        if first not in call.args or second not in call.args:
            return LOST
        a, b = _norm(call.args[first], ndim), _norm(call.args[second], ndim)
        return Moved(b if dim == a else a if dim == b else dim, ndim)

    return rule


def _t(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    if ndim > 2:
        raise _Invalid
    return Moved(ndim - 1 - dim, ndim)


def _reverse(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    return Moved(ndim - 1 - dim, ndim)


def _swap_last_two(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    if ndim < 2:
        raise _Invalid
    last, before = ndim - 1, ndim - 2
    return Moved(before if dim == last else last if dim == before else dim, ndim)


def _permute(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    if "dims" not in call.args:
        return LOST
    order = _dims(call.args["dims"], ndim)
    if len(order) != ndim or sorted(order) != list(range(ndim)):
        raise _Invalid
    return Moved(order.index(dim), ndim)


def _movedim(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    if "source" not in call.args or "destination" not in call.args:
        return LOST
    source, destination = _dims(call.args["source"], ndim), _dims(call.args["destination"], ndim)
    if len(source) != len(destination) or len(set(source)) != len(source) or len(set(destination)) != len(source):
        raise _Invalid
    rest = iter(d for d in range(ndim) if d not in source)
    placed = dict(zip(destination, source, strict=True))
    order = [placed[d] if d in placed else next(rest) for d in range(ndim)]
    return Moved(order.index(dim), ndim)


def _unsqueeze(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    if "dim" not in call.args:
        return LOST
    new = _norm(call.args["dim"], ndim + 1)
    return Moved(dim + 1 if dim >= new else dim, ndim + 1)


def _removing(name: str, default: object = None) -> _Rule:
    """An op that removes the dim named by argument ``name`` (``select``, ``unbind``)."""

    def rule(dim: int, ndim: int, call: LayoutCall) -> Outcome:
        value = call.args.get(name, default)
        if value is None:
            return LOST
        removed = _norm(value, ndim)
        if removed == dim:
            return LOST
        return Moved(dim - 1 if dim > removed else dim, ndim - 1)

    return rule


def _squeeze(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    """Only dims of size 1 go, so which ones is known only from the local shape."""
    given = call.args.get("dim")
    shape = call.shape
    candidates = tuple(range(ndim)) if given is None else _dims(given, ndim)
    if shape is not None:
        removed = [d for d in candidates if shape[d] == 1]
        if dim in removed:
            return LOST
        return Moved(dim - sum(1 for d in removed if d < dim), ndim - len(removed))
    return LOST


def _flatten(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    start = _norm(call.args.get("start_dim", 0), ndim) if ndim else 0
    end = _norm(call.args.get("end_dim", -1), ndim) if ndim else 0
    if start > end:
        raise _Invalid
    if dim < start:
        return Moved(dim, ndim - (end - start))
    if dim > end:
        return Moved(dim - (end - start), ndim - (end - start))
    if dim == start:
        return Moved(start, ndim - (end - start))  # the outer factor of the merge
    return Broken(f"flattening dims {start} to {end} merges the sharded dim {dim} as an inner factor")


def _ravel(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    return _flatten(dim, ndim, LayoutCall())


def _unflatten(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    if "dim" not in call.args or not isinstance(call.args.get("sizes"), (tuple, list)):
        return LOST
    split = _norm(call.args["dim"], ndim)
    grown = len(call.args["sizes"]) - 1  # type: ignore[arg-type]
    if dim < split:
        return Moved(dim, ndim + grown)
    return Moved(split if dim == split else dim + grown, ndim + grown)  # the outer factor of the split


def _reshape(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    """``view(size)``/``reshape(shape)``: needs the local shape to see which dims merge or split.

    Sizes are per-rank, as local code writes them: keeping the sharded dim
    whole, or making it the outer factor of a merge or a split, keeps the
    shard; the global program's size of that dim is the local one times the
    axis size.
    """
    target = call.args.get("shape", call.args.get("size"))
    if call.shape is None or len(call.shape) != ndim or not isinstance(target, (tuple, list)):
        return LOST
    out = _resolved_shape(call.shape, target)
    if out is None:
        return LOST
    for inputs, outputs in _reshape_groups(call.shape, out):
        if dim in inputs:
            if dim == inputs[0] and outputs:
                return Moved(outputs[0], len(out))  # kept, or the outer factor of a merge or split
            return Broken(f"reshaping {tuple(call.shape)} to {tuple(out)} splits or merges the sharded dim "
                          f"{dim} other than as the outer factor")
    return LOST


def _resolved_shape(shape: Sequence[int], target: Sequence[object]) -> tuple[int, ...] | None:
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in target):
        return None
    sizes = [int(n) for n in target]  # type: ignore[call-overload]
    total = 1
    for n in shape:
        total *= n
    if sizes.count(-1) == 1:
        known = 1
        for n in sizes:
            known *= n if n != -1 else 1
        if known == 0 or total % known:
            return None
        sizes[sizes.index(-1)] = total // known
    product = 1
    for n in sizes:
        product *= n
    return tuple(sizes) if product == total and all(n >= 0 for n in sizes) else None


def _reshape_groups(shape: Sequence[int], out: Sequence[int]) -> Iterable[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Pairs of (input dims, output dims) that hold the same elements; size-1 dims stand alone."""
    i = j = 0
    while i < len(shape) or j < len(out):
        if i < len(shape) and shape[i] == 1 and (j >= len(out) or out[j] != 1):
            yield (i,), ()
            i += 1
            continue
        if j < len(out) and out[j] == 1 and (i >= len(shape) or shape[i] != 1):
            yield (), (j,)
            j += 1
            continue
        inputs, outputs = [i], [j]
        have, want = shape[i], out[j]
        i, j = i + 1, j + 1
        while have != want:
            if have < want:
                inputs.append(i)
                have *= shape[i]
                i += 1
            else:
                outputs.append(j)
                want *= out[j]
                j += 1
        yield tuple(inputs), tuple(outputs)


def _index(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    """``x[...]`` with ints, slices, ``None`` and ``...``; a tensor index rearranges dims: ``V``.

    A full slice ``:`` keeps the sharded dim; any other slice or an int picks
    rank-local positions of it: ``V``.
    """
    items = call.args.get("indices")
    if not isinstance(items, tuple):
        items = (items,)
    if any(isinstance(item, bool) or not (item is None or item is Ellipsis or isinstance(item, (int, slice)))
           for item in items):
        return LOST
    consuming = sum(1 for item in items if item is not None and item is not Ellipsis)
    if consuming > ndim or sum(item is Ellipsis for item in items) > 1:
        raise _Invalid
    expanded: list[object] = []
    for item in items:
        expanded.extend([slice(None)] * (ndim - consuming) if item is Ellipsis else [item])
    if Ellipsis not in items:
        expanded.extend([slice(None)] * (ndim - consuming))
    source = out = 0
    found: int | None = None
    for item in expanded:
        if item is None:
            out += 1
            continue
        if source == dim:
            if item != slice(None):
                return LOST
            found = out
        source += 1
        out += 0 if isinstance(item, int) else 1
    if found is None:
        raise _Invalid
    return Moved(found, out)


_ALONG_DIM_0: Final = _along("dim", default=0)
"""``chunk``, ``split``, ``tensor_split`` and ``cat``: pieces or joins along ``dim`` (default 0); the
shard survives along another dim."""


def _stacking(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    """``stack(tensors, dim)``: a new dim at ``dim`` of the result."""
    new = _norm(call.args.get("dim", 0), ndim + 1)
    return Moved(dim + 1 if dim >= new else dim, ndim + 1)


def _linear_input(dim: int, ndim: int, call: LayoutCall) -> Outcome:
    """``linear(input, weight, bias)`` through its input: every dim but the last (the contracted one) stays."""
    return LOST if dim == ndim - 1 else Moved(dim, ndim)


# -- the table ------------------------------------------------------------------------

_POINTWISE: Final = (
    "abs", "absolute", "acos", "acosh", "add", "addcdiv", "addcmul", "angle", "asin", "asinh", "atan", "atan2",
    "atanh", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bool", "byte", "ceil", "clamp",
    "clamp_max", "clamp_min", "clip", "clone", "conj", "contiguous", "copysign", "cos", "cosh", "cpu", "cuda",
    "deg2rad", "detach", "digamma", "div", "divide", "double", "eq", "erf", "erfc", "erfinv", "exp", "exp2",
    "expm1", "float", "floor", "floor_divide", "fmax", "fmin", "fmod", "frac", "ge", "greater", "greater_equal",
    "gt", "half", "bfloat16", "heaviside", "hypot", "int", "isclose", "isfinite", "isinf", "isnan", "le",
    "lerp", "less", "less_equal", "lgamma", "log", "log10", "log1p", "log2", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logit", "long", "lt", "masked_fill", "maximum", "minimum",
    "mul", "multiply", "nan_to_num", "ne", "neg", "negative", "not_equal", "positive", "pow", "rad2deg",
    "reciprocal", "relu", "remainder", "round", "rsqrt", "sgn", "short", "sigmoid", "sign", "signbit", "sin",
    "sinc", "sinh", "sqrt", "square", "sub", "subtract", "tan", "tanh", "to", "true_divide", "trunc",
    "type", "type_as", "where", "xlogy", "requires_grad_",
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__",
    "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__",
    "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__invert__", "__and__", "__rand__", "__or__",
    "__ror__", "__xor__", "__rxor__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
)
"""Ops that act element by element (broadcasting their operands): torch functions and tensor methods."""

_POINTWISE_FUNCTIONAL: Final = (
    "relu", "relu6", "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "softplus", "hardswish",
    "hardsigmoid", "hardtanh", "sigmoid", "tanh", "logsigmoid", "dropout", "alpha_dropout", "threshold",
)
"""Element-by-element ops of ``torch.nn.functional``."""

_REDUCTIONS: Final = (
    "sum", "mean", "nansum", "nanmean", "prod", "amax", "amin", "logsumexp", "std", "var", "all", "any",
    "count_nonzero", "argmax", "argmin", "norm",
)

_ALONG_DIM: Final = ("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "sort",
                     "argsort")


def _build() -> dict[str, _Rule]:
    table: dict[str, _Rule] = {}

    def both(name: str, rule: _Rule) -> None:
        table[f"torch.{name}"] = rule
        table[f"torch.Tensor.{name}"] = rule

    for name in _POINTWISE:
        both(name, _keep)
        if not name.startswith("__"):
            table[f"torch.Tensor.{name}_"] = _keep
    for name in _POINTWISE_FUNCTIONAL:
        table[f"torch.nn.functional.{name}"] = _keep
    for name in _REDUCTIONS:
        both(name, _reduction)
    for name in _ALONG_DIM:
        both(name, _along("dim"))
        table[f"torch.nn.functional.{name}"] = _along("dim")
    for name in ("transpose", "swapdims"):
        both(name, _swap("dim0", "dim1"))
    both("swapaxes", _swap("axis0", "axis1"))
    both("t", _t)
    for name in ("T", "H"):
        table[f"torch.Tensor.{name}"] = _reverse
    for name in ("mT", "mH"):
        table[f"torch.Tensor.{name}"] = _swap_last_two
    both("permute", _permute)
    for name in ("movedim", "moveaxis"):
        both(name, _movedim)
    both("unsqueeze", _unsqueeze)
    both("squeeze", _squeeze)
    both("select", _removing("dim"))
    both("unbind", _removing("dim", default=0))
    both("narrow", _along("dim"))
    both("flip", _along("dims"))
    both("roll", _along("dims"))
    both("flatten", _flatten)
    both("ravel", _ravel)
    both("unflatten", _unflatten)
    both("reshape", _reshape)
    table["torch.Tensor.view"] = _reshape
    for name in ("chunk", "split", "tensor_split"):
        both(name, _ALONG_DIM_0)
    table["torch.Tensor.__getitem__"] = _index
    for name in ("cat", "concat", "concatenate"):
        table[f"torch.{name}"] = _ALONG_DIM_0
    table["torch.stack"] = _stacking
    return table


SHARD_RULES: Final[dict[str, _Rule]] = _build()
"""The layout rule of each op, by public name (as in :data:`~spmd_types.typesystem.ops.OPS`)."""

POINTWISE_OPS: Final = frozenset(name for name, rule in SHARD_RULES.items() if rule is _keep)
"""The pointwise (broadcasting) ops: a shard keeps its dim, counted from the last."""

SPLITTING_OPS: Final = frozenset(name for name, rule in SHARD_RULES.items() if rule in (_unflatten, _reshape))
"""The ops that may split a dim into several (``unflatten``, ``reshape``, ``view``): which result dims the
pieces of a cut dim land on depends on the sizes."""

_BROADCASTING: Final = POINTWISE_OPS
_SEQUENCE_OPS: Final = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})


# -- evaluation -----------------------------------------------------------------------


def result_dim(op: str, sharded: Mapping[int, int], call: LayoutCall) -> int | Broken | None:
    """The dim, as ``S(d)`` writes it, that the result of ``op`` is sharded on; ``None``: ``V``.

    ``sharded`` maps the position of each operand sharded on the mesh axis to
    its dim as written (``S(-1)``: ``-1``); the other operands are replicated
    or constants on the axis.  An op the table does not name gives ``V``.
    """
    if not sharded:
        return None
    if op in _BROADCASTING:
        return _broadcast(sharded, call)
    contraction = _CONTRACTIONS.get(op)
    if contraction is not None:
        return contraction(sharded, call)
    rule = SHARD_RULES.get(op)
    if rule is None or (len(sharded) > 1 and op not in _SEQUENCE_OPS):
        return None
    answers = {_over_ranks(rule, position, dim, call) for position, dim in sharded.items()}
    return answers.pop() if len(answers) == 1 else None


def _over_ranks(rule: _Rule, position: int, dim: int, call: LayoutCall) -> int | Broken | None:
    """``rule`` at the operand's rank, or at every rank when that is not known: the answer all agree on."""
    shape = call.shapes[position] if position < len(call.shapes) else None
    call = replace(call, shape=shape)
    outcomes: list[Outcome] = []
    for ndim in _possible(len(shape) if shape is not None else call.rank(position)):
        try:
            outcomes.append(rule(_norm(dim, ndim), ndim, call))
        except _Invalid:
            continue
    return _agreed(outcomes, negative=dim < 0)


_RESHAPES: Final = frozenset({"torch.reshape", "torch.Tensor.reshape", "torch.Tensor.view"})


def layout_rank(op: str, call: LayoutCall) -> int | None:
    """The rank of the result of layout op ``op`` (a shape op, a reduction, indexing, ...) on its first operand.

    ``None`` where the table has no rule for ``op``, the first operand's rank
    is not known, or the rank depends on what the call does not say
    (``squeeze`` drops only dims of size 1, which a static reader does not see).
    ``view`` and ``reshape`` to literal sizes have as many dims as sizes; a
    reduction over every dim is 0-D (kept dims: the input's rank).  Every other
    op: the rank its layout rule gives to a shard on each of the operand's
    dims, where all agree.
    """
    rule = SHARD_RULES.get(op)
    ndim = call.rank(0)
    if rule is None or ndim is None:
        return None
    if op in _RESHAPES:
        target = call.args.get("shape", call.args.get("size"))
        sizes = target if isinstance(target, (tuple, list)) else (target,)
        return len(sizes) if all(isinstance(n, int) and not isinstance(n, bool) for n in sizes) else None
    if rule is _reduction and call.args.get("dim") is None:
        keepdim = call.args.get("keepdim", False)
        return None if not isinstance(keepdim, bool) else ndim if keepdim else 0
    ranks: set[int] = set()
    for dim in range(ndim):
        try:
            outcome = rule(dim, ndim, replace(call, shape=call.shapes[0] if call.shapes else None))
        except _Invalid:
            return None
        if isinstance(outcome, Moved):
            ranks.add(outcome.ndim)
    return ranks.pop() if len(ranks) == 1 else None


def _possible(rank: int | None) -> tuple[int, ...]:
    return (rank,) if rank is not None else (*range(1, RANKS_TRIED + 1), _LARGE_RANK)


def _agreed(outcomes: Sequence[Outcome], negative: bool) -> int | Broken | None:
    """The dim every outcome agrees on, counted from the first dim or from the last; else ``None``.

    A single outcome (the rank was known) keeps the sign the shard was written with.
    """
    if outcomes and all(isinstance(outcome, Broken) for outcome in outcomes):
        return outcomes[0]  # type: ignore[return-value]
    moved = [outcome for outcome in outcomes if isinstance(outcome, Moved)]
    if not moved or len(moved) != len(outcomes):
        return None
    from_start = {m.dim for m in moved}
    from_end = {m.dim - m.ndim for m in moved}
    if len(moved) == 1:
        return from_end.pop() if negative else from_start.pop()
    if len(from_start) == 1:
        return from_start.pop()
    if len(from_end) == 1:
        return from_end.pop()
    return None


def _broadcast(sharded: Mapping[int, int], call: LayoutCall) -> int | None:
    """Pointwise ops align their operands' dims from the last: a dim counted from the end survives.

    A dim counted from the front survives only where no other operand can
    have more dims: the other operands are Python numbers, or every rank is known.
    """
    ranks = [call.rank(k) for k in range(max(len(call.ranks), max(sharded) + 1))]
    from_end: set[int] = set()
    from_start: set[int] = set()
    for position, dim in sharded.items():
        ndim = ranks[position]
        if dim < 0:
            from_end.add(dim)
        elif ndim is None:
            from_start.add(dim)
        elif dim < ndim:
            from_end.add(dim - ndim)
        else:
            return None
    if from_start:
        others_scalar = all(n == 0 for k, n in enumerate(ranks) if k not in sharded)
        if from_end or len(sharded) > 1 or not others_scalar:
            return None
        return from_start.pop()
    if len(from_end) != 1:
        return None
    dim = from_end.pop()
    written_from_start = all(d >= 0 for d in sharded.values())
    if written_from_start and None not in ranks:
        return dim + max(n for n in ranks if n is not None)
    return dim


def _linear(sharded: Mapping[int, int], call: LayoutCall) -> int | Broken | None:
    """``linear(input, weight, bias)``: ``y[..., o] = sum_i x[..., i] w[o, i] + b[o]``."""
    answers: set[int | Broken | None] = set()
    for position, dim in sharded.items():
        param = call.param(position)
        if param == "input":
            answers.add(_over_ranks(_linear_input, position, dim, call))
        elif param == "weight":
            answers.add(-1 if _norm_static(dim, 2) == 0 else None)  # output features
        elif param == "bias":
            answers.add(-1 if _norm_static(dim, 1) == 0 else None)
        else:
            return None
    return answers.pop() if len(answers) == 1 else None


def _norm_static(dim: int, ndim: int) -> int | None:
    try:
        return _norm(dim, ndim)
    except _Invalid:
        return None


def _matmul(sharded: Mapping[int, int], call: LayoutCall) -> int | None:
    """``input @ other``: rows of ``input`` and columns of ``other`` survive; the contracted dim does not."""
    if len(sharded) != 1:
        return None
    ((position, written),) = sharded.items()
    outcomes: list[Outcome] = []
    for a in _possible(call.rank(0)):
        for b in _possible(call.rank(1)):
            try:
                dim = _norm(written, a if position == 0 else b)
            except _Invalid:
                continue
            outcomes.append(_matmul_at(position, dim, a, b))
    answer = _agreed(outcomes, negative=written < 0)
    return None if isinstance(answer, Broken) else answer


def _matmul_at(position: int, dim: int, a: int, b: int) -> Outcome:
    """Where dim ``dim`` of operand ``position`` goes in ``A @ B`` for ranks ``a`` and ``b`` (``torch.matmul``)."""
    batch = max(max(a, b) - 2, 0)
    out_ndim = batch + (a >= 2) + (b >= 2)
    if position == 0:
        if dim == a - 1:
            return LOST  # the contracted dim
        if dim == a - 2:
            return Moved(batch, out_ndim)  # rows
        return Moved(dim + batch - (a - 2), out_ndim)  # a batch dim
    if b == 1 or dim == b - 2:
        return LOST  # the contracted dim
    if dim == b - 1:
        return Moved(out_ndim - 1, out_ndim)  # columns
    return Moved(dim + batch - (b - 2), out_ndim)  # a batch dim


def _fixed_rank(a: int, b: int) -> Callable[[Mapping[int, int], LayoutCall], int | None]:
    """``mm`` (2, 2) and ``bmm`` (3, 3): ``matmul`` at known ranks."""

    def rule(sharded: Mapping[int, int], call: LayoutCall) -> int | None:
        return _matmul(sharded, replace(call, ranks=(a, b)))

    return rule


_EINSUM: Final = re.compile(r"\s*([a-zA-Z,\s]*)->\s*([a-zA-Z]*)\s*")


def _einsum(sharded: Mapping[int, int], call: LayoutCall) -> int | None:
    """``einsum(equation, *operands)`` with an explicit output and no ``...``: the sharded letter's place in it."""
    equation = call.args.get("equation")
    match = _EINSUM.fullmatch(equation) if isinstance(equation, str) else None
    if match is None:
        return None
    inputs = [term.strip() for term in match.group(1).split(",")]
    output = match.group(2).strip()
    letters = set()
    for position, dim in sharded.items():
        term = inputs[position] if position < len(inputs) else ""
        normalised = _norm_static(dim, len(term))
        if normalised is None:
            return None
        letters.add(term[normalised])
    letter = letters.pop() if len(letters) == 1 else ""
    return output.index(letter) if letter and letter in output else None


def _embedding(sharded: Mapping[int, int], call: LayoutCall) -> int | Broken | None:
    """``embedding(input, weight)``: the indices' dims, then the table's hidden dim."""
    if len(sharded) != 1:
        return None
    ((position, dim),) = sharded.items()
    param = call.param(position)
    if param == "weight":
        return -1 if _norm_static(dim, 2) == 1 else None
    if param == "input":
        return _over_ranks(lambda d, ndim, _: Moved(d, ndim + 1), position, dim, call)
    return None


def _rmatmul(sharded: Mapping[int, int], call: LayoutCall) -> int | None:
    """``other @ input`` (``Tensor.__rmatmul__``): ``matmul`` with the operands in their written order."""
    swapped = {1 - position: dim for position, dim in sharded.items() if position in (0, 1)}
    if len(swapped) != len(sharded):
        return None
    return _matmul(swapped, replace(call, ranks=(call.rank(1), call.rank(0))))


_CONTRACTIONS: Final[dict[str, Callable[[Mapping[int, int], LayoutCall], int | Broken | None]]] = {
    "torch.nn.functional.linear": _linear,
    **dict.fromkeys(("torch.matmul", "torch.Tensor.matmul", "torch.Tensor.__matmul__"), _matmul),
    "torch.Tensor.__rmatmul__": _rmatmul,
    **dict.fromkeys(("torch.mm", "torch.Tensor.mm"), _fixed_rank(2, 2)),
    **dict.fromkeys(("torch.bmm", "torch.Tensor.bmm"), _fixed_rank(3, 3)),
    "torch.einsum": _einsum,
    "torch.nn.functional.embedding": _embedding,
}


def counted_like(t: SpmdType, reference: SpmdType, ndim: int) -> SpmdType:
    """``t`` with each shard's dim counted as ``reference`` counts its shard on that axis, in a tensor of rank ``ndim``.

    ``S(2)`` counted like ``S(-1)`` in a 3-D tensor is ``S(-1)``: the two can
    then be compared, and a message shows both as the declaration writes them.
    """
    recounted: dict[str, Shard] = {}
    for axis, kind in t.items():
        want = reference.get(axis)
        if isinstance(kind, Shard) and isinstance(want, Shard) and (kind.dim < 0) != (want.dim < 0) \
                and -ndim <= kind.dim < ndim:
            recounted[axis] = Shard(kind.dim - ndim if kind.dim >= 0 else kind.dim + ndim)
    if not recounted:
        return t
    return SpmdType({axis: recounted.get(axis, kind) for axis, kind in t.items()}, t.default)


def same_dim(a: int, b: int, ndim: int | None = None) -> bool | None:
    """Whether ``S(a)`` and ``S(b)`` name the same dim; ``None`` when that depends on an unknown rank."""
    if ndim is not None:
        return _norm_static(a, ndim) == _norm_static(b, ndim)
    if (a < 0) == (b < 0):
        return a == b
    return None
