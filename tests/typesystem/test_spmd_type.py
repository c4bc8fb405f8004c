"""SpmdType: canonical text form, unknown axes, constant defaults."""

import pytest

from spmd_types.typesystem import UNKNOWN, WEAK, ZERO, I, P, R, S, SpmdType, V, parse


@pytest.mark.parametrize(
    "text",
    ["dp:R, tp:V", "dp:I", "tp:S(0)", "cp:P, dp:R, tp:S(-1)", "*:weak", "dp:V, *:zero", ""],
)
def test_text_form_round_trips(text):
    assert str(parse(text)) == text


def test_axes_are_sorted_so_equal_types_print_equally():
    a = SpmdType({"tp": V, "dp": R})
    b = SpmdType([("dp", R), ("tp", V)])
    assert a == b and hash(a) == hash(b) and str(a) == "dp:R, tp:V"


def test_unmentioned_axes_are_unknown_unless_defaulted():
    t = SpmdType({"dp": R})
    assert t.get("dp") is R and t.get("tp") is None
    assert SpmdType(default=WEAK).get("anything") is WEAK
    assert UNKNOWN.is_unknown and UNKNOWN.describe() == "unknown"


def test_axis_equal_to_default_is_dropped():
    assert SpmdType({"dp": ZERO, "tp": V}, default=ZERO) == parse("tp:V, *:zero")


def test_with_axis():
    t = parse("dp:R, tp:P")
    assert t.with_axis("tp", R) == parse("dp:R, tp:R")
    assert t.with_axis("cp", S(1)) == parse("cp:S(1), dp:R, tp:P")
    assert t.with_axis("dp", None) == parse("tp:P")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dp", "expected 'axis:type'"),
        ("dp:R, dp:V", "given twice"),
        ("*:R", "only weak or zero"),
        ("dp:Q", "not an SPMD axis type"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


@pytest.mark.parametrize("name", ["", "a,b", "a:b", " dp", "*", 3])
def test_bad_axis_names(name):
    with pytest.raises(ValueError, match="mesh-axis name"):
        SpmdType({name: R})


def test_is_immutable():
    with pytest.raises(AttributeError):
        parse("dp:R").default = WEAK
    assert parse("dp:I").get("dp") is I and parse("dp:P").get("dp") is P
