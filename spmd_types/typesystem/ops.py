"""The op table: how each ordinary torch operation combines SPMD types.

An :class:`OpRule` describes an op as a *sum of products* of its tensor
arguments, which is what decides whether a partial sum (``P``) may flow
through it:

* ``add(input, other)`` is linear: the terms ``input`` and ``other`` are each a
  summand, so ``P + P`` is ``P`` but ``P + R`` counts ``R`` once per rank;
* ``mul(input, other)`` is multilinear: one term with two factors, so ``P * R``
  is ``P`` but ``P * P`` is not;
* ``linear(input, weight, bias)`` is both: ``input @ weight.T`` plus ``bias``;
* arguments the op is not linear in (a divisor, the weight of ``lerp``) are
  *non-linear* arguments: when a partial sum flows through the op they must
  be replicated;
* *selectors* (the condition of ``where``, a mask, the index of ``gather``)
  pick elements and carry no gradient: replicated ones (``R`` or ``I``) act
  like constants, a varying one makes the result vary, a partial one is an error;
* ops whose result carries no gradient (comparisons, logical and bitwise ops,
  ``argmax``, integer casts) take every argument as a selector, and their
  replicated results are constants;
* an op not in the table is non-linear in every argument.

Arguments are named as in torch's signatures, with a method's ``self`` called
``input``.  A sequence argument (``cat(tensors)``) contributes one operand per
element: each element is its own summand, or, for rules with
``sequence_product``, a factor of one product (``einsum``).

Keys are public names: ``torch.add``, ``torch.Tensor.add``,
``torch.Tensor.__add__``, ``torch.Tensor.T``, ``torch.nn.functional.linear``,
and ``torch.nn.Parameter`` for the constructor.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import Final

from spmd_types.typesystem.memo import bounded_put

__all__ = [
    "BUILTIN_SUM",
    "MODULE_OPS",
    "MODULE_PARAMETERS",
    "NONLINEAR",
    "OPERATOR_SYMBOLS",
    "OPS",
    "TENSOR_PROPERTIES",
    "OpRule",
    "Result",
    "absorbed",
    "canonical_param",
    "display_name",
    "lookup",
    "method_name",
    "passed_literal",
]


class Result(enum.Enum):
    """What an op's result type is made of."""

    JOIN = "join"
    """The per-axis join of the operands' types."""
    WEAK = "weak"
    """A deterministic constant (``ones``, ``arange``): weak on every axis."""
    ZERO = "zero"
    """Zeros: zero on every axis."""
    FRESH = "fresh"
    """New data nothing is known about (``empty``, ``randn``): unknown on every axis."""
    DETACH = "detach"
    """The operand without its gradient: ``R`` and ``I`` axes become weak."""
    COPY = "copy"
    """A new tensor from ``data`` (``torch.tensor``, ``new_tensor``): the data's type without its
    gradient when the data is a tensor, a weak constant when it is a Python value."""
    TRAINABLE = "trainable"
    """A parameter made from its data: the data's type, but never a constant (it will be trained or loaded)."""


