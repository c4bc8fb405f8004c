"""The codemod: calls of Megatron's mapping functions rewritten into the ``spmd_types`` calls they are.

``copy_to_tensor_model_parallel_region(x, group=self.tp_group)`` becomes
``reinterpret(x, self.tp_group, src=I, dst=R)``: the call the rule core's
ecosystem table says computes the same forward and backward (see
:mod:`spmd_types.codemods.library_calls` for when a call qualifies).  The
group becomes the axis argument as it is; one that is left out or ``None``
becomes a call of the library's getter of its default group
(``get_tensor_model_parallel_group()``), which is what the library calls.

Only the call is replaced: its argument list keeps its layout, line breaks
and comments, and the rest of the file is untouched.  The names the new
calls need are imported (:class:`~spmd_types.codemods.names.Namer`), and an
import of a rewritten function that nothing uses any more is removed (libcst's
``RemoveImportsVisitor``, which keeps names that ``__all__`` exports).  A
rewritten file contains no call of the table's functions, so a second run
changes nothing.

Calls that are recognised but left as they are, and references to the
functions that are not calls, are returned as :class:`Finding` objects with
the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.metadata import PositionProvider, QualifiedNameProvider, Scope, ScopeProvider

from spmd_types.codemods.layout import comments, laid_out
from spmd_types.codemods.library_calls import Entry, Plan, lookup, plan
from spmd_types.codemods.names import Namer, package_of, resolve
from spmd_types.typesystem import Endpoint, type_arg

__all__ = ["Finding", "Migration", "migrate_source"]

_RUNTIME = "spmd_types"


@dataclass(frozen=True)
class Finding:
    """A use of a library function at ``line``: rewritten into ``became``, or left as it was for ``reason``."""

    line: int
    function: str
    became: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Migration:
    """A module's source after the rewrite, with what was rewritten and what was left, by line."""

    code: str
    rewritten: tuple[Finding, ...]
    left: tuple[Finding, ...]


def migrate_source(source: str, path: PurePath | None = None) -> Migration:
    """Rewrite the calls of library functions in ``source``, the text of the file at ``path``.

    ``path`` (it need not exist) places the file in its package, which
    relative imports need; without it they are not followed.  Raises
    :class:`libcst.ParserSyntaxError` when ``source`` is not valid Python.
    """
    package = package_of(path) if path is not None else ()
    context = CodemodContext(filename=str(path) if path is not None else None,
                             full_package_name=".".join(package) or None)
    command = _Migrate(context, package)
    code = command.transform_module(cst.parse_module(source)).code
    findings = sorted(command.findings, key=lambda f: f.line)
    return Migration(code, tuple(f for f in findings if f.reason is None),
                     tuple(f for f in findings if f.reason is not None))


