"""The rank the core gives an op's result (:func:`result_rank`) is the rank torch gives it.

Global mode carries these ranks from spec-declared values through ops, so that
its einsum reading applies after them; a wrong rank there would misplace a cut dim.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")

from spmd_types.typesystem import NOT_KNOWN, UNKNOWN, Operand, result_rank  # noqa: E402

Call = tuple[str, tuple[tuple[str, tuple[int, ...]], ...], dict[str, object], Callable[..., torch.Tensor]]

CALLS: list[Call] = [
    ("torch.Tensor.transpose", (("input", (2, 3, 4)),), {"dim0": 0, "dim1": 2}, lambda x: x.transpose(0, 2)),
    ("torch.Tensor.permute", (("input", (2, 3, 4)),), {"dims": (2, 0, 1)}, lambda x: x.permute(2, 0, 1)),
    ("torch.Tensor.T", (("input", (2, 3)),), {}, lambda x: x.T),
    ("torch.Tensor.mT", (("input", (2, 3, 4)),), {}, lambda x: x.mT),
    ("torch.Tensor.unsqueeze", (("input", (2, 3)),), {"dim": -1}, lambda x: x.unsqueeze(-1)),
    ("torch.Tensor.sum", (("input", (2, 3, 4)),), {"dim": (0, 2)}, lambda x: x.sum((0, 2))),
    ("torch.Tensor.mean", (("input", (2, 3, 4)),), {"dim": 1, "keepdim": True}, lambda x: x.mean(1, keepdim=True)),
    ("torch.Tensor.sum", (("input", (2, 3, 4)),), {}, lambda x: x.sum()),
    ("torch.Tensor.amax", (("input", (2, 3)),), {"dim": -1}, lambda x: x.amax(-1)),
    ("torch.softmax", (("input", (2, 3)),), {"dim": 1}, lambda x: torch.softmax(x, 1)),
    ("torch.Tensor.view", (("input", (2, 3, 4)),), {"size": (6, -1)}, lambda x: x.view(6, -1)),
    ("torch.Tensor.view", (("input", (2, 3, 4)),), {"size": -1}, lambda x: x.view(-1)),
    ("torch.reshape", (("input", (2, 3, 4)),), {"shape": (2, 3, 2, 2)}, lambda x: x.reshape(2, 3, 2, 2)),
    ("torch.Tensor.flatten", (("input", (2, 3, 4)),), {"start_dim": 1}, lambda x: x.flatten(1)),
    ("torch.Tensor.__getitem__", (("input", (2, 3, 4)),), {"indices": (0, slice(None), None)},
     lambda x: x[0, :, None]),
    ("torch.Tensor.__getitem__", (("input", (2, 3, 4)),), {"indices": (Ellipsis, 1)}, lambda x: x[..., 1]),
    ("torch.Tensor.select", (("input", (2, 3, 4)),), {"dim": 1, "index": 0}, lambda x: x.select(1, 0)),
    ("torch.cat", (("tensors", (2, 3)), ("tensors", (2, 3))), {"dim": 1}, lambda a, b: torch.cat([a, b], 1)),
    ("torch.stack", (("tensors", (2, 3)), ("tensors", (2, 3))), {"dim": 1}, lambda a, b: torch.stack([a, b], 1)),
    ("torch.Tensor.__add__", (("input", (3, 4)), ("other", (2, 1, 4))), {}, lambda a, b: a + b),
    ("torch.matmul", (("input", (5, 2, 3)), ("other", (3, 4))), {}, torch.matmul),
    ("torch.matmul", (("input", (3,)), ("other", (2, 3, 4))), {}, torch.matmul),
    ("torch.Tensor.__rmatmul__", (("input", (3, 4)), ("other", (2, 3))), {}, lambda w, x: x @ w),
    ("torch.nn.functional.linear", (("input", (5, 2, 3)), ("weight", (4, 3))), {}, torch.nn.functional.linear),
    ("torch.einsum", (("args", (2, 3)), ("args", (3, 4))), {"equation": "ij,jk->ki"},
     lambda a, b: torch.einsum("ij,jk->ki", a, b)),
]


@pytest.mark.parametrize("call", CALLS, ids=lambda call: call[0])
def test_result_rank_is_torchs(call: Call) -> None:
    op, operands, args, run = call
    typed = [Operand(param, UNKNOWN, len(shape)) for param, shape in operands]
    expected = run(*(torch.zeros(shape) for _, shape in operands)).ndim
    assert result_rank(op, typed, args) == expected


@pytest.mark.parametrize(
    ("op", "ranks", "args"),
    [
        ("torch.Tensor.squeeze", (2,), {"dim": 0}),  # drops the dim only where its size is 1
        ("torch.Tensor.transpose", (None,), {"dim0": 0, "dim1": 1}),  # the operand's rank is not known
        ("torch.Tensor.view", (2,), {"size": NOT_KNOWN}),  # sizes not written as literals
        ("torch.Tensor.sum", (2,), {"dim": 0, "keepdim": NOT_KNOWN}),
        ("torch.Tensor.__add__", (2, None), {}),
        ("torch.Tensor.unknown_method", (2,), {}),
    ],
)
def test_result_rank_is_not_guessed(op: str, ranks: tuple[int | None, ...], args: dict[str, object]) -> None:
    operands = [Operand(param, UNKNOWN, rank) for param, rank in zip(("input", "other"), ranks)]
    assert result_rank(op, operands, args) is None
