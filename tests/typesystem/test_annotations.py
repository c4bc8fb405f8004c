"""Annotation markers evaluate at run time and read back as SPMD types."""

import typing
from typing import Annotated, get_type_hints

import pytest

from spmd_types import Axis, I, P, R, S, Spmd, V
from spmd_types.typesystem import AnnotationError, axis_of_hint, parse, spmd_type_from_metadata, spmd_type_of_hint


class FakeTensor:
    pass


class FakeGroup:
    pass


def annotated(
    x: Annotated[FakeTensor, R["dp"], V["tp"]],
    y: Annotated[FakeTensor, I["dp", "cp"], S["tp", -1]],
    z: Annotated[FakeTensor, "b c", P["tp"]],
    g: Annotated[FakeGroup, Axis["tp"]],
    plain: FakeTensor,
    opt: Annotated[FakeTensor, R["tp"]] | None = None,
) -> Annotated[FakeTensor, P["tp"]]:
    raise NotImplementedError


HINTS = get_type_hints(annotated, include_extras=True)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("x", "dp:R, tp:V"), ("y", "cp:I, dp:I, tp:S(-1)"), ("z", "tp:P"), ("return", "tp:P")],
)
def test_hints_read_back(name, expected):
    assert spmd_type_of_hint(HINTS[name]) == parse(expected)


def test_hints_without_spmd_metadata():
    assert spmd_type_of_hint(HINTS["plain"]) is None
    assert spmd_type_of_hint(HINTS["g"]) is None  # Axis marks groups, not tensors
    assert spmd_type_of_hint(int) is None


def test_process_group_axis():
    assert axis_of_hint(HINTS["g"]) == "tp"
    assert axis_of_hint(HINTS["x"]) is None


def test_foreign_metadata_is_ignored():
    assert spmd_type_from_metadata(["b c", 3, object()]) is None


def test_same_axis_twice_with_same_type_is_fine():
    assert spmd_type_from_metadata([R["dp"], R["dp", "tp"]]) == parse("dp:R, tp:R")


def test_conflicting_axis_is_an_error():
    with pytest.raises(AnnotationError, match="axis 'dp' is annotated twice, as R and V"):
        spmd_type_from_metadata([R["dp"], V["dp"]])


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (lambda: R[0], "takes mesh-axis names as strings, got 0"),
        (lambda: R[()], "needs at least one mesh-axis name"),
        (lambda: V["dp", "dp"], "names an axis twice"),
        (lambda: S["tp"], r"as in S\['tp', 0\]"),
        (lambda: S["tp", "x"], "the dim must be an int"),
        (lambda: S[0, 0], "the axis must be a string"),
        (lambda: Axis[3], "one mesh-axis name as a string"),
    ],
)
def test_malformed_markers(expr, message):
    with pytest.raises(AnnotationError, match=message):
        expr()


def test_annotation_error_is_a_type_error():
    assert issubclass(AnnotationError, TypeError)


def test_marker_reprs():
    assert repr(R["dp", "cp"]) == "R['dp', 'cp']"
    assert repr(S["tp", 0]) == "S['tp', 0]"
    assert repr(Axis["tp"]) == "Axis['tp']"


def test_spmd_alias_form_builds_annotated():
    Alias = Spmd[FakeTensor, typing.Literal["dp:R, tp:S(0)"]]
    assert typing.get_origin(Alias) is typing.Annotated
    assert spmd_type_of_hint(Alias) == parse("dp:R, tp:S(0)")
    assert spmd_type_of_hint(Spmd[FakeTensor, typing.Literal["dp:R", "tp:V"]]) == parse("dp:R, tp:V")


def test_spmd_alias_form_reads_the_spellings_only_the_plugin_accepts():
    """A bare string and markers build the same type (the plugin reads them too, and says what to write)."""
    assert spmd_type_of_hint(Spmd[FakeTensor, "dp:R, tp:V"]) == parse("dp:R, tp:V")
    assert spmd_type_of_hint(Spmd[FakeTensor, R["dp"], V["tp"]]) == parse("dp:R, tp:V")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Spmd[FakeTensor], "takes a tensor type"),
        (lambda: Spmd[FakeTensor, "dp:Q"], "not an SPMD axis type"),
        (lambda: Spmd[FakeTensor, "*:weak"], "one or more"),
        (lambda: Spmd[FakeTensor, 3], "as a Literal string"),
        (lambda: Spmd[FakeTensor, typing.Literal[3]], "as a Literal string"),
        (lambda: Spmd[FakeTensor, typing.Literal["dp:R"], V["dp"]], "annotated twice"),
    ],
)
def test_spmd_alias_form_errors(make, message):
    with pytest.raises(AnnotationError, match=message):
        make()