@dataclass(frozen=True)
class OpRule:
    """How one op combines the SPMD types of its tensor arguments.

    ``terms``: the op as a sum of products of argument names (empty: non-linear).
    ``nonlinear``: differentiable arguments the op is not linear in.
    ``selectors``: index, mask and condition arguments (no gradient flows into them).
    ``ignored``: tensor arguments that contribute no values (shape or dtype templates).
    ``nonlinear_if``: arguments whose presence makes the whole op non-linear
    (``div(..., rounding_mode=...)``).
    ``sequence_product``: elements of a sequence argument are factors of one
    product rather than separate summands.
    ``result``: what the result is made of.
    ``inplace``: the op writes its result into ``input`` (or ``out=``).
    ``fills``: arguments whose value is written at selected positions
    (``masked_fill``'s ``value``); an infinite number there leaves the join
    (:func:`absorbed`).
    ``linear_only_with``: where not empty, the op is linear only when one of
    these ``name=value`` literal arguments is given (:func:`passed_literal`:
    ``scatter_reduce`` with ``reduce="sum"``), else non-linear.
    ``updates``: tensor arguments the op writes its statistics into, when the
    literal argument ``updates_when`` is given (``batch_norm``'s running mean
    and variance with ``training=True``): what is written, a function of every
    argument, must fit each of them.
    ``counts_when``: a literal argument with which the op counts its selectors
    (``embedding`` with ``scale_grad_by_freq=True`` divides each row's
    gradient by how often its index occurs): the count is this rank's, so the
    selectors must be the same on every rank.
    """

    terms: tuple[tuple[str, ...], ...] = ()
    nonlinear: tuple[str, ...] = ()
    selectors: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    nonlinear_if: tuple[str, ...] = ()
    sequence_product: bool = False
    result: Result = Result.JOIN
    inplace: bool = False
    fills: tuple[str, ...] = ()
    linear_only_with: tuple[str, ...] = ()
    updates: tuple[str, ...] = ()
    updates_when: str = ""
    counts_when: str = ""
    params: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """Every argument name the rule mentions, in order of first mention: read at every checked call, so
    worked out once, when the rule is made (a field, not a ``functools.cached_property``: the compiled
    build's classes have no instance ``__dict__``)."""

    def __post_init__(self) -> None:
        names = [name for term in self.terms for name in term]
        names += [*self.nonlinear, *self.selectors, *self.ignored, *self.nonlinear_if, *self.updates]
        object.__setattr__(self, "params", tuple(dict.fromkeys(names)))

    @property
    def makes_constants(self) -> bool:
        """Whether the op makes a typed constant even from untyped arguments (``torch.ones(3)``)."""
        return self.result in (Result.WEAK, Result.ZERO, Result.COPY)

    @property
    def linearity(self) -> str:
        """``linear``, ``multilinear``, ``linear + multilinear``, ``non-linear`` or ``constant``."""
        if self.result in (Result.WEAK, Result.ZERO, Result.FRESH):
            return f"constant ({self.result.value})"
        if self.result is Result.DETACH and not self.terms:
            return "no gradient"
        if not self.terms:
            return "non-linear"
        if not (self.sequence_product or any(len(term) > 1 for term in self.terms)):
            return "linear"
        return "multilinear" if len(self.terms) == 1 else "linear + multilinear"


NONLINEAR: Final = OpRule()
"""The rule of every op not in the table."""

_METHODS: Final = "torch.Tensor."


def method_name(method: str) -> str:
    """The public name of tensor method (or operator, or property) ``method``: ``torch.Tensor.add``."""
    return _METHODS + method


TENSOR_PROPERTIES: Final = ("T", "mT", "H", "mH", "real", "imag")
"""The tensor attributes that are ops (``x.T``), each with a rule under its :func:`method_name`."""


def absorbed(rule: OpRule, param: str, value: float) -> bool:
    """Whether the Python number ``value``, given as ``param`` of an op with ``rule``, leaves the op's join.

    An infinity written at selected positions (``masked_fill(p, mask,
    float("-inf"))``, ``where(mask, p, -inf)``) fits a pending sum: every rank
    writes it at the same positions (the mask is the same on every rank, or
    the join reports it), and the sum of the ranks' infinities there is the
    same infinity, as on one device.  A finite value would be counted once per
    rank.  The number contributes no type, so with a constant input the result
    is weak, not zero.
    """
    return param in rule.fills and value in (math.inf, -math.inf)


def passed_literal(param: str, value: str | bool) -> str:
    """How a string or bool given literally is named among the passed arguments (``reduce=sum``, ``training=True``)."""
    return f"{param}={value}"


def canonical_param(name: str) -> str:
    """The name the table uses for a parameter: a method's ``self`` is ``input``."""
    return "input" if name == "self" else name


# -- rule constructors ---------------------------------------------------------------


def _linear(*summands: str, nonlinear: tuple[str, ...] = (), selectors: tuple[str, ...] = (),
            ignored: tuple[str, ...] = (), nonlinear_if: tuple[str, ...] = ()) -> OpRule:
    """Linear in each of ``summands`` (each is its own term)."""
    return OpRule(tuple((s,) for s in summands), nonlinear, selectors, ignored, nonlinear_if)


def _product(*factors: str, nonlinear: tuple[str, ...] = (), nonlinear_if: tuple[str, ...] = (),
             sequence_product: bool = False) -> OpRule:
    """Multilinear: one product of ``factors``."""
    return OpRule((tuple(factors),), nonlinear, (), (), nonlinear_if, sequence_product)


