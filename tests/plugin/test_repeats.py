"""spmd_mypy.repeats: a call that mypy checks a second time gets the verdict of the first."""

from __future__ import annotations

import collections
import textwrap
from pathlib import Path

import pytest
from mypy import api
from mypy.nodes import ARG_POS, CallExpr, IntExpr, NameExpr
from mypy.plugin import FunctionContext
from mypy.types import AnyType, Type, TypeOfAny

import spmd_mypy.ops
from spmd_mypy.repeats import Repeats
from spmd_mypy.verdict import Verdict
from tests.plugin.harness import config_text


def _call(node: CallExpr, args: list[NameExpr | IntExpr], types: list[Type], default: Type,
          names: list[str | None] | None = None) -> FunctionContext:
    """What mypy hands a function hook for ``node``, one argument per parameter."""
    return FunctionContext(arg_types=[[t] for t in types], arg_kinds=[[ARG_POS] for _ in types],
                           callee_arg_names=names or [f"p{k}" for k in range(len(types))],
                           arg_names=[[None] for _ in types], default_return_type=default,
                           args=[[a] for a in args], context=node, api=None)  # type: ignore[arg-type]


def _any() -> AnyType:
    return AnyType(TypeOfAny.explicit)


def test_the_same_call_with_the_same_argument_types_gets_the_kept_verdict() -> None:
    node, name, default = CallExpr(NameExpr("f"), [], [], []), NameExpr("x"), _any()
    tensor = _any()
    repeats, verdict = Repeats(), Verdict()
    first = _call(node, [name], [tensor], default)
    assert repeats.find(first, node, None, default) is None
    assert repeats.keep(first, node, None, default, verdict) is verdict
    assert repeats.find(_call(node, [name], [tensor], default), node, None, default) is verdict


def test_a_literal_is_compared_by_value_any_other_argument_by_identity() -> None:
    node, default = CallExpr(NameExpr("f"), [], [], []), _any()
    literal, name = IntExpr(2), NameExpr("x")
    repeats, verdict = Repeats(), Verdict()
    repeats.keep(_call(node, [literal, name], [_any(), (tensor := _any())], default), node, None, default, verdict)
    # mypy builds a literal's type anew at each inference: an equal one is the same argument.
    assert repeats.find(_call(node, [literal, name], [_any(), tensor], default), node, None, default) is verdict
    # Anything else must be the same object: an equal type of a variable may be another inference's.
    assert repeats.find(_call(node, [literal, name], [_any(), _any()], default), node, None, default) is None


@pytest.mark.parametrize("change", ["node", "default", "receiver", "callee"])
def test_any_other_difference_is_another_call(change: str) -> None:
    node, name, tensor, default = CallExpr(NameExpr("f"), [], [], []), NameExpr("x"), _any(), _any()
    repeats = Repeats()
    repeats.keep(_call(node, [name], [tensor], default), node, None, default, Verdict())
    other_node = CallExpr(NameExpr("f"), [], [], []) if change == "node" else node
    other_default = AnyType(TypeOfAny.special_form) if change == "default" else default
    receiver = _any() if change == "receiver" else None
    names = ["other"] if change == "callee" else None
    again = _call(other_node, [name], [tensor], other_default, names)
    if change == "default":  # an Any of another kind is equal to mypy: still the same result type
        assert repeats.find(again, other_node, receiver, other_default) is not None
    else:
        assert repeats.find(again, other_node, receiver, other_default) is None


@pytest.mark.skipif(not spmd_mypy.ops.__file__.endswith(".py"),
                    reason="counts the handler's calls by replacing it, which the compiled build calls directly")
def test_a_right_operand_checked_twice_is_handled_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mypy infers ``torch.rsqrt(v)`` in ``x * torch.rsqrt(v)`` twice; the handler runs once, and what it found
    (here a mismatch with the declared return type, which only the second inference's type context shows) is
    reported as without the memory."""
    handled: collections.Counter[int] = collections.Counter()
    check_function = spmd_mypy.ops.check_function

    def counted(session: object, ctx: FunctionContext, name: str) -> Verdict:
        handled[ctx.context.line] += 1
        return check_function(session, ctx, name)  # type: ignore[arg-type]

    monkeypatch.setattr(spmd_mypy.ops, "check_function", counted)
    asked: collections.Counter[int] = collections.Counter()
    find = Repeats.find

    def counted_find(self: Repeats, ctx: FunctionContext, *rest: object) -> Verdict | None:
        asked[ctx.context.line] += 1
        return find(self, ctx, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(Repeats, "find", counted_find)
    source = tmp_path / "m.py"
    source.write_text(textwrap.dedent('''
        from typing import Annotated

        import torch
        from torch import Tensor

        from spmd_types import R, V


        def scaled(x: Annotated[Tensor, V["tp"]], v: Annotated[Tensor, R["tp"]]) -> Annotated[Tensor, R["tp"]]:
            return x * torch.rsqrt(v)
    '''))
    config = tmp_path / "mypy.ini"
    config.write_text(config_text())
    stdout, stderr, status = api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
                                      "--no-error-summary", "--hide-error-context", str(source)])
    assert (asked[11], handled[11]) == (3, 1), (asked, handled)  # __mul__, rsqrt twice; rsqrt handled once
    assert status == 1, stdout + stderr
    reported = [line for line in stdout.splitlines() if line.startswith(str(source))]
    assert len(reported) == 1 and ":11:" in reported[0] and "[spmd-" in reported[0], stdout
