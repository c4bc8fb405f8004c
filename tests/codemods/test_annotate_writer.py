"""The writer of spmd-annotate: what it adds to a source file, what it keeps, and that a second run changes nothing."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("libcst")

from spmd_types.codemods.observations import ClassTypes
from spmd_types.codemods.writer import annotate_source
from spmd_types.typesystem import parse

SOURCE = textwrap.dedent('''\
    """A layer."""

    import torch
    from torch import nn

    from spmd_types import R


    class Layer(nn.Module):
        """Docstring."""

        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.empty(4, 4))  # a comment that stays

        def forward(self, x, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
            return x @ self.weight.T, None
''')

TYPES = ClassTypes("layer.py", "Layer", {"x": parse("tp:R"), "mask": parse("dp:V, tp:I")},
                   (parse("tp:S(0)"), None), {"weight": parse("tp:S(0)")})


def test_boundaries_and_parameters_are_annotated_with_the_module_s_own_names() -> None:
    rewrite = annotate_source(SOURCE, [TYPES])
    assert rewrite.after == textwrap.dedent('''\
        """A layer."""

        import torch
        from torch import nn

        from spmd_types import I, S, V, R
        from typing import Annotated


        class Layer(nn.Module):
            """Docstring."""

            weight: Annotated[nn.Parameter, S["tp", 0]]

            def __init__(self) -> None:
                super().__init__()
                self.weight = nn.Parameter(torch.empty(4, 4))  # a comment that stays

            def forward(self, x: Annotated[torch.Tensor, R["tp"]], mask: Annotated[torch.Tensor, V["dp"], I["tp"]]) -> tuple[Annotated[torch.Tensor, S["tp", 0]], torch.Tensor | None]:
                return x @ self.weight.T, None
    ''')
    assert rewrite.notes == ()


def test_a_second_run_changes_nothing_and_says_what_it_kept() -> None:
    once = annotate_source(SOURCE, [TYPES]).after
    again = annotate_source(once, [TYPES])
    assert not again.changed
    assert {note.position for note in again.notes} == {"forward(x)", "forward(mask)", "forward -> return", "weight"}
    assert all(note.message == "already annotated: kept" for note in again.notes)


def test_a_plain_declaration_is_wrapped_and_a_missing_import_added() -> None:
    source = textwrap.dedent('''\
        import torch.nn as nn


        class Layer(nn.Module):
            weight: nn.Parameter

            def forward(self, x):
                return x
    ''')
    types = ClassTypes("layer.py", "Layer", {"x": parse("tp:V")}, parse("tp:V"), {"weight": parse("tp:I")})
    after = annotate_source(source, [types]).after
    assert "    weight: Annotated[nn.Parameter, I[\"tp\"]]\n" in after
    assert 'def forward(self, x: Annotated[Tensor, V["tp"]]) -> Annotated[Tensor, V["tp"]]:' in after
    assert "from torch import Tensor\n" in after


def test_what_cannot_be_written_is_reported() -> None:
    source = "class Other:\n    pass\n\n\nclass Layer:\n    def forward(self, x) -> int:\n        return 0\n"
    types = ClassTypes("m.py", "Layer", {"y": parse("tp:R")}, (parse("tp:R"), parse("tp:R")))
    rewrite = annotate_source(source, [types, ClassTypes("m.py", "Missing", {"x": parse("tp:R")})])
    assert not rewrite.changed
    assert [str(note) for note in rewrite.notes] == [
        "Layer.forward(y): no such parameter in the source: not annotated",
        "Layer.forward -> return: a tuple of 2 observed, annotated int: not annotated",
        "Missing.class: not found in the source: not annotated",
    ]


def test_declarations_at_the_top_of_a_class_are_set_off_by_a_blank_line() -> None:
    source = "class Layer:\n    def forward(self, x):\n        return x\n"
    after = annotate_source(source, [ClassTypes("m.py", "Layer", parameters={"weight": parse("tp:R")})]).after
    assert after.endswith('class Layer:\n    weight: Annotated[nn.Parameter, R["tp"]]\n\n    def forward(self, x):\n'
                          '        return x\n')


def test_an_optional_tensor_gets_its_type_inside_the_optional() -> None:
    # Annotated[Optional[Tensor], ...] is no tensor type (the plugin rejects it): the type goes on the tensor.
    source = textwrap.dedent('''\
        from typing import Optional

        import torch
        from torch import nn


        class Layer(nn.Module):
            bias: Optional[nn.Parameter]

            def forward(self, x, mask: None | torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
                return x, self.bias
    ''')
    types = ClassTypes("layer.py", "Layer", {"x": parse("tp:I"), "mask": parse("tp:I")},
                       (parse("tp:S(0)"), parse("tp:S(0)")), {"bias": parse("tp:S(0)")})
    after = annotate_source(source, [types]).after
    assert '    bias: Optional[Annotated[nn.Parameter, S["tp", 0]]]\n' in after
    assert ('def forward(self, x: Annotated[torch.Tensor, I["tp"]], mask: None | Annotated[torch.Tensor, I["tp"]]) -> '
            'tuple[Annotated[torch.Tensor, S["tp", 0]], Optional[Annotated[torch.Tensor, S["tp", 0]]]]:') in after
    again = annotate_source(after, [types])
    assert not again.changed
    assert all(note.message == "already annotated: kept" for note in again.notes)
