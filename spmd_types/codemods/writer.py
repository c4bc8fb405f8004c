"""Writing observed SPMD types into source files, with libcst: module boundaries and parameters only.

For each class of an :class:`~spmd_types.codemods.observations.Observation`:

* each observed parameter of ``forward`` gets ``Annotated[<its annotation, or
  Tensor>, R["tp"], ...]``, and so does the result; a result annotated as a
  tuple (``Tuple[Tensor, Optional[Tensor]]``) gets its observed elements
  annotated one by one;
* each observed ``nn.Parameter`` gets a declaration in the class body, the
  project's convention (``weight: Annotated[nn.Parameter, S["tp", 0]]``), after
  the docstring and any declarations already there; an existing declaration
  without an SPMD type is wrapped;
* the names used are imported (``Annotated`` from ``typing``, the markers from
  ``spmd_types``, ``Tensor`` and ``nn`` from ``torch``, unless the module
  already binds them).

An annotation that already states an SPMD type is never replaced (the observer
reports a disagreement instead), so a second run changes nothing.  Comments
and formatting elsewhere are kept.  This module imports libcst, not torch.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from spmd_types.codemods.names import top_level_bindings
from spmd_types.codemods.observations import RESULT, ClassTypes, Note, Observation, Value
from spmd_types.typesystem import LocalType, Shard, SpmdType

__all__ = ["Rewrite", "annotate_source", "is_spmd_annotation", "markers", "write_annotations"]

_MARKERS = frozenset({"R", "I", "V", "P", "S"})


def markers(t: SpmdType) -> list[str]:
    """The annotation markers of ``t``, one per axis in axis order: ``['R["dp"]', 'S["tp", 0]']``."""
    out = []
    for axis, kind in t.items():
        if isinstance(kind, Shard):
            out.append(f'S["{axis}", {kind.dim}]')
        elif isinstance(kind, LocalType):
            out.append(f'{kind.code}["{axis}"]')
    return out


def _last_name(node: cst.BaseExpression) -> str | None:
    """``Annotated`` for ``Annotated`` and ``typing.Annotated``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def is_spmd_annotation(node: cst.BaseExpression) -> bool:
    """Whether an annotation states an SPMD type: ``Annotated[..., R["tp"]]``, ``Annotated[..., PartitionSpec(...)]``
    or ``Spmd[...]`` (also nested)."""
    if not isinstance(node, cst.Subscript):
        return False
    head = _last_name(node.value)
    if head == "Spmd":
        return True
    for element in node.slice:
        item = element.slice
        if not isinstance(item, cst.Index):
            continue
        value = item.value
        if head == "Annotated" and isinstance(value, cst.Subscript) and _last_name(value.value) in _MARKERS:
            return True
        if head == "Annotated" and isinstance(value, cst.Call) and _last_name(value.func) == "PartitionSpec":
            return True
        if is_spmd_annotation(value):
            return True
    return False


@dataclass(frozen=True)
class _Spelling:
    """How the module spells the names an annotation needs, and what must be imported for them."""

    tensor: str
    parameter: str
    tensor_import: tuple[str, str] | None  # (module, name) to import for ``tensor``, if not bound
    parameter_import: tuple[str, str] | None


def _spelling(module: cst.Module) -> _Spelling:
    """``Tensor`` and ``nn.Parameter`` as the module's top-level imports bind them (to be imported if unbound)."""
    local_of = {binding.target: binding.name for binding in top_level_bindings(module)}
    if "torch.Tensor" in local_of:
        tensor, tensor_import = local_of["torch.Tensor"], None
    elif "torch" in local_of:
        tensor, tensor_import = f"{local_of['torch']}.Tensor", None
    else:
        tensor, tensor_import = "Tensor", ("torch", "Tensor")
    if "torch.nn.Parameter" in local_of:
        parameter, parameter_import = local_of["torch.nn.Parameter"], None
    elif "torch.nn" in local_of:
        parameter, parameter_import = f"{local_of['torch.nn']}.Parameter", None
    elif "torch" in local_of:
        parameter, parameter_import = f"{local_of['torch']}.nn.Parameter", None
    else:
        parameter, parameter_import = "nn.Parameter", ("torch", "nn")
    return _Spelling(tensor, parameter, tensor_import, parameter_import)


def _annotated(base: str, t: SpmdType) -> cst.BaseExpression:
    return cst.parse_expression(f"Annotated[{base}, {', '.join(markers(t))}]")