def _sum_of(*terms: tuple[str, ...], nonlinear: tuple[str, ...] = ()) -> OpRule:
    """An explicit sum of products, such as ``input + mat1 @ mat2``."""
    return OpRule(tuple(terms), nonlinear)


def _constant(result: Result, ignored: tuple[str, ...] = ()) -> OpRule:
    return OpRule(ignored=ignored, result=result)


def _no_gradient(*args: str) -> OpRule:
    """An op whose result carries no gradient (a bool or integer tensor): every argument is a selector."""
    return OpRule(selectors=args, result=Result.DETACH)


_UNARY: Final = _linear("input")
_SELECT: Final = _linear("input", selectors=("index",))

# -- the table ---------------------------------------------------------------------

_FUNCTION_AND_METHOD: Final[dict[str, OpRule]] = {
    # Non-linear, as every op the table does not name; listed because torch defines it without
    # annotations, so that checkers know it returns a tensor.
    "norm": NONLINEAR,
    # Unary linear maps: views, reshapes, copies, reorderings.
    **dict.fromkeys(
        (
            "clone", "neg", "negative", "positive", "conj", "conj_physical",
            "resolve_conj", "resolve_neg", "reshape", "flatten", "unflatten", "ravel", "squeeze",
            "unsqueeze", "transpose", "swapaxes", "swapdims", "t", "permute", "movedim",
            "moveaxis", "narrow", "narrow_copy", "select", "diagonal", "diag", "diag_embed",
            "flip", "fliplr", "flipud", "rot90", "roll", "tril", "triu", "broadcast_to", "tile",
            "chunk", "tensor_split", "unbind", "split_with_sizes", "hsplit", "vsplit", "dsplit",
            "sum", "mean", "nansum", "nanmean", "cumsum", "trace", "as_strided",
        ),
        _UNARY,
    ),
    "detach": OpRule(terms=(("input",),), result=Result.DETACH),
    # Results without a gradient: comparisons, logical and bitwise ops, indices.
    **dict.fromkeys(
        ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
         "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "isclose"),
        _no_gradient("input", "other"),
    ),
    **dict.fromkeys(
        ("logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
         "argmax", "argmin", "argsort", "nonzero", "count_nonzero"),
        _no_gradient("input"),
    ),

    # Sums: each argument is a summand (alpha/value scale a term, which keeps it linear).
    **dict.fromkeys(("add", "sub", "subtract"), _linear("input", "other")),
    "where": dataclasses.replace(_linear("input", "other", selectors=("condition",)), fills=("input", "other")),
    "masked_fill": dataclasses.replace(_linear("input", "value", selectors=("mask",)), fills=("value",)),
    "masked_scatter": _linear("input", "source", selectors=("mask",)),
    "index_fill": dataclasses.replace(_linear("input", "value", selectors=("index",)), fills=("value",)),
    "index_add": _linear("input", "source", selectors=("index",)),
    "index_copy": _linear("input", "source", selectors=("index",)),
    "index_put": _linear("input", "values", selectors=("indices",)),
    "scatter": _linear("input", "src", "value", selectors=("index",), nonlinear_if=("reduce",)),
    "scatter_add": _linear("input", "src", selectors=("index",)),
    # Linear where the reduction is: each output element is its input's, or a sum (or mean) over the index,
    # which every rank takes alike.
    "scatter_reduce": dataclasses.replace(_linear("input", "src", selectors=("index",)),
                                          linear_only_with=("reduce=sum", "reduce=mean")),
    "lerp": _linear("input", "end", nonlinear=("weight",)),
    "diff": _linear("input", "prepend", "append"),
    # Selections: linear in the data, not in the index.
    **dict.fromkeys(("gather", "index_select", "take"), _SELECT),
    "take_along_dim": _linear("input", selectors=("indices",)),
    "masked_select": _linear("input", selectors=("mask",)),
    "repeat_interleave": _linear("input", selectors=("repeats",)),
    # Products.
    **dict.fromkeys(("mul", "multiply", "matmul", "kron", "inner", "vdot"), _product("input", "other")),
    **dict.fromkeys(("mm", "bmm"), _product("input", "mat2")),
    "mv": _product("input", "vec"),
    "dot": _product("input", "tensor"),
    **dict.fromkeys(("outer", "ger"), _product("input", "vec2")),
    **dict.fromkeys(("div", "divide"), _linear("input", nonlinear=("other",), nonlinear_if=("rounding_mode",))),
    "true_divide": _linear("input", nonlinear=("other",)),
    # Sums of products.
    "addmm": _sum_of(("input",), ("mat1", "mat2")),
    "addbmm": _sum_of(("input",), ("batch1", "batch2")),
    "baddbmm": _sum_of(("input",), ("batch1", "batch2")),
    "addmv": _sum_of(("input",), ("mat", "vec")),
    "addr": _sum_of(("input",), ("vec1", "vec2")),
    "addcmul": _sum_of(("input",), ("tensor1", "tensor2")),
    "addcdiv": _sum_of(("input",), ("tensor1",), nonlinear=("tensor2",)),
}

