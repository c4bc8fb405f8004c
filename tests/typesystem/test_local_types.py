"""Per-axis types: identity, text forms, and the gradient duality."""

import pickle

import pytest

from spmd_types.typesystem import WEAK, ZERO, I, P, R, S, Shard, V, gradient_type, parse_axis_type

ALL = [R, I, V, P, S(0), S(-1), WEAK, ZERO]


@pytest.mark.parametrize("t", ALL, ids=repr)
def test_text_form_round_trips(t):
    assert parse_axis_type(t.code) == t
    assert repr(t) == t.code


@pytest.mark.parametrize("t", ALL, ids=repr)
def test_pickle_keeps_identity(t):
    copy = pickle.loads(pickle.dumps(t))
    assert copy == t
    if not isinstance(t, Shard):
        assert copy is t


@pytest.mark.parametrize(
    ("forward", "grad"), [(R, P), (P, R), (I, I), (V, V), (S(2), S(2))], ids=repr
)
def test_gradient_duality(forward, grad):
    assert gradient_type(forward) == grad
    # The backward of the backward is the forward.
    assert gradient_type(gradient_type(forward)) == forward


def test_shards_compare_by_dim():
    assert S(0) == Shard(0) and hash(S(0)) == hash(Shard(0))
    assert S(0) != S(1) and S(0) != V


@pytest.mark.parametrize("bad", ["X", "S()", "S(a)", "r", ""])
def test_parse_rejects_garbage(bad):
    with pytest.raises(ValueError, match="not an SPMD axis type"):
        parse_axis_type(bad)


@pytest.mark.parametrize("bad", ["0", 1.0, True, None])
def test_shard_needs_int_dim(bad):
    with pytest.raises(TypeError, match="int tensor dimension"):
        S(bad)


def test_types_are_immutable():
    with pytest.raises(AttributeError):
        R.code = "Q"
    with pytest.raises(AttributeError):
        S(0).dim = 1
