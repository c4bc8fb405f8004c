"""Every mypy API the plugin uses beyond the documented plugin interface.

mypy's plugin API (``mypy.plugin``) covers hooks, contexts and reporting.  A
few things the plugin needs are internal to mypy: the declared return type of
the function being checked, name lookup inside type analysis, the per-instance
side channel that carries the SPMD type across the cache, binding ``self``,
and the wording of mypy's own errors, which the plugin's error filters read
(:func:`read_mismatch`, tested on what mypy prints in
``tests/plugin/test_mypy_messages.py``).  They live here, each behind a small function with a fallback, so that a mypy
release that moves them breaks one module and degrades to "unknown" instead
of crashing.  Supported: mypy 2.0 to 2.4 (tested on the oldest and newest).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from mypy import subtypes
from mypy.checker import TypeChecker
from mypy.errorcodes import ErrorCode
from mypy.errors import ErrorInfo, Errors, ErrorWatcher
from mypy.expandtype import expand_type, expand_type_by_instance
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import (
    FUNC_NO_INFO,
    AssignmentStmt,
    Block,
    CallExpr,
    ClassDef,
    ComparisonExpr,
    ConditionalExpr,
    Context,
    Decorator,
    DictExpr,
    Expression,
    ExpressionStmt,
    FuncDef,
    FuncItem,
    IfStmt,
    IndexExpr,
    IntExpr,
    ListExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    Node,
    OperatorAssignmentStmt,
    OverloadedFuncDef,
    RaiseStmt,
    RefExpr,
    ReturnStmt,
    SetExpr,
    Statement,
    SymbolTableNode,
    TempNode,
    TupleExpr,
    TypeInfo,
    Var,
    WithStmt,
)
from mypy.options import Options
from mypy.plugin import CheckerPluginInterface, TypeAnalyzerPluginInterface
from mypy.typeanal import TypeAnalyser
from mypy.typeops import bind_self, make_simplified_union
from mypy.types import (
    AnyType,
    CallableType,
    ExtraAttrs,
    FunctionLike,
    Instance,
    LiteralType,
    Type,
    TypeOfAny,
    TypeVarId,
    TypeVarType,
)

from spmd_mypy.fullnames import AUTOGRAD_FUNCTION, NO_GRAD
from spmd_types.typesystem import bounded_put

__all__ = [
    "Mismatch",
    "Scope",
    "analyze_base",
    "analyzed_file",
    "analyzed_module",
    "assigned_in_checked_function",
    "attribute_assignments",
    "bind_method",
    "buffers_written_in_place",
    "called_decorator_spans",
    "check_with_types",
    "checked_file",
    "declared_return_type",
    "decorated_returns",
    "expression_type",
    "file_scopes",
    "filter_mismatches",
    "final_str_value",
    "inferred_assignments",
    "is_declaration",
    "is_subtype",
    "lookup_type_info",
    "lookup_type_name",
    "name_assignments",
    "note",
    "past_speculation",
    "printed_axis_group",
    "printed_spmd",
    "read_mismatch",
    "read_orders",
    "read_side_channel",
    "replace_type_variables",
    "returned_values",
    "side_channel",
    "simplified_union",
    "size_one_spans",
    "statements_in",
    "subexpressions",
    "with_side_channel",
    "without_autograd_spans",
]

# Attribute names under which an SPMD-typed Instance carries its full type text,
# and whether it is a declaration (from an annotation) rather than a computed value.
_SIDE_CHANNEL: Final = "__spmd_type__"
_DECLARED: Final = "__spmd_declared__"
_RANK: Final = "__spmd_rank__"
_ORDERS: Final = "__spmd_orders__"


# The module and name of each class asked for (the few of fullnames.py, all the time): kept, with their hashes.
_SPLIT_NAMES: Final[dict[str, tuple[str, str]]] = {}
_SPLIT_NAMES_MAX: Final = 256


def lookup_type_info(modules: dict[str, MypyFile] | None, fullname: str) -> TypeInfo | None:
    """The class ``fullname`` if its module is loaded, else ``None``.

    ``Plugin.lookup_fully_qualified`` asserts when a module is missing, and
    ``named_generic_type`` crashes on a submodule that was never imported as an
    attribute; this walks the loaded modules and never raises.
    """
    if not modules:
        return None
    split = _SPLIT_NAMES.get(fullname)
    if split is None:
        module, _, name = fullname.rpartition(".")
        split = bounded_put(_SPLIT_NAMES, fullname, (module, name), _SPLIT_NAMES_MAX)
    module, name = split
    tree = modules.get(module)
    symbol = tree.names.get(name) if tree is not None else None
    node = symbol.node if symbol is not None else None
    return node if isinstance(node, TypeInfo) else None


def lookup_type_name(api: TypeAnalyzerPluginInterface, name: str, context: Context) -> str | None:
    """The full name of ``name`` as written in an annotation (``R``, ``spmd.R``).

    Called as a method with positional arguments: from compiled code that is
    the cheap call (no bound method, no keyword parsing); an ``api`` without
    the method fails like any failed lookup.
    """
    try:
        symbol: SymbolTableNode | None = cast(Any, api).lookup_qualified(name, context, True)  # suppress_errors
    except Exception:  # a failed lookup means "not one of ours"
        return None
    node = symbol.node if symbol is not None else None
    return node.fullname if node is not None else None


def analyze_base(api: TypeAnalyzerPluginInterface, typ: Type) -> Type:
    """Analyze the first argument of ``Annotated`` as mypy does.

    mypy passes its TypedDict flag through, so that ``Annotated[Required[int], ...]``
    stays valid inside a TypedDict; the public ``analyze_type`` does not.  The
    flag is passed only when set (it is the default otherwise): a call without
    keywords is the cheaper one.
    """
    if isinstance(api, TypeAnalyser):
        if api.allow_typed_dict_special_forms:
            return api.anal_type(typ, allow_typed_dict_special_forms=True)
        return api.anal_type(typ)
    return api.analyze_type(typ)


def analyzed_module(api: TypeAnalyzerPluginInterface) -> str | None:
    """The name of the module whose annotations are being analyzed, if mypy says."""
    name = getattr(getattr(api, "api", None), "cur_mod_id", None)
    return name if isinstance(name, str) else None


def analyzed_file(api: TypeAnalyzerPluginInterface) -> MypyFile | None:
    """The parsed module whose annotations are being analyzed, if mypy says."""
    tree = getattr(getattr(api, "api", None), "cur_mod_node", None)
    return tree if isinstance(tree, MypyFile) else None


def releases_checked_trees(options: Options) -> bool:
    """Whether mypy lets go of each module's parse tree once it has checked it.

    A batch run does: ``State.finish_passes`` empties the statement lists of the
    tree in place (``mypy.freetree``), its ``defs`` among them.  The daemon keeps
    every tree to check it again, and so does a run with ``preserve_asts``.
    """
    return not (options.fine_grained_incremental or options.preserve_asts)


def checked_file(api: CheckerPluginInterface) -> MypyFile | None:
    """The module the checker is checking (to read its imports)."""
    tree = getattr(api, "tree", None)
    return tree if isinstance(tree, MypyFile) else None


class Scope:
    """The module's top level or one function, with the statements that are its own.

    ``first`` and ``last`` are the lines it spans (the module's top level: every
    line), ``body`` its statements as written, ``function`` the function
    (``None``: the module), and ``statements`` every statement in it, nested ones
    and their blocks included, but not those of the functions in it, which are
    scopes of their own.  The statements that facts are read from are also
    sorted by class as the walk meets them (``assignments``, ``returns``, ...),
    each list in the order of ``statements``: a fact reads only the statements
    it is about, instead of testing the class of every statement again.

    A plain class, not a dataclass, whose ``__init__`` would run as Python even in
    the compiled build (one per function of every file checked).
    """

    def __init__(self, first: int, last: int, body: list[Statement], function: FuncDef | None) -> None:
        self.first = first
        self.last = last
        self.body = body
        self.function = function
        self.statements: list[Node] = []
        self.assignments: list[AssignmentStmt] = []
        self.operator_assignments: list[OperatorAssignmentStmt] = []
        self.expression_statements: list[ExpressionStmt] = []
        self.returns: list[ReturnStmt] = []
        self.withs: list[WithStmt] = []
        self.decorators: list[Decorator] = []
        self.classes: list[ClassDef] = []
        self.blocks: list[Block] = []
        # The lists above in the order of _SORTED, indexed by the number the walk gives each statement's class.
        self.sorted: tuple[list[Any], ...] = (
            self.assignments, self.blocks, self.expression_statements, self.returns, self.operator_assignments,
            self.withs, self.decorators, self.classes)


def file_scopes(tree: MypyFile) -> list[Scope]:
    """The scopes of the file: its top level first, then every function (methods and nested functions too).

    This is the one walk of the file's statements: every fact below is read
    from its result.  The walk is depth first, each list of statements from
    its last; a function's scope comes where the walk meets the function, and
    ``statements`` keep the order the walk meets them (so, within one line,
    a later assignment comes first).
    """
    module = Scope(0, 1 << 30, tree.defs, None)
    scopes = [module]
    _collect(tree.defs, module, scopes)
    return scopes


def _collect(nodes: Sequence[Node], scope: Scope, scopes: list[Scope]) -> None:
    """Add ``nodes`` and the statements nested in them to ``scope``, and each function among them to
    ``scopes``, as a scope of its own holding its body."""
    for node in reversed(nodes):
        kind, names = _kind_of(type(node))
        if kind == _FUNCTION:
            function = cast(FuncDef, node)
            inner = Scope(function.line, function.end_line or function.line, function.body.body, function)
            scopes.append(inner)
            _collect(function.body.body, inner, scopes)
            continue
        scope.statements.append(node)
        if kind < _FUNCTION:  # one of the classes the walk sorts
            scope.sorted[kind].append(node)
        if names:
            _collect(_children(node, names), scope, scopes)


def inferred_assignments(scopes: list[Scope], parameters: bool) -> set[Expression]:
    """The right-hand sides assigned, without an annotation, to variables whose type mypy infers.

    ``a = make()`` gives ``a`` the type ``make`` declares for its result; the
    next ``a = ...`` is then checked against that type, though nobody declared
    it for ``a``.  With ``parameters`` (mypy's ``allow_redefinition``, under
    which a parameter may be re-bound to a value of another type), assignments
    to the parameters of their function count too.
    """
    found: set[Expression] = set()
    for scope in scopes:
        # Compared by name: the daemon may replace a function's argument variables without its body's
        # references to them.
        names = frozenset(argument.variable.name for argument in scope.function.arguments) \
            if parameters and scope.function is not None else frozenset()
        for node in scope.assignments:
            if node.type is None and all(_names_inferred(target, names) for target in node.lvalues):
                found.add(node.rvalue)
                if isinstance(node.rvalue, (TupleExpr, ListExpr)):  # a, b = x, y: each value goes to a name
                    found.update(node.rvalue.items)
    return found


def _names_inferred(target: Expression, parameters: frozenset[str]) -> bool:
    """Whether assignment target ``target`` names only variables whose type mypy infers, or ``parameters``
    (``a``, and ``a, b`` of a tuple unpacking)."""
    if isinstance(target, NameExpr):  # the common case first
        return isinstance(target.node, Var) and (target.node.is_inferred or target.name in parameters)
    if isinstance(target, (TupleExpr, ListExpr)):
        return all(_names_inferred(item, parameters) for item in target.items)
    return False


# The methods of a custom autograd Function, which run without recording a graph.
_FUNCTION_METHODS: Final = frozenset({"forward", "backward", "setup_context", "jvp", "vjp"})


def without_autograd_spans(tree: MypyFile, scopes: list[Scope]) -> list[tuple[int, int]]:
    """The line spans where no autograd runs: ``with torch.no_grad():`` bodies, functions decorated
    with it, the methods of custom ``torch.autograd.Function`` classes, and the functions of the file
    called only from there (:func:`_helpers_without_autograd`).  ``scopes`` are the file's (:func:`file_scopes`)."""
    spans: list[tuple[int, int]] = []
    for scope in scopes:
        for with_node in scope.withs:
            if any(_is_no_grad(expr) for expr in with_node.expr):
                spans.append((with_node.body.line, with_node.body.end_line or with_node.body.line))
        for decorated in scope.decorators:
            if any(_is_no_grad(expr) for expr in decorated.decorators):
                spans.append((decorated.func.line, decorated.func.end_line or decorated.func.line))
        for node in scope.classes:
            if node.info.has_base(AUTOGRAD_FUNCTION):
                for method in node.defs.body:
                    function = method.func if isinstance(method, Decorator) else method
                    if isinstance(function, FuncDef) and function.name in _FUNCTION_METHODS:
                        spans.append((function.line, function.end_line or function.line))
    return _helpers_without_autograd(tree, scopes, spans) if spans else spans


