"""What spmd-annotate makes of what it saw: calls that disagree, shards told by shapes, parameters it cannot decide."""

from __future__ import annotations

import pytest

from spmd_types.codemods.observations import known_part, refine, scaled_dim, settle
from spmd_types.typesystem import parse


def test_calls_that_disagree_leave_the_position_alone() -> None:
    assert settle([parse("tp:R"), parse("tp:R")]) == parse("tp:R")
    assert settle([parse("tp:R"), parse("tp:V")]) == "the calls disagree (tp:R; tp:V): not annotated"
    assert settle([parse("")]) == "no SPMD type was observed (nothing typed flowed into it): not annotated"
    assert settle([(parse("tp:V"), None)]) == (parse("tp:V"), None)


def test_a_varying_value_is_a_shard_of_the_one_dim_that_scales_with_the_axis() -> None:
    assert scaled_dim((2, 4, 8), (2, 16, 8), 4) == 1
    assert scaled_dim((2, 4), (2, 4), 4) is None
    assert scaled_dim((2, 4), (2, 12), 4) is None  # another factor
    assert scaled_dim((2, 4), (8, 16), 4) is None  # two dims
    assert refine(parse("dp:R, tp:V"), (2, 4), {"tp": (4, (2, 16))}) == parse("dp:R, tp:S(1)")
    assert refine(parse("tp:I"), (2, 4), {"tp": (4, (2, 16))}) == parse("tp:I")


def test_a_constant_axis_is_not_written() -> None:
    assert known_part(parse("dp:weak, tp:V")) == parse("tp:V")
    assert known_part(parse("*:zero")) == parse("")


torch = pytest.importorskip("torch")


def test_a_forward_called_with_two_types_is_reported_not_annotated() -> None:
    from torch import nn

    from spmd_types import I, V, assert_type
    from spmd_types.codemods.observe import observe

    class Scale(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return x * 2

    def run() -> None:
        Scale()(assert_type(torch.ones(4), I["tp"]))
        Scale()(assert_type(torch.ones(4), V["tp"]))

    observation = observe(run, {"tp": 2}, keep=lambda cls: cls is Scale)
    assert observation.classes == ()
    assert [str(note) for note in observation.notes] == [
        f"{Scale.__qualname__}.forward(x): the calls disagree (tp:I; tp:V): not annotated",
        f"{Scale.__qualname__}.forward -> return: the calls disagree (tp:I; tp:V): not annotated",
    ]