class _Annotator(cst.CSTTransformer):
    """Adds the observed types to the classes named in ``classes`` (by qualified name)."""

    def __init__(self, module: cst.Module, classes: Mapping[str, ClassTypes], spelling: _Spelling) -> None:
        super().__init__()
        self.module = module
        self.classes = classes
        self.spelling = spelling
        self.scope: list[str] = []
        self.used: set[str] = set()  # marker names written
        self.imports: set[tuple[str, str]] = set()  # (module, name) that the written annotations need
        self.found: set[str] = set()
        self.notes: list[Note] = []

    # -- qualified names ------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.append(node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope += [node.name.value, "<locals>"]

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        del self.scope[-2:]
        return updated

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        qualname = ".".join(self.scope)
        self.scope.pop()
        types = self.classes.get(qualname)
        if types is None or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        self.found.add(qualname)
        body = list(updated.body.body)
        forward = next((k for k, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == "forward"),
                       None)
        if forward is not None:
            function = body[forward]
            assert isinstance(function, cst.FunctionDef)
            body[forward] = self._forward(types, function)
        elif types.arguments or types.result is not None:
            self._note(types, "forward", "no forward in the class body: not annotated")
        body = self._declare_parameters(types, body)
        return updated.with_changes(body=updated.body.with_changes(body=body))

    # -- forward ----------------------------------------------------------------------

    def _forward(self, types: ClassTypes, function: cst.FunctionDef) -> cst.FunctionDef:
        params = function.params
        by_name = {p.name.value: p for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        replaced: dict[str, cst.Param] = {}
        for name, t in types.arguments.items():
            param = by_name.get(name)
            if param is None:
                self._note(types, f"forward({name})", "no such parameter in the source: not annotated")
                continue
            existing = param.annotation.annotation if param.annotation is not None else None
            annotation = self._wrap(types, f"forward({name})", existing, t)
            if annotation is not None:
                replaced[name] = param.with_changes(annotation=cst.Annotation(annotation))

        def swap(group: Sequence[cst.Param]) -> list[cst.Param]:
            return [replaced.get(p.name.value, p) for p in group]

        function = function.with_changes(params=params.with_changes(
            posonly_params=swap(params.posonly_params), params=swap(params.params),
            kwonly_params=swap(params.kwonly_params)))
        if types.result is None:
            return function
        existing = function.returns.annotation if function.returns is not None else None
        returns = self._result(types, existing, types.result)
        return function.with_changes(returns=cst.Annotation(returns)) if returns is not None else function

    def _result(self, types: ClassTypes, existing: cst.BaseExpression | None,
                value: Value) -> cst.BaseExpression | None:
        where = f"forward -> {RESULT}"
        if isinstance(value, SpmdType):
            return self._wrap(types, where, existing, value)
        if existing is None:
            if any(item is None or item.is_unknown for item in value):
                self._note(types, where, "a tuple with elements of no SPMD type, and no annotation to add them to: "
                                         "not annotated")
                return None
            written = [self._wrap(types, where, None, t) for t in value if t is not None]
            return cst.parse_expression("tuple[" + ", ".join(self._code(e) for e in written if e is not None) + "]")
        if is_spmd_annotation(existing):
            self._note(types, where, "already annotated: kept")
            return None
        elements = existing.slice if isinstance(existing, cst.Subscript) else ()
        if _last_name(existing.value if isinstance(existing, cst.Subscript) else existing) not in ("tuple", "Tuple") \
                or len(elements) != len(value):
            self._note(types, where, f"a tuple of {len(value)} observed, annotated {self._code(existing)}: "
                                     "not annotated")
            return None
        new_elements = []
        for element, t in zip(elements, value):
            index = element.slice
            if t is not None and not t.is_unknown and isinstance(index, cst.Index):
                wrapped = self._wrap(types, where, index.value, t)
                if wrapped is not None:
                    element = element.with_changes(slice=index.with_changes(value=wrapped))
            new_elements.append(element)
        assert isinstance(existing, cst.Subscript)
        return existing.with_changes(slice=new_elements)

    def _wrap(self, types: ClassTypes, where: str, existing: cst.BaseExpression | None,
              t: SpmdType) -> cst.BaseExpression | None:
        """``Annotated[existing, markers]`` (``existing`` defaulting to Tensor), or ``None`` if already annotated."""
        if existing is not None and is_spmd_annotation(existing):
            self._note(types, where, "already annotated: kept")
            return None
        optional = _optional(existing) if existing is not None else None
        if optional is not None:  # the tensor, when there is one: Optional[Annotated[Tensor, ...]]
            inner, put = optional
            wrapped = self._wrap(types, where, inner, t)
            return put(wrapped) if wrapped is not None else None
        self.used.update(marker[0] for marker in markers(t))
        if existing is not None:
            return _annotated(self._code(existing), t)
        if self.spelling.tensor_import is not None:
            self.imports.add(self.spelling.tensor_import)
        return _annotated(self.spelling.tensor, t)

    # -- parameters ---------------------------------------------------------------

    def _declare_parameters(self, types: ClassTypes, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        missing = dict(types.parameters)
        for k, statement in enumerate(body):
            found = _declaration(statement)
            if found is None or found[0] not in missing:
                continue
            name, declaration = found
            wrapped = self._wrap(types, name, declaration.annotation.annotation, missing.pop(name))
            if wrapped is not None:
                assert isinstance(statement, cst.SimpleStatementLine)
                body[k] = statement.with_changes(body=[declaration.with_changes(annotation=cst.Annotation(wrapped))])
        if not missing:
            return body
        at = 1 if body and _is_docstring(body[0]) else 0
        after_docstring = at == 1
        while at < len(body) and _declaration(body[at]) is not None:
            at, after_docstring = at + 1, False
        added: list[cst.BaseStatement] = []
        if self.spelling.parameter_import is not None:
            self.imports.add(self.spelling.parameter_import)
        for name, t in missing.items():
            annotation = self._wrap(types, name, cst.parse_expression(self.spelling.parameter), t)
            assert annotation is not None
            line = cst.SimpleStatementLine([cst.AnnAssign(cst.Name(name), cst.Annotation(annotation), value=None)])
            added.append(line.with_changes(leading_lines=[cst.EmptyLine(indent=False)]) if after_docstring and not added
                         else line)
        rest = body[at:]
        first = rest[0] if rest else None
        if isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and not first.leading_lines:
            rest[0] = first.with_changes(leading_lines=[cst.EmptyLine(indent=False)])  # declarations, a blank line
        return body[:at] + added + rest

    # -- helpers -------------------------------------------------------------------

    def _code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def _note(self, types: ClassTypes, position: str, message: str) -> None:
        self.notes.append(Note(types.file, types.qualname, position, message))


_Put = Callable[[cst.BaseExpression], cst.BaseExpression]  # puts a new annotation where an old one was


def _optional(annotation: cst.BaseExpression) -> tuple[cst.BaseExpression, _Put] | None:
    """The ``X`` of ``Optional[X]``, ``X | None`` or ``None | X``, and how to put another in its place; ``None``: not
    one of those.

    The SPMD type goes on ``X``: ``Annotated[Optional[Tensor], ...]`` is no tensor type, and the plugin rejects it.
    """
    if isinstance(annotation, cst.Subscript) and _last_name(annotation.value) == "Optional" \
            and len(annotation.slice) == 1 and isinstance(annotation.slice[0].slice, cst.Index):
        element = annotation.slice[0]
        index = element.slice
        assert isinstance(index, cst.Index)
        return index.value, lambda new: annotation.with_changes(
            slice=[element.with_changes(slice=index.with_changes(value=new))])
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        if _is_none(annotation.right):
            return annotation.left, lambda new: annotation.with_changes(left=new)
        if _is_none(annotation.left):
            return annotation.right, lambda new: annotation.with_changes(right=new)
    return None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _declaration(statement: cst.BaseStatement) -> tuple[str, cst.AnnAssign] | None:
    """The name and the ``name: type`` declaration (without a value) that ``statement`` is, if it is one."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.AnnAssign) and small.value is None and isinstance(small.target, cst.Name):
            return small.target.value, small
    return None


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.SimpleString))


@dataclass(frozen=True)
class Rewrite:
    """One source file: its text before and after, and what was not written there."""

    path: str
    before: str
    after: str
    notes: tuple[Note, ...]

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change (empty when nothing changed)."""
        name = os.path.relpath(self.path) if os.path.isabs(self.path) else self.path
        return "".join(difflib.unified_diff(self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
                                            f"a/{name}", f"b/{name}"))


def annotate_source(source: str, classes: Iterable[ClassTypes], path: str = "<source>") -> Rewrite:
    """``source`` with the observed ``classes`` (those of this file) annotated; see the module documentation."""
    wanted = {c.qualname: c for c in classes}
    module = cst.parse_module(source)
    annotator = _Annotator(module, wanted, _spelling(module))
    annotated = module.visit(annotator)
    notes = list(annotator.notes)
    notes += [Note(c.file, c.qualname, "class", "not found in the source: not annotated")
              for name, c in wanted.items() if name not in annotator.found]
    if annotated.deep_equals(module):
        return Rewrite(path, source, source, tuple(notes))
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, "typing", "Annotated")
    for name in sorted(annotator.used):
        AddImportsVisitor.add_needed_import(context, "spmd_types", name)
    for module_name, name in sorted(annotator.imports):
        AddImportsVisitor.add_needed_import(context, module_name, name)
    annotated = AddImportsVisitor(context).transform_module(annotated)
    return Rewrite(path, source, annotated.code, tuple(notes))


def write_annotations(observation: Observation, *, root: str | os.PathLike[str] = ".",
                      dry_run: bool = False) -> list[Rewrite]:
    """Annotate every observed file under ``root`` (files elsewhere, such as installed packages, are left alone).

    Returns one :class:`Rewrite` per file; with ``dry_run`` nothing is
    written (each rewrite's :meth:`~Rewrite.diff` shows what would be).
    """
    base = Path(root).resolve()
    rewrites = []
    for file in observation.files():
        path = Path(file).resolve()
        if not path.is_relative_to(base):
            continue
        source = path.read_text(encoding="utf-8")
        rewrite = annotate_source(source, [c for c in observation.classes if c.file == file], str(path))
        if rewrite.changed and not dry_run:
            path.write_text(rewrite.after, encoding="utf-8")
        rewrites.append(rewrite)
    return rewrites
