"""The reader of mypy's messages that the plugin's error filters use, on what mypy really prints.

A program of stand-in classes (named as the stubs name them, so that mypy
prints their types as it prints the real ones) is checked by plain mypy,
without the plugin; each error it reports is read by
:func:`spmd_mypy.compat.read_mismatch`.  Run under the newest mypy with the
suite and under the oldest supported one by ``make test-oldest-mypy``.
"""

from __future__ import annotations

import textwrap

import pytest
from mypy import api

from spmd_mypy.compat import Mismatch, printed_spmd, read_mismatch
from tests.plugin.harness import OUTPUT

R: str = "SpmdTensor[Literal['tp:R']]"
DP_R_TP_V: str = "SpmdTensor[Literal['dp:R', 'tp:V']]"
PROGRAM: str = textwrap.dedent("""
    from typing import Any, Generic, Literal, Optional, TypeVar

    T = TypeVar("T", covariant=True)

    class Tensor: ...
    class Parameter(Tensor): ...
    class SpmdTensor(Tensor, Generic[T]): ...
    class SpmdParameter(Parameter, Generic[T]): ...

    def takes(x: SpmdTensor[Literal["tp:R"]]) -> None: ...

    class Module:
        weight: SpmdParameter[Literal["tp:R"]]
        def forward(self, x: SpmdTensor[Literal["tp:R"]]) -> None: ...

    def returned(x: Tensor) -> SpmdTensor[Literal["tp:R"]]:
        return x
    def returned_optional(x: Optional[Tensor]) -> Optional[SpmdTensor[Literal["tp:R"]]]:
        return x
    def assigned(v: SpmdTensor[Literal["dp:R", "tp:V"]], p: Parameter, m: Module) -> None:
        y: SpmdTensor[Literal["tp:R"]] = v
        m.weight = p
        ys: list[SpmdTensor[Literal["tp:R"]]] = []
        ys[0] = v
    def passed(v: SpmdTensor[Literal["dp:R", "tp:V"]], m: Module) -> None:
        takes(v)
        takes(x=v)
        m.forward(v)
    def unrelated(n: int) -> str:
        return n
""")
EXPECTED: list[tuple[int, str, Mismatch]] = [
    # (line, code, what the reader makes of the message)
    (18, "return-value", Mismatch("m.py", 18, "return", ("Tensor",), (R,))),
    (20, "return-value", Mismatch("m.py", 20, "return", ("Tensor", "None"), (R, "None"))),
    (22, "assignment", Mismatch("m.py", 22, "variable", (DP_R_TP_V,), (R,))),
    (23, "assignment", Mismatch("m.py", 23, "variable", ("Parameter",), ("SpmdParameter[Literal['tp:R']]",))),
    (25, "assignment", Mismatch("m.py", 25, "item", (DP_R_TP_V,), (R,))),
    (27, "arg-type", Mismatch("m.py", 27, "argument", (DP_R_TP_V,), (R,))),
    (28, "arg-type", Mismatch("m.py", 28, "argument", (DP_R_TP_V,), (R,))),
    (29, "arg-type", Mismatch("m.py", 29, "argument", (DP_R_TP_V,), (R,))),
    (31, "return-value", Mismatch("m.py", 31, "return", ("int",), ("str",))),
]


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, str, str]]:
    """mypy's errors on ``PROGRAM``: line, code and message of each."""
    folder = tmp_path_factory.mktemp("messages")
    (folder / "m.py").write_text(PROGRAM)
    stdout, stderr, _ = api.run([str(folder / "m.py"), "--no-error-summary", "--show-error-codes",
                                 "--hide-error-context", "--no-pretty", "--cache-dir", str(folder / "cache")])
    assert not stderr, stderr
    found = [OUTPUT.match(line) for line in stdout.splitlines()]
    return [(int(m["line"]), m["code"], m["message"]) for m in found if m is not None and m["kind"] == "error"]


def test_every_mismatch_mypy_reports_is_read(reported: list[tuple[int, str, str]]) -> None:
    assert [(line, code) for line, code, _ in reported] == [(line, code) for line, code, _ in EXPECTED]
    for (line, code, message), (_, _, mismatch) in zip(reported, EXPECTED, strict=True):
        assert read_mismatch("m.py", line, code, message) == mismatch, message


def test_other_errors_are_not_mismatches() -> None:
    assert read_mismatch("m.py", 1, "attr-defined", 'Module has no attribute "x"') is None
    assert read_mismatch("m.py", 1, None, "Incompatible return value type (got \"int\", expected \"str\")") is None


def test_printed_unions_are_split_at_their_top_level() -> None:
    message = 'Incompatible return value type (got "dict[str, int | None] | None", expected "Optional[int]")'
    read = read_mismatch("m.py", 1, "return-value", message)
    assert read is not None and (read.value, read.declared) == (("dict[str, int | None]", "None"), ("int", "None"))


@pytest.mark.parametrize(("printed", "read"), [
    (DP_R_TP_V, ("SpmdTensor", frozenset({"dp:R", "tp:V"}))),
    ("SpmdParameter[Literal['tp:R']]", ("SpmdParameter", frozenset({"tp:R"}))),
    ("SpmdTensor[Any]", ("SpmdTensor", frozenset())),
    ("Tensor", None),
    ("list[SpmdTensor[Any]]", None),
])
def test_printed_spmd_types(printed: str, read: tuple[str, frozenset[str]] | None) -> None:
    assert printed_spmd(printed) == read