def _helpers_without_autograd(tree: MypyFile, scopes: list[Scope],
                              spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans``, and the spans of the functions of the file that run only inside them.

    Megatron's ``_VocabParallelCrossEntropy.forward`` calls static helpers of
    another class (``VocabParallelCrossEntropy.calculate_cross_entropy_loss``),
    which run without autograd too.  A function qualifies when every use of its
    name in the file is a call made inside a span (found so far: helpers of
    helpers count), and there is one; matching is by name, so a name used any
    other way (a variable, a function passed as a value) keeps its functions
    out.  ``forward`` and dunder methods, which modules and operators call
    without naming them, never qualify.  Calls from other files are not seen.
    """
    functions: dict[str, list[FuncDef]] = {}
    for scope in scopes:
        function = scope.function
        if function is not None and function.name != "forward" and not function.name.startswith("__"):
            functions.setdefault(function.name, []).append(function)
    expressions = subexpressions(tree)
    callees = {id(expr.callee) for expr in expressions if isinstance(expr, CallExpr)}
    uses: dict[str, list[tuple[int, bool]]] = {}
    for expr in expressions:
        if isinstance(expr, (NameExpr, MemberExpr)) and expr.name in functions:
            uses.setdefault(expr.name, []).append((expr.line, id(expr) in callees))
    found = list(spans)
    while qualified := [name for name in functions if uses.get(name) and all(
            called and any(first <= line <= last for first, last in found) for line, called in uses[name])]:
        for name in qualified:
            found += [(f.line, f.end_line or f.line) for f in functions.pop(name)]
    return found


def decorated_spans(scopes: list[Scope], decorators: frozenset[str]) -> list[tuple[int, int]]:
    """The line spans of the functions (and methods) decorated with one of ``decorators`` (full names)."""
    return [(node.func.line, node.func.end_line or node.func.line) for scope in scopes for node in scope.decorators
            if any(isinstance(expr, RefExpr) and expr.fullname in decorators for expr in node.decorators)]


def called_decorator_spans(scopes: list[Scope], decorators: frozenset[str]) -> list[tuple[int, int, CallExpr]]:
    """The line spans of the functions decorated with a call of one of ``decorators`` (full names), each with
    that call (``@local_region("tp", ...)``)."""
    return [(node.func.line, node.func.end_line or node.func.line, expr)
            for scope in scopes for node in scope.decorators for expr in node.decorators
            if isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname in decorators]


def buffers_written_in_place(scopes: list[Scope]) -> set[Expression]:
    """The values first assigned to a variable that its function then writes in place.

    ``buf = torch.zeros(n)`` followed by ``buf[i] = c``, ``buf.add_(x)``, ``buf += x``,
    ``buf.copy_(y)`` or ``torch.cumsum(x, 0, out=buf)``: what ``buf`` holds
    later is not the constant it started as, and mypy keeps one type for the
    variable whatever is written into it.
    """
    found: set[Expression] = set()
    for scope in scopes:
        written = _written_names(scope)
        if not written:
            continue
        for node in scope.assignments:
            if node.type is None and len(node.lvalues) == 1:
                target = node.lvalues[0]
                if isinstance(target, NameExpr) and target.name in written and isinstance(node.rvalue, CallExpr):
                    found.add(node.rvalue)
    return found


Assignment = tuple[int, int, int, Expression]
"""A value assigned to a name: its line, the first and last line of its function, the value."""


def name_assignments(scopes: list[Scope]) -> dict[str, list[Assignment]]:
    """Every ``name = value`` of the file, by name, in the order of its scopes and their statements.

    ``b, t, d = x.shape`` (or ``x.size()``) counts as ``t = x.shape[1]``, and
    so on: the lengths a program most often reads.
    """
    found: dict[str, list[Assignment]] = {}
    for scope in scopes:
        first, last = scope.first, scope.last
        for node in scope.assignments:
            if len(node.lvalues) != 1:
                continue
            target = node.lvalues[0]
            if isinstance(target, NameExpr):
                found.setdefault(target.name, []).append((node.line, first, last, node.rvalue))
            elif isinstance(target, TupleExpr) and _is_shape(node.rvalue):
                for k, item in enumerate(target.items):
                    if not isinstance(item, NameExpr):
                        break  # b, *rest = x.shape: the positions after a star are not known
                    element = IndexExpr(node.rvalue, IntExpr(k))
                    element.set_line(item)
                    found.setdefault(item.name, []).append((node.line, first, last, element))
    return found


def attribute_assignments(scopes: list[Scope]) -> dict[str, list[tuple[int, int, Expression]]]:
    """Every ``self.name = value`` in a method of a class of the file, by name, with the class's lines."""
    found: dict[str, list[tuple[int, int, Expression]]] = {}
    methods = {scope.function: scope for scope in scopes if scope.function is not None and scope.function.arguments}
    for scope in scopes:
        for node in scope.classes:
            first, last = node.line, node.end_line or node.line
            for item in node.defs.body:
                function = item.func if isinstance(item, Decorator) else item
                if not isinstance(function, FuncDef) or function not in methods:
                    continue
                receiver = function.arguments[0].variable.name
                for statement in methods[function].assignments:
                    for target in statement.lvalues:
                        if (isinstance(target, MemberExpr) and isinstance(target.expr, NameExpr)
                                and target.expr.name == receiver):
                            found.setdefault(target.name, []).append((first, last, statement.rvalue))
    return found


def _is_shape(expr: Expression) -> bool:
    """Whether ``expr`` is ``t.shape`` or ``t.size()``."""
    if isinstance(expr, CallExpr) and not expr.args:
        return isinstance(expr.callee, MemberExpr) and expr.callee.name == "size"
    return isinstance(expr, MemberExpr) and expr.name == "shape"


def assigned_in_checked_function(api: CheckerPluginInterface, name: str) -> list[Expression]:
    """Every value ``name = value`` assigns in the function being checked (not in functions inside it).

    Read from the copy of the function that mypy is checking (it checks a
    function once per value of its restricted type variables, each time on a
    new copy, and a plain function on itself): the type map has types for its
    values only.
    """
    function = _checked_function(api)
    if not isinstance(function, FuncItem):
        return []
    if function.expanded:  # the copy being checked is the last one made
        function = function.expanded[-1]
    return [node.rvalue for node in _scope_statements(function.body.body)
            if isinstance(node, AssignmentStmt) and len(node.lvalues) == 1
            and isinstance(node.lvalues[0], NameExpr) and node.lvalues[0].name == name]


def _scope_statements(body: list[Statement]) -> Iterator[Node]:
    """The statements of one function body (or the module's top level), not those of functions in it."""
    pending: list[Node] = list(body)
    while pending:
        node = pending.pop()
        if not isinstance(node, FuncDef):  # a function is a scope of its own
            yield node
            pending.extend(_nested_statements(node))


def _written_names(scope: Scope) -> set[str]:
    """The variables that the statements of ``scope`` write in place (not counting a re-binding)."""
    written: set[str] = set()
    for assignment in scope.assignments:
        for target in assignment.lvalues:
            if isinstance(target, NameExpr):
                continue  # a re-binding, the common case
            while isinstance(target, (IndexExpr, MemberExpr)):  # buf[i] = c, buf[i][j] = c, buf.data = c
                target = target.base if isinstance(target, IndexExpr) else target.expr
                if isinstance(target, NameExpr):
                    written.add(target.name)
    for operator in scope.operator_assignments:
        if isinstance(operator.lvalue, NameExpr):
            written.add(operator.lvalue.name)  # buf += x
    for statement in scope.expression_statements:
        call = statement.expr
        if not isinstance(call, CallExpr):
            continue
        callee = call.callee
        if (isinstance(callee, MemberExpr) and isinstance(callee.expr, NameExpr) and callee.name.endswith("_")
                and not callee.name.startswith("__")):
            written.add(callee.expr.name)  # buf.add_(x), buf.fill_(c), buf.copy_(y), buf.index_add_(...)
        for name, arg in zip(call.arg_names, call.args):
            if name == "out" and isinstance(arg, NameExpr):
                written.add(arg.name)
    return written


def returned_values(scopes: list[Scope]) -> set[Expression]:
    """The expressions of the file's ``return`` statements, and the branches of a returned ``a if c else b``.

    When a returned value does not fit the declared result, mypy checks it
    again without the declared type as context and keeps that result if it
    reports nothing (``infer_context_dependent``); a hook that knows the
    expression is returned can still check it then.
    """
    pending = [node.expr for scope in scopes for node in scope.returns if node.expr is not None]
    returned: set[Expression] = set()
    while pending:
        value = pending.pop()
        returned.add(value)
        if isinstance(value, ConditionalExpr):  # return a if flag else b: either branch is returned
            pending += (value.if_expr, value.else_expr)
    return returned


def statements_in(node: Node) -> Iterator[Node]:
    """Every statement in ``node`` (a module or a function), nested ones included, in no particular order."""
    pending: list[Node] = list(node.defs) if isinstance(node, MypyFile) else list(_nested_statements(node))
    while pending:
        node = pending.pop()
        yield node
        pending.extend(_nested_statements(node))


def decorated_returns(context: Context) -> list[ReturnStmt]:
    """The ``return`` statements of the function that the decorator call ``context`` applies to.

    mypy checks a decorated function's body before its decorators, so the
    types of the returned values are known by then.  Returns of nested
    functions and classes are theirs, not the function's.  ``[]`` where
    ``context`` is no decorator.
    """
    if not isinstance(context, Decorator):
        return []
    found: list[ReturnStmt] = []
    pending: list[Node] = [context.func.body]
    while pending:
        node = pending.pop()
        if isinstance(node, ReturnStmt):
            found.append(node)
        elif not isinstance(node, (FuncDef, Decorator, ClassDef, OverloadedFuncDef)):
            pending.extend(_nested_statements(node))
    return found


def subexpressions(node: Node) -> list[Expression]:
    """Every expression in ``node`` (a function: its body, nested functions included)."""
    from mypy.server.subexpr import get_subexpressions

    return get_subexpressions(node)


class TypedRun:
    """What one mypy run found: its output lines and exit status, the trees of the files it was given and the
    type of every expression in them.

    A plain class: a dataclass costs an ``exec`` of each generated method when this module is imported, which
    every checking run does."""

    def __init__(self, output: list[str], status: int, trees: dict[str, MypyFile], types: dict[Expression, Type]
                 ) -> None:
        self.output = output
        self.status = status
        self.trees = trees
        self.types = types


def check_with_types(args: list[str]) -> TypedRun:
    """Run mypy on ``args`` as ``mypy.api.run`` would, keeping the checked trees and their expression types.

    The files given are always checked again (they are passed as source text,
    which mypy does not look up in its cache): mypy keeps expression types only
    for the modules it checks.  Everything they import comes from the cache as
    usual.  Trees are by file path.
    """
    from mypy import build
    from mypy.errors import CompileError
    from mypy.main import process_options
    from mypy.modulefinder import BuildSource

    sources, options = process_options(args)
    options.export_types = True
    options.preserve_asts = True
    sources = [BuildSource(s.path, s.module, Path(s.path).read_text(encoding="utf-8") if s.path else s.text,
                           s.base_dir) for s in sources]
    try:
        result = build.build(sources, options)
    except CompileError as error:
        return TypedRun(list(error.messages), 2, {}, {})
    trees = {s.path: result.files[s.module] for s in sources if s.path and s.module in result.files}
    failed = any(": error: " in line for line in result.errors)
    return TypedRun(result.errors, 1 if failed else 0, trees, result.types)


def _is_no_grad(expr: Expression) -> bool:
    callee = expr.callee if isinstance(expr, CallExpr) else expr
    return isinstance(callee, RefExpr) and callee.fullname in NO_GRAD


# Where statements hold other statements (mypy's compiled traversers cannot be
# subclassed by a plugin, so the walk is by attribute): function and class
# bodies, branches, loops, with, try, match, decorators and overloads.
_NESTED: Final = ("defs", "body", "else_body", "finally_body", "handlers", "bodies", "func", "items", "impl")


# The classes of statement that the walk sorts into the lists of a Scope (Scope.sorted, in this order); a
# statement's number is its class's place here, _FUNCTION for a function (a scope of its own) and _OTHER for
# any other class.
_SORTED: Final = (AssignmentStmt, Block, ExpressionStmt, ReturnStmt, OperatorAssignmentStmt, WithStmt, Decorator,
                  ClassDef)
_FUNCTION: Final = len(_SORTED)
_OTHER: Final = _FUNCTION + 1


# Each class of node's number and which of the _NESTED attributes it has (none for expressions and simple
# statements): the walks visit every statement of every checked file, so both are found once per class.
_KINDS: Final[dict[type, tuple[int, tuple[str, ...]]]] = {}


def _kind_of(kind: type) -> tuple[int, tuple[str, ...]]:
    known = _KINDS.get(kind)
    if known is None:
        holds = issubclass(kind, Statement)
        number = _FUNCTION if issubclass(kind, FuncDef) else next(
            (k for k, sorted_kind in enumerate(_SORTED) if issubclass(kind, sorted_kind)), _OTHER)
        known = _KINDS[kind] = (number, tuple(name for name in _NESTED if holds and hasattr(kind, name)))
    return known


def _nested_statements(node: Node) -> list[Node]:
    return _children(node, _kind_of(type(node))[1])


def _children(node: Node, names: tuple[str, ...]) -> list[Node]:
    """The statements that ``node`` holds in its attributes ``names``."""
    found: list[Node] = []
    for name in names:
        child = getattr(node, name, None)
        if isinstance(child, list):
            found.extend(item for item in child if isinstance(item, Statement))
        elif isinstance(child, Statement):
            found.append(child)
    return found


SizeOfAxis = Callable[[Expression, dict[str, Expression]], str | None]
"""The axis whose number of ranks an expression is, given the values of the function's names; ``None``: not one."""


def size_one_spans(scopes: list[Scope], axis_of: SizeOfAxis, one_when: Callable[[str, int], bool | None]
                   ) -> list[tuple[int, int, str]]:
    """The lines guarded by a test that an axis has one rank, with the axis.

    A test is ``if SIZE <op> N:`` (or ``N <op> SIZE``), where ``axis_of``
    tells which axis ``SIZE`` counts (a call, or a name the same function
    assigns once from one) and ``one_when(op, N)`` which branch runs with one
    rank: ``if world_size == 1:`` guards its body, ``if group.size() > 1:``
    its ``else``.  When the other branch always leaves (``return``,
    ``raise``), the statements after the ``if`` are guarded too.
    """
    spans: list[tuple[int, int, str]] = []
    for scope in scopes:
        values: dict[str, Expression] = {}
        for assignment in scope.assignments:
            if len(assignment.lvalues) == 1 and isinstance(assignment.lvalues[0], NameExpr):
                name = assignment.lvalues[0].name
                values[name] = assignment.rvalue if name not in values else TempNode(AnyType(TypeOfAny.special_form))
        blocks = [scope.body, *(node.body for node in scope.blocks)]
        for statements in blocks:
            for index, node in enumerate(statements):
                guarded = _guarded_branches(node, values, axis_of, one_when) if isinstance(node, IfStmt) else None
                if guarded is None:
                    continue
                branch, other, axis = guarded
                if branch is not None and branch.body:
                    spans.append((branch.body[0].line, _last_line(branch.body), axis))
                rest = statements[index + 1:]
                if rest and other is not None and other.body and isinstance(other.body[-1], (ReturnStmt, RaiseStmt)):
                    spans.append((rest[0].line, _last_line(rest), axis))
    return spans


def _last_line(statements: list[Statement]) -> int:
    return max(s.end_line or s.line for s in statements)


def _guarded_branches(node: IfStmt, values: dict[str, Expression], axis_of: SizeOfAxis,
                      one_when: Callable[[str, int], bool | None]) -> tuple[Block | None, Block | None, str] | None:
    """The branch of ``node`` that runs with one rank, the other branch, and the axis; ``None``: no such test."""
    test = node.expr[0]
    if len(node.expr) != 1 or not isinstance(test, ComparisonExpr) or len(test.operators) != 1:
        return None
    (operator,), (left, right) = test.operators, test.operands
    if isinstance(left, IntExpr):  # 1 == size: the same test, read from the other side
        left, right, operator = right, left, _FLIPPED.get(operator, operator)
    if not isinstance(right, IntExpr) or (axis := axis_of(left, values)) is None:
        return None
    branch = one_when(operator, right.value)
    if branch is None:
        return None
    return (node.body[0], node.else_body, axis) if branch else (node.else_body, node.body[0], axis)


_FLIPPED: Final = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def _checked_function(api: CheckerPluginInterface) -> object:
    """The innermost function mypy is checking (a ``FuncItem``), if any."""
    scope = api.scope if isinstance(api, TypeChecker) else None
    innermost = getattr(scope, "current_function", None) or getattr(scope, "top_function", None)  # mypy < 2.2
    return innermost() if innermost is not None else None


def checks_a_value_of_a_type_variable(api: CheckerPluginInterface) -> bool:
    """Whether the method being checked is one of mypy's copies for a value of its class's type variable.

    mypy checks a method of a class generic in a type variable restricted to
    values (``TypeVar("Out", Whole, Sharded)``) once per value, on a copy
    with the variable replaced: a declared type seen there holds for that
    value only.  (A function's own restricted type variables are expanded the
    same way, but a copy cannot be told from the original then.)
    """
    function = _checked_function(api)
    if not isinstance(function, FuncItem) or function.info is FUNC_NO_INFO:
        return False
    return any(isinstance(v, TypeVarType) and bool(v.values) for v in function.info.defn.type_vars)


def declared_return_type(api: CheckerPluginInterface) -> Type | None:
    """The declared return type of the function being checked, if any."""
    if isinstance(api, TypeChecker) and api.return_types:
        return api.return_types[-1]
    return None


def final_str_value(expr: RefExpr) -> str | None:
    """The value of a name bound to a ``Final`` string (``TP: Final = "tp"``)."""
    node = expr.node
    if isinstance(node, Var) and node.is_final and isinstance(node.final_value, str):
        return node.final_value
    return None


def read_side_channel(instance: Instance) -> str | None:
    """The SPMD type text an Instance carries, if any.

    The side channel is ``Instance.extra_attrs``: mypy serializes it with the
    instance (incremental cache, daemon, parallel workers) and ignores it in
    subtyping and printing, which is exactly what information that must not
    change mypy's own checks needs.
    """
    text = _side_channel_value(instance, _SIDE_CHANNEL)
    return text if isinstance(text, str) else None


def side_channel(instance: Instance) -> ExtraAttrs | None:
    """The side channel itself where ``instance`` carries an SPMD type text in it; else ``None``.

    Everything the plugin reads from a side channel is in this object, and mypy
    never changes one in place (``Instance.copy_with_extra_attr`` copies it before
    adding an attribute), while its copies of the Instance (the binder's at each
    assignment, ``Instance.copy_modified``) share it: an answer about an
    SPMD-typed value can be remembered by the identity of this object.  "Carries a text" is
    :func:`read_side_channel`'s test, so that an object handed out here is one the reading takes its type from.
    """
    return instance.extra_attrs if read_side_channel(instance) is not None else None


def _side_channel_value(instance: Instance, key: str) -> object:
    """The value of the literal under ``key`` in ``instance``'s side channel; ``None`` if there is none.  Each
    attribute of mypy's objects is read once: from compiled code each read is a generic attribute lookup."""
    extra = instance.extra_attrs
    value = extra.attrs.get(key) if extra is not None else None
    return value.value if isinstance(value, LiteralType) else None


def with_side_channel(instance: Instance, text: str, str_type: Instance, declared: bool,
                      rank: int | None = None, orders: str = "") -> Instance:
    """``instance`` carrying ``text``, whether it is a declaration, the rank if known and the entry orders if
    any (as text), in its side channel."""
    attrs: dict[str, Type] = {_SIDE_CHANNEL: LiteralType(text, str_type)}
    if declared:
        attrs[_DECLARED] = LiteralType(True, str_type)
    if rank is not None:
        attrs[_RANK] = LiteralType(rank, str_type)
    if orders:
        attrs[_ORDERS] = LiteralType(orders, str_type)
    instance.extra_attrs = ExtraAttrs(attrs, set(), None)
    return instance


def read_rank(instance: Instance) -> int | None:
    """The rank an SPMD-typed Instance carries (a declaration by a ``PartitionSpec``), if any."""
    rank = _side_channel_value(instance, _RANK)
    return rank if isinstance(rank, int) else None


def read_orders(instance: Instance) -> str:
    """The entry orders an SPMD-typed Instance carries, as the text :func:`with_side_channel` was given; else ``""``."""
    orders = _side_channel_value(instance, _ORDERS)
    return orders if isinstance(orders, str) else ""


def is_declaration(instance: Instance) -> bool:
    """Whether an SPMD-typed Instance came from an annotation (see :func:`with_side_channel`)."""
    return instance.extra_attrs is not None and _DECLARED in instance.extra_attrs.attrs


def container_elements(expr: Expression, values: bool) -> ListExpr | None:
    """The elements of a list, tuple or set literal (``values=False``), or the values of a dict literal, as a list."""
    if values:
        return ListExpr([value for _, value in expr.items]) if isinstance(expr, DictExpr) else None
    return ListExpr(list(expr.items)) if isinstance(expr, (ListExpr, TupleExpr, SetExpr)) else None


def bind_method(method: FunctionLike, receiver: Instance, owner: TypeInfo | None = None) -> FunctionLike:
    """``method`` with its ``self`` parameter bound to ``receiver``.

    When ``owner``, the class that defines the method, is generic, its type
    variables are replaced by the receiver's type arguments
    (``ColumnParallelLinear[Gathered]``'s ``forward`` returns ``Gathered``).
    """
    bound = bind_self(method, receiver)
    if owner is None or not owner.type_vars or not receiver.type.has_base(owner.fullname):
        return bound
    expanded = expand_type_by_instance(bound, map_instance_to_supertype(receiver, owner))
    return expanded if isinstance(expanded, FunctionLike) else bound


def replace_type_variables(signature: CallableType, replacements: dict[TypeVarId, TypeVarType]) -> CallableType:
    """``signature`` with some of its own type variables replaced by others, everywhere they occur."""
    expanded = expand_type(signature, dict(replacements))
    assert isinstance(expanded, CallableType)
    variables = [replacements.get(v.id, v) if isinstance(v, TypeVarType) else v for v in signature.variables]
    return expanded.copy_modified(variables=variables)


def is_subtype(left: Type, right: Type) -> bool:
    """mypy's subtype relation (an instance's type arguments against an overload's ``self`` type)."""
    return subtypes.is_subtype(left, right)


def simplified_union(items: list[Type]) -> Type:
    """The union of ``items``, with duplicates removed (one item: that item)."""
    return make_simplified_union(items)


def expression_type(api: CheckerPluginInterface, expr: Expression) -> Type | None:
    """The type mypy already inferred for ``expr`` (an element of a list argument).

    Reads the checker's type map instead of re-checking the expression, which
    would run hooks, and report their errors, a second time.
    """
    lookup = getattr(api, "lookup_type_or_none", None)
    if lookup is None:
        return None
    found: Type | None = lookup(expr)
    return found


@contextmanager
def past_speculation(api: CheckerPluginInterface) -> Iterator[None]:
    """Errors reported inside are kept even where mypy is only trying an operator.

    mypy checks ``a - b`` by trying ``a.__sub__(b)`` and then ``b.__rsub__(a)``,
    each under an error filter, and when every attempt fails it keeps only the
    first attempt's errors: an error reported from ``__rsub__`` (``1.0 - p``)
    would be lost, and an error from ``__sub__`` would make mypy give up on the
    result.  SPMD errors are not reasons to try another operator method, so the
    plugin reports them with the filters suspended.
    """
    errors = api.msg.errors
    watchers = getattr(errors, "_watchers", None)
    if watchers is None:
        yield
        return
    errors._watchers = []
    try:
        yield
    finally:
        errors._watchers = watchers


@dataclass(frozen=True)
class Mismatch:
    """One of mypy's errors for a value whose type does not fit the type declared where it goes.

    ``into`` says where the value goes: ``"return"`` (``return v``), ``"variable"``
    (``x = v``, ``self.x = v``), ``"item"`` (``xs[i] = v``) or ``"argument"`` (``f(v)``).
    ``value`` and ``declared`` are the two types as mypy prints them, each split
    into the members of its union (``X | None`` and ``Optional[X]`` both give
    ``("X", "None")``).
    """

    path: str
    line: int
    into: str
    value: tuple[str, ...]
    declared: tuple[str, ...]


_QUOTED: Final = r'"([^"]*)"'
# How mypy 2.0 to 2.4 word a mismatch, by error code: where the value goes, and the message.
_MISMATCHES: Final = {
    "return-value": (("return", re.compile(rf"Incompatible return value type \(got {_QUOTED}, expected {_QUOTED}\)")),),
    "assignment": tuple(
        (into, re.compile(rf"Incompatible types in assignment \(expression has type {_QUOTED}, {target} has type "
                          rf"{_QUOTED}\)"))
        for into, target in (("variable", "variable"), ("item", "target"))
    ),
    "arg-type": (("argument", re.compile(rf"Argument .+ has incompatible type {_QUOTED}; expected {_QUOTED}")),),
}
_PRINTED_SPMD: Final = re.compile(r"(?P<cls>Spmd(?:Tensor|Parameter))\[(?:Literal\[(?P<entries>[^\]]*)\]|\w+)\]")
_PRINTED_ENTRY: Final = re.compile(r"'([^']*)'")
_PRINTED_AXIS_GROUP: Final = re.compile(r"AxisGroup\[(?:Literal\[[^\]]*\]|\w+)\]")


def read_mismatch(path: str, line: int, code: str | None, message: str) -> Mismatch | None:
    """mypy's error ``message`` (with ``code``, in file ``path`` at ``line``) as a :class:`Mismatch`, if it is one."""
    for into, wording in _MISMATCHES.get(code or "", ()):
        if found := wording.fullmatch(message):
            return Mismatch(path, line, into, _union_members(found[1]), _union_members(found[2]))
    return None


def _union_members(printed: str) -> tuple[str, ...]:
    """The members of a union as mypy prints it (``X | None``, ``Optional[X]``), split only at its top level."""
    if printed.startswith("Optional[") and printed.endswith("]"):
        return (*_union_members(printed[len("Optional["):-1]), "None")
    if " | " not in printed:  # most of mypy's errors: no union to split, nor a character to walk
        return (printed,)
    members, depth, start = [], 0, 0
    for at, char in enumerate(printed):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0 and printed.startswith(" | ", at):
            members.append(printed[start:at])
            start = at + len(" | ")
    return (*members, printed[start:])


def printed_spmd(printed: str) -> tuple[str, frozenset[str]] | None:
    """The class and ``axis:type`` entries of an SPMD-typed tensor as mypy prints it; ``None``: not one.

    ``SpmdTensor[Literal['dp:R', 'tp:V']]`` gives ``("SpmdTensor", {"dp:R", "tp:V"})``;
    one without literals (``SpmdParameter[Any]``, unknown) has no entries.
    """
    found = _PRINTED_SPMD.fullmatch(printed)
    if found is None:
        return None
    return found["cls"], frozenset(_PRINTED_ENTRY.findall(found["entries"] or ""))


def printed_axis_group(printed: str) -> bool:
    """Whether ``printed`` is a process group of known axes as mypy prints it: ``AxisGroup[Literal['tp']]``."""
    return _PRINTED_AXIS_GROUP.fullmatch(printed) is not None


def _errors(api: object) -> object | None:
    """mypy's one ``Errors`` object, reached from a checker or from a type analyzer (through its analyzer)."""
    # The likely route first: a failed attribute lookup raises inside mypy's compiled classes, which costs.
    for owner in (api,) if isinstance(api, TypeChecker) else (getattr(api, "api", None), api):
        errors = getattr(getattr(owner, "msg", None), "errors", None)
        if isinstance(errors, Errors):
            return errors
    return None


def filter_mismatches(api: object, installed: object | None, drop: Callable[[Mismatch], bool]) -> object | None:
    """Have mypy drop, from now on, its mismatch errors that ``drop`` selects; the filter in place, or ``None``.

    ``installed`` is what an earlier call returned: while it still watches
    mypy's errors, it is returned as it is, so that the filter goes in once per
    run and a call that finds it costs a look at the stack.  mypy routes every error through a stack of error
    watchers, the top one first; speculative checks push theirs and pop them
    again.  The filter goes to the bottom of the stack, where it sees exactly
    the errors mypy is about to report.
    """
    errors = _errors(api)
    watchers = getattr(errors, "_watchers", None)
    if not isinstance(errors, Errors) or not isinstance(watchers, list):
        return None
    if installed is not None and installed in watchers:  # the watchers compare by identity
        return installed

    def selected(file: str, info: ErrorInfo) -> bool:
        try:
            mismatch = read_mismatch(file, info.line, info.code.code if info.code is not None else None, info.message)
            return mismatch is not None and drop(mismatch)
        except Exception:  # the filter must never break mypy's reporting
            return False

    watcher = ErrorWatcher(errors, filter_errors=selected)
    watchers.insert(0, watcher)
    return watcher


def note(api: object, message: str, context: Context, code: ErrorCode) -> None:
    """Report ``message`` as a note at ``context``, through whichever interface ``api`` is (checker or analyzer)."""
    report = getattr(api, "note", None) or api.msg.note  # type: ignore[attr-defined]
    report(message, context, code=code)