class _Migrate(VisitorBasedCodemodCommand):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider, ScopeProvider)

    def __init__(self, context: CodemodContext, package: tuple[str, ...]) -> None:
        super().__init__(context)
        self.findings: list[Finding] = []
        self._package = package
        self._callees: set[int] = set()
        self._namer: Namer | None = None

    def visit_Module(self, node: cst.Module) -> None:
        scopes = {scope for scope in self.metadata[ScopeProvider].values() if isinstance(scope, Scope)}
        self._namer = Namer(node, scopes, self.context)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self._callees.add(id(node.func))

    def visit_Name(self, node: cst.Name) -> bool:
        return self._visit_reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self._visit_reference(node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        entry = self._entry(original_node.func)
        if entry is None:
            return updated_node
        line = self._line(original_node)
        planned = plan(entry, original_node)
        outcome = self._replacement(planned, updated_node) if isinstance(planned, Plan) else planned
        if isinstance(outcome, str):
            self.findings.append(Finding(line, entry.name, reason=outcome))
            return updated_node
        new, became = outcome
        RemoveImportsVisitor.remove_unused_import_by_node(self.context, original_node.func)
        self.findings.append(Finding(line, entry.name, became=became))
        return new

    def _visit_reference(self, node: cst.Name | cst.Attribute) -> bool:
        """A library function named other than as the function of a call: reported; not looked into."""
        if id(node) in self._callees:
            return True
        entry = self._entry(node)
        if entry is None:
            return True
        self.findings.append(Finding(self._line(node), entry.name,
                                     reason="it is used as a value, not called, so there is no call to rewrite"))
        return False

    def _entry(self, node: cst.CSTNode) -> Entry | None:
        for qualified in self.get_metadata(QualifiedNameProvider, node, set()):
            resolved = resolve(qualified.name, self._package)
            entry = lookup(resolved) if resolved is not None else None
            if entry is not None:
                return entry
        return None

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def _replacement(self, plan: Plan, call: cst.Call) -> tuple[cst.Call, str] | str:
        """The new call, and what it is; or why it cannot be written."""
        equivalent = plan.equivalent
        tensor = call.args[plan.tensor].value
        if equivalent.reshapes_to_2d:
            tensor = _flattened(tensor)
        # The default group's getter is called once the module's names for it are known.
        axis = call.args[plan.group].value if isinstance(plan.group, int) else _PLACEHOLDER
        draft = _new_arguments(call, plan, tensor, axis, _PLACEHOLDER, _PLACEHOLDER)
        if comments(draft) < comments(call.args):
            return "a comment among its arguments would have no place in the new call"
        markers = sorted({name for t in (equivalent.src, plan.dst) for name in _marker_names(t)})
        needed = [f"{_RUNTIME}.{equivalent.call}", *(f"{_RUNTIME}.{m}" for m in markers)]
        if isinstance(plan.group, str):
            needed.append(plan.group)
        assert self._namer is not None  # set by visit_Module
        spelled = self._namer.spell(needed)
        if spelled is None:
            return f"every way of naming {needed[0]} here would shadow a name the file uses"
        names = dict(zip(needed, spelled))
        if isinstance(plan.group, str):
            axis = cst.Call(func=names[plan.group])
        src, dst = (_endpoint(t, names) for t in (equivalent.src, plan.dst))
        args = _new_arguments(call, plan, tensor, axis, src, dst)
        return call.with_changes(func=names[needed[0]], args=args), equivalent.spelled(plan.dst)


_PLACEHOLDER = cst.Name("_")
_TIGHT = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def _new_arguments(call: cst.Call, plan: Plan, tensor: cst.BaseExpression, axis: cst.BaseExpression,
                   src: cst.BaseExpression, dst: cst.BaseExpression) -> list[cst.Arg]:
    """``(tensor, axis, src=src, dst=dst)`` in the layout of ``call``'s arguments."""
    return laid_out(call.args, [
        (cst.Arg(tensor), plan.tensor),
        (cst.Arg(axis), plan.group if isinstance(plan.group, int) else None),
        (cst.Arg(src, keyword=cst.Name("src"), equal=_TIGHT), None),
        (cst.Arg(dst, keyword=cst.Name("dst"), equal=_TIGHT), None),
    ])


def _flattened(tensor: cst.BaseExpression) -> cst.Call:
    """``tensor.flatten(0, -2)``, parenthesised where needed."""
    if not isinstance(tensor, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not tensor.lpar:
        tensor = tensor.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    args = [cst.Arg(cst.Integer("0"), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(cst.UnaryOperation(cst.Minus(), cst.Integer("2")))]
    return cst.Call(cst.Attribute(tensor, cst.Name("flatten")), args)


def _marker_names(t: Endpoint) -> list[str]:
    """The ``spmd_types`` names the core's spelling of ``t`` uses: ``S`` for ``S(0)``."""
    names: list[str] = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.append(node.value)

    cst.parse_expression(type_arg(t)).visit(Collect())
    return names


def _endpoint(t: Endpoint, names: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """The core's spelling of ``t`` (``S(0)``) with its marker named as the module can reach it."""

    class Qualify(cst.CSTTransformer):
        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
            return names[f"{_RUNTIME}.{original_node.value}"]

    expression = cst.parse_expression(type_arg(t)).visit(Qualify())
    assert isinstance(expression, cst.BaseExpression)
    return expression
