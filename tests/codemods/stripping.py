"""Removing the SPMD annotations that spmd-annotate writes: module boundaries and class-body parameter declarations.

The round-trip tests strip an example, re-infer its annotations and compare.
``forward``'s annotations lose their SPMD part (``Annotated[Tensor, I["tp"]]``
becomes ``Tensor``; a module-level alias such as ``Batch = Spmd[Tensor,
Literal["dp:S(0)"]]`` becomes its base); declarations of tensors in a class body
(``weight: Annotated[nn.Parameter, S["tp", 0]]``) are removed.  Everything
else, helper functions and their annotations included, is left as it is.
"""

from __future__ import annotations

import libcst as cst

from spmd_types.codemods.writer import is_spmd_annotation


def _base(node: cst.BaseExpression) -> cst.BaseExpression:
    """The type an SPMD annotation annotates: the first element of ``Annotated[...]`` or ``Spmd[...]``."""
    assert isinstance(node, cst.Subscript)
    first = node.slice[0].slice
    assert isinstance(first, cst.Index)
    return first.value


class _Stripper(cst.CSTTransformer):
    def __init__(self, aliases: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.aliases = aliases
        self.depth = 0  # of classes

    def _plain(self, annotation: cst.Annotation | None) -> cst.Annotation | None:
        if annotation is None:
            return None
        node = annotation.annotation
        if isinstance(node, cst.Name) and node.value in self.aliases:
            return annotation.with_changes(annotation=self.aliases[node.value])
        return annotation.with_changes(annotation=_base(node)) if is_spmd_annotation(node) else annotation

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth += 1

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.depth -= 1
        assert isinstance(updated.body, cst.IndentedBlock)
        kept = [s for s in updated.body.body if not _spmd_declaration(s)]
        return updated.with_changes(body=updated.body.with_changes(body=kept))

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if not self.depth or updated.name.value != "forward":
            return updated
        params = updated.params.with_changes(
            params=[p.with_changes(annotation=self._plain(p.annotation)) for p in updated.params.params])
        return updated.with_changes(params=params, returns=self._plain(updated.returns))


def _spmd_declaration(statement: cst.BaseStatement) -> bool:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        return isinstance(small, cst.AnnAssign) and small.value is None and is_spmd_annotation(small.annotation.annotation)
    return False


def strip(source: str) -> str:
    """``source`` without the SPMD annotations of module boundaries and parameters."""
    module = cst.parse_module(source)
    aliases = {}
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign):
            assign = statement.body[0]
            target = assign.targets[0].target
            if isinstance(target, cst.Name) and is_spmd_annotation(assign.value):
                aliases[target.value] = _base(assign.value)
    return module.visit(_Stripper(aliases)).code