_FUNCTION_ONLY: Final[dict[str, OpRule]] = {
    "real": _UNARY,  # a property on tensors
    "imag": _UNARY,
    "view_as_real": _UNARY,
    "view_as_complex": _UNARY,
    "rsub": _linear("input", "other"),
    **dict.fromkeys(
        ("squeeze_copy", "unsqueeze_copy", "view_copy", "permute_copy", "transpose_copy", "expand_copy"),
        _UNARY,
    ),
    **dict.fromkeys(("atleast_1d", "atleast_2d", "atleast_3d"), _linear("tensors")),
    # Constants made like another tensor: only its shape matters.
    "zeros_like": _constant(Result.ZERO, ignored=("input",)),
    **dict.fromkeys(("ones_like", "full_like"), _constant(Result.WEAK, ignored=("input",))),
    **dict.fromkeys(
        ("empty_like", "rand_like", "randn_like", "randint_like"), _constant(Result.FRESH, ignored=("input",))
    ),
    **dict.fromkeys(
        ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"),
        _linear("tensors"),
    ),
    "block_diag": _linear("tensors"),
    "split": _linear("tensor"),
    "einsum": _product("args", sequence_product=True),
    "chain_matmul": _product("matrices", sequence_product=True),
    "tensordot": _product("a", "b"),
    "embedding": dataclasses.replace(_linear("weight", selectors=("indices",)),
                                     counts_when=passed_literal("scale_grad_by_freq", True)),
    "bucketize": _no_gradient("input", "boundaries"),
    "searchsorted": _no_gradient("sorted_sequence", "input"),
    "zeros": _constant(Result.ZERO),
    "tensor": OpRule(terms=(("data",),), result=Result.COPY),
    **dict.fromkeys(
        ("ones", "full", "arange", "linspace", "logspace", "eye", "scalar_tensor"),
        _constant(Result.WEAK),
    ),
    **dict.fromkeys(
        ("empty", "rand", "randn", "randint", "randperm", "normal", "empty_strided"), _constant(Result.FRESH)
    ),
    "conv1d": _sum_of(("input", "weight"), ("bias",)),
    "conv2d": _sum_of(("input", "weight"), ("bias",)),
    "conv3d": _sum_of(("input", "weight"), ("bias",)),
    "conv_transpose1d": _sum_of(("input", "weight"), ("bias",)),
    "conv_transpose2d": _sum_of(("input", "weight"), ("bias",)),
    "conv_transpose3d": _sum_of(("input", "weight"), ("bias",)),
    "bilinear": _sum_of(("input1", "weight", "input2"), ("bias",)),
}

_METHOD_ONLY: Final[dict[str, OpRule]] = {
    **dict.fromkeys(
        ("view", "expand", "repeat", "contiguous", "float", "double", "half", "bfloat16", "type",
         "cuda", "cpu", "split", "unfold", "requires_grad_", "sum_to_size"),
        _UNARY,
    ),
    # Dtype casts are linear; a tensor passed as a template only gives its dtype or shape.
    **dict.fromkeys(("to", "view_as", "reshape_as", "expand_as", "type_as"), _linear("input", ignored=("other",))),
    **dict.fromkeys(TENSOR_PROPERTIES, _UNARY),
    # Operators (the dunders of torch.Tensor).
    **dict.fromkeys(("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__"), _linear("input", "other")),
    **dict.fromkeys(("__mul__", "__rmul__", "__imul__", "__matmul__", "__rmatmul__"), _product("input", "other")),
    **dict.fromkeys(("__truediv__", "__itruediv__"), _linear("input", nonlinear=("other",))),
    "__rtruediv__": _linear("other", nonlinear=("input",)),
    **dict.fromkeys(("__neg__", "__pos__"), _UNARY),
    **dict.fromkeys(
        ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__and__", "__or__", "__xor__",
         "__rand__", "__ror__", "__rxor__"),
        _no_gradient("input", "other"),
    ),
    "__invert__": _no_gradient("input"),
    # Casts to integer and bool types end the gradient.
    **dict.fromkeys(("bool", "long", "int", "short", "byte"), _no_gradient("input")),
    "__getitem__": _linear("input", selectors=("indices",)),
    "__setitem__": _linear("input", "value", selectors=("indices",)),
    # In-place updates whose result is the written value.
    "copy_": _linear("other", ignored=("input",)),
    "fill_": _linear("value", ignored=("input",)),
    "zero_": _constant(Result.ZERO, ignored=("input",)),
    "new_zeros": _constant(Result.ZERO, ignored=("input",)),
    **dict.fromkeys(("new_ones", "new_full"), _constant(Result.WEAK, ignored=("input",))),
    "new_tensor": OpRule(terms=(("data",),), ignored=("input",), result=Result.COPY),
    "new_empty": _constant(Result.FRESH, ignored=("input",)),
}

_FUNCTIONAL: Final[dict[str, OpRule]] = {
    "linear": _sum_of(("input", "weight"), ("bias",)),
    "bilinear": _sum_of(("input1", "weight", "input2"), ("bias",)),
    **{name: _sum_of(("input", "weight"), ("bias",))
       for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")},
    "embedding": dataclasses.replace(_linear("weight", selectors=("input",)),
                                     counts_when=passed_literal("scale_grad_by_freq", True)),
    "batch_norm": OpRule(updates=("running_mean", "running_var"), updates_when=passed_literal("training", True)),
    "pad": _linear("input", "value"),
    **dict.fromkeys(
        ("avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
         "adaptive_avg_pool3d", "pixel_shuffle", "pixel_unshuffle", "unfold", "fold", "interpolate",
         "channel_shuffle"),
        _UNARY,
    ),
}


_INPLACE_VARIANTS: Final = (
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg", "negative",
    "masked_fill", "masked_scatter", "index_fill", "index_add", "index_copy", "index_put", "scatter",
    "scatter_add", "scatter_reduce", "lerp", "addmm", "addbmm", "baddbmm", "addmv", "addr", "addcmul", "addcdiv",
    "squeeze", "unsqueeze", "transpose", "t", "swapaxes", "swapdims", "tril", "triu", "cumsum",
)


BUILTIN_SUM: Final = _linear("iterable", "start")
"""Python's ``sum(iterable, start)``: every element, and the start, is a summand."""


_CLASSES: Final[dict[str, OpRule]] = {
    "torch.nn.Parameter": OpRule(terms=(("data",),), result=Result.TRAINABLE),
}


def _build() -> dict[str, OpRule]:
    table: dict[str, OpRule] = {}
    for name, rule in _FUNCTION_AND_METHOD.items():
        table[f"torch.{name}"] = rule
        table[method_name(name)] = rule
    for name, rule in _FUNCTION_ONLY.items():
        table[f"torch.{name}"] = rule
    for name, rule in _METHOD_ONLY.items():
        table[method_name(name)] = rule
    for name, rule in _FUNCTIONAL.items():
        table[f"torch.nn.functional.{name}"] = rule
    table.update(_CLASSES)
    # In-place method variants (``add_``) follow their out-of-place rule.
    for name in _INPLACE_VARIANTS:
        table[method_name(f"{name}_")] = table[method_name(name)]
    return table


OPS: Final[dict[str, OpRule]] = _build()
"""Every registered op, by public name."""

MODULE_OPS: Final[dict[str, str]] = {
    **dict.fromkeys(("torch.nn.Dropout", "torch.nn.Dropout1d", "torch.nn.Dropout2d", "torch.nn.Dropout3d",
                     "torch.nn.AlphaDropout"), "torch.nn.functional.dropout"),
    "torch.nn.Identity": "torch.clone",
    "torch.nn.ReLU": "torch.nn.functional.relu",
    "torch.nn.GELU": "torch.nn.functional.gelu",
    "torch.nn.SiLU": "torch.nn.functional.silu",
    "torch.nn.Mish": "torch.nn.functional.mish",
    "torch.nn.Tanh": "torch.tanh",
    "torch.nn.Sigmoid": "torch.sigmoid",
    "torch.nn.Softmax": "torch.softmax",
    "torch.nn.LogSoftmax": "torch.nn.functional.log_softmax",
    "torch.nn.LeakyReLU": "torch.nn.functional.leaky_relu",
    "torch.nn.ELU": "torch.nn.functional.elu",
    "torch.nn.Softplus": "torch.nn.functional.softplus",
    "torch.nn.Hardswish": "torch.nn.functional.hardswish",
    "torch.nn.Flatten": "torch.flatten",
    "torch.nn.Unflatten": "torch.unflatten",
    "torch.nn.Linear": "torch.nn.functional.linear",
    "torch.nn.LayerNorm": "torch.nn.functional.layer_norm",
    "torch.nn.RMSNorm": "torch.nn.functional.rms_norm",
    "torch.nn.GroupNorm": "torch.nn.functional.group_norm",
    "torch.nn.Embedding": "torch.nn.functional.embedding",
}
"""``torch.nn`` modules, by public class name, and the op that calling one is."""

MODULE_PARAMETERS: Final[dict[str, tuple[str, ...]]] = {
    "torch.nn.Linear": ("weight", "bias"),
    "torch.nn.LayerNorm": ("weight", "bias"),
    "torch.nn.RMSNorm": ("weight",),
    "torch.nn.GroupNorm": ("weight", "bias"),
    "torch.nn.Embedding": ("weight",),
}
"""The parameters a module of :data:`MODULE_OPS` passes to its op; their SPMD types are unknown.

A call of such a module is its op with the input and these unknown operands,
so a pending sum through a norm is still an error (it is, whatever the norm's
weight is) and the result is unknown where the weight decides it.
"""

OPERATOR_SYMBOLS: Final[dict[str, str]] = {
    "__add__": "+", "__radd__": "+", "__iadd__": "+=",
    "__sub__": "-", "__rsub__": "-", "__isub__": "-=",
    "__mul__": "*", "__rmul__": "*", "__imul__": "*=",
    "__matmul__": "@", "__rmatmul__": "@", "__imatmul__": "@=",
    "__truediv__": "/", "__rtruediv__": "/", "__itruediv__": "/=",
    "__floordiv__": "//", "__rfloordiv__": "//", "__ifloordiv__": "//=",
    "__mod__": "%", "__rmod__": "%", "__pow__": "**", "__rpow__": "**", "__ipow__": "**=",
    "__neg__": "unary -", "__pos__": "unary +", "__abs__": "abs()", "__invert__": "~",
    "__and__": "&", "__rand__": "&", "__or__": "|", "__ror__": "|", "__xor__": "^", "__rxor__": "^",
    "__lshift__": "<<", "__rshift__": ">>",
    "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">=", "__eq__": "==", "__ne__": "!=",
    "__getitem__": "indexing", "__setitem__": "indexed assignment",
}
"""How operators are spelled in messages: ``@``, not ``__matmul__``."""


def lookup(name: str) -> OpRule:
    """The rule for the op with public name ``name``.

    Unregistered ops are non-linear.  Method names ending in ``_`` and the
    in-place operators (``__iadd__``) write into ``input``.  Remembered: the
    checker asks at every op it checks, about few distinct names.
    """
    rule = _RULES.get(name)
    if rule is None:
        rule = OPS.get(name, NONLINEAR)
        if _is_inplace(name) and not rule.inplace:
            rule = dataclasses.replace(rule, inplace=True)
        bounded_put(_RULES, name, rule, _RULES_MAX)
    return rule


_RULES: Final[dict[str, OpRule]] = {}
_RULES_MAX: Final = 4096


_INPLACE_OPERATORS: Final = frozenset(
    ("__iadd__", "__isub__", "__imul__", "__imatmul__", "__itruediv__", "__ifloordiv__", "__imod__",
     "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__setitem__")
)


def _is_inplace(name: str) -> bool:
    short = name.rpartition(".")[2]
    if short.startswith("__"):
        return short in _INPLACE_OPERATORS
    return name.startswith(_METHODS) and short.endswith("_")


def display_name(name: str) -> str:
    """How to name op ``name`` in a message: ``+`` for operators, ``torch.exp`` otherwise."""
    short = name.rpartition(".")[2]
    symbol = OPERATOR_SYMBOLS.get(short)
    if symbol is not None:
        return symbol
    if name.startswith(_METHODS):
        return f".{short}"
    return name
