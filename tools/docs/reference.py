"""The API reference pages in ``docs/reference/``, from the runtime's docstrings.

Every signature, diagram, argument list and backward case comes from the
docstrings in ``spmd_types/`` (read with ``ast``, so neither torch nor the
runtime is imported), and every table of accepted ``src``/``dst`` pairs is
computed from the rule core.  The exceptions are the topic pages
(``TOPICS``), which cut across several calls: they are written by hand in
``tools/docs/topics/`` and copied in.

The docstrings use a small reST subset, converted here to Markdown: ````x````
literals, ``:func:``/``:class:``/... roles, a paragraph ending in ``::``
followed by an indented block (a diagram), and Google-style ``Args:`` /
``Returns:`` sections.  A collective's or cast's table of accepted types
(after :data:`~tools.docs.docstrings.TYPES_HEADER`) is left out: its page
ends with the same table in Markdown.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from spmd_types.typesystem import (
    CALLS,
    EQUIVALENTS,
    FUNCTIONAL_OPS,
    GROUP_GETTERS,
    PASS_THROUGH_OPS,
    VERIFIED_AGAINST,
    WORLD,
    route,
)
from tools.docs import ROOT
from tools.docs.calls import effects, label, markdown_table
from tools.docs.docstrings import TYPES_HEADER

__all__ = ["ANCHORS", "OUT", "PAGES", "render"]

OUT = ROOT / "docs" / "reference"
NOTICE = "<!-- Generated from the docstrings in {source}; edit those, then run: make generated-docs -->"


@dataclass(frozen=True)
class Page:
    """One reference page: the objects it documents and where they are defined."""

    slug: str
    title: str
    source: str
    names: tuple[str, ...]
    module_doc: bool = False  # start the page with the module docstring
    summary: str | None = None  # what the index says the page holds (default: its names)

    @property
    def call(self) -> str | None:
        """The collective or cast of the rule core the page documents, if it is one."""
        return self.slug if self.slug in CALLS else None


PAGES: tuple[Page, ...] = (
    Page("all_reduce", "all_reduce", "spmd_types/_collectives.py", ("all_reduce",)),
    Page("all_gather", "all_gather", "spmd_types/_collectives.py", ("all_gather",)),
    Page("reduce_scatter", "reduce_scatter", "spmd_types/_collectives.py", ("reduce_scatter",)),
    Page("all_to_all", "all_to_all", "spmd_types/_collectives.py", ("all_to_all",)),
    Page("ppermute", "ppermute", "spmd_types/_collectives.py", ("ppermute",)),
    Page("reinterpret", "reinterpret", "spmd_types/_local.py", ("reinterpret",)),
    Page("convert", "convert", "spmd_types/_local.py", ("convert",)),
    Page("redistribute", "redistribute", "spmd_types/_collectives.py", ("redistribute",)),
    Page("redistribute_spec", "redistribute_spec", "spmd_types/_redistribute_spec.py", ("redistribute_spec",),
         summary="`redistribute_spec`: from one `PartitionSpec` to another over several axes, planned"),
    Page("partial_outputs", "einsum, matmul, linear and sum", "spmd_types/_partial_outputs.py",
         ("einsum", "matmul", "linear", "sum"), module_doc=True,
         summary="`einsum`, `matmul`, `linear`, `sum` with `out_partial_axes=`: a local op whose result is a "
                 "pending sum"),
    Page("mesh", "Meshes and axes", "spmd_types/_mesh.py",
         ("set_current_mesh", "current_mesh", "axis_index", "axis_size"), module_doc=True),
    Page("assert_type", "assert_type and run-time checks", "spmd_types/_checks.py",
         ("assert_type", "set_runtime_checks", "runtime_checks_enabled"), module_doc=True),
    Page("runtime_checking", "Runtime checking", "spmd_types/_checking.py",
         ("runtime_checking", "checked", "global_spmd", "TypeTracker"), module_doc=True),
    Page("local_region", "local_region", "spmd_types/_regions.py", ("local_region",), module_doc=True,
         summary="`local_region`: a function local SPMD on chosen mesh axes inside a global program"),
    Page("exceptions", "Exceptions", "spmd_types/_errors.py",
         ("SpmdError", "SpmdValueError", "SpmdRuntimeError", "CollectiveArgumentError", "ShapeError",
          "UnknownAxisError", "NoCurrentMeshError", "NotDifferentiableError", "SpmdTypeCheckError"),
         module_doc=True),
    Page("precision", "Mixed precision", "spmd_types/_precision.py", (), module_doc=True,
         summary="`comm_dtype`, `out_dtype` and `grad_comm_dtype`: the dtypes a collective communicates in"),
    Page("backend", "The torch.distributed backend", "spmd_types/_dist.py", ("set_dist", "use_dist", "get_dist"),
         module_doc=True),
)

# Pages written by hand, in tools/docs/topics/: topics that cut across several calls, with samples
# that tests/docs type-check.  The generator copies them in with the notice on top.
TOPICS: dict[str, str] = {
    "uneven-and-multi-axis": "Uneven pieces and several axes: `split_sizes`, `out_split_sizes`, "
                             '`axis=("dp", "cp")`',
}
TOPIC_SOURCES = ROOT / "tools" / "docs" / "topics"

# Where each documented name lives, for cross-references in docstrings.
ANCHORS: dict[str, str] = {}
for _page in PAGES:
    for _name in _page.names:
        ANCHORS[_name] = f"{_page.slug}.md" if len(_page.names) == 1 else f"{_page.slug}.md#{_name.lower()}"

# -- reST subset to Markdown -----------------------------------------------------------

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc):`~?([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``")
_SECTION = re.compile(r"^(Args|Arguments|Returns|Raises|Yields):\s*$")


def _role(match: re.Match[str]) -> str:
    target = match.group(1)
    short = target.rpartition(".")[2]
    if short in ANCHORS:
        return f"[`{short}`]({ANCHORS[short]})"
    return f"`{short}`"


def inline(text: str) -> str:
    """Roles and double-backtick literals of one line of prose, as Markdown."""
    text = _ROLE.sub(_role, text)
    return _LITERAL.sub(lambda m: f"`{m.group(1)}`", text)


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


def _take_block(lines: list[str], start: int, base: int) -> tuple[list[str], int]:
    """The lines from ``start`` indented deeper than ``base`` (blank lines included), and where they end."""
    block: list[str] = []
    i = start
    while i < len(lines) and (not lines[i].strip() or _indent_of(lines[i]) > base):
        block.append(lines[i])
        i += 1
    while block and not block[-1].strip():
        block.pop()
        i -= 1
    return block, i


def _fence(block: list[str]) -> list[str]:
    return ["```text", *textwrap.dedent("\n".join(block)).strip("\n").splitlines(), "```"]


def _section(name: str, body: list[str]) -> list[str]:
    """A Google-style ``Args:``/``Returns:`` section as a Markdown list or paragraph."""
    text = textwrap.dedent("\n".join(body)).splitlines()
    title = {"Args": "Parameters", "Arguments": "Parameters"}.get(name, name)
    if name in ("Args", "Arguments", "Raises"):
        items: list[list[str]] = []
        for line in text:
            if line and not line[0].isspace():
                items.append([line])
            elif items:
                items[-1].append(line.strip())
        out = [f"**{title}**", ""]
        for item in items:
            head, _, rest = item[0].partition(":")
            words = " ".join([rest.strip(), *item[1:]]).strip()
            out.append(f"- `{head.strip()}`: {inline(words)}")
        return out + [""]
    return [f"**{title}**", "", inline(" ".join(line.strip() for line in text)), ""]


def docstring_markdown(doc: str) -> list[str]:
    """A docstring (already dedented, first line removed) as Markdown lines."""
    lines = doc.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        section = _SECTION.match(stripped)
        if section and _indent_of(line) == 0:
            body, i = _take_block(lines, i + 1, 0)
            out.extend(_section(section.group(1), body))
            continue
        if stripped.endswith("::"):
            # A paragraph that introduces a literal block (reST ``::``).
            text = stripped[:-2].rstrip()
            if text:
                out.append(" " * _indent_of(line) + inline(text + ":"))
            block, i = _take_block(lines, i + 1, _indent_of(line))
            out.append("")
            out.extend(_fence(block))
            continue
        out.append(inline(line))
        i += 1
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
    return text.splitlines()


# -- reading the sources ---------------------------------------------------------------


def _definitions(source: str) -> tuple[str | None, dict[str, ast.AST]]:
    tree = ast.parse((ROOT / source).read_text())
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
    return ast.get_docstring(tree), found


def _is_checking_hook(decorator: ast.expr) -> bool:
    """``@collective("all_reduce")``: how runtime checking sees a call, not part of its signature."""
    called = decorator.func if isinstance(decorator, ast.Call) else None
    return isinstance(called, ast.Name) and called.id == "collective"


def _signature(node: ast.FunctionDef) -> str:
    """The Python signature of ``node`` as written in the source."""
    args = node.args
    parts: list[str] = []

    def one(arg: ast.arg, default: ast.expr | None) -> str:
        text = arg.arg
        if arg.annotation is not None:
            text += f": {ast.unparse(arg.annotation)}"
        if default is not None:
            text += f" = {ast.unparse(default)}" if arg.annotation is not None else f"={ast.unparse(default)}"
        return text

    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts.extend(one(a, d) for a, d in zip(positional, defaults))
    if args.vararg is not None:
        parts.append("*" + one(args.vararg, None))
    elif args.kwonlyargs:
        parts.append("*")
    parts.extend(one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults))
    if args.kwarg is not None:
        parts.append("**" + one(args.kwarg, None))
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    decorators = "".join(f"@{ast.unparse(d)}\n" for d in node.decorator_list if not _is_checking_hook(d))
    one_line = f"def {node.name}({', '.join(parts)}){returns}"
    if len(one_line) <= 88:
        return decorators + one_line
    body = "".join(f"    {p},\n" for p in parts)
    return f"{decorators}def {node.name}(\n{body}){returns}"


def _class_line(node: ast.ClassDef) -> str:
    bases = ", ".join(ast.unparse(b) for b in node.bases)
    return f"class {node.name}({bases})" if bases else f"class {node.name}"


def _documented(name: str, node: ast.AST, source: str, level: str) -> list[str]:
    doc = ast.get_docstring(node) or ""  # type: ignore[arg-type]
    if not doc:
        raise ValueError(f"{source}: {name} has no docstring to document")
    out = [f"{level} `{name}`", ""]
    if isinstance(node, ast.FunctionDef):
        doc = doc.partition(TYPES_HEADER)[0]  # the page has the table in Markdown
        first, _, rest = doc.partition("\n")
        summary = _LITERAL.fullmatch(first.strip())
        out += ["```python", _signature(node), "```", ""]
        if summary is not None and summary.group(1).startswith(name):
            # The docstring's first line states the SPMD types: show it as the typed signature.
            out += ["In SPMD types:", "", "```text", summary.group(1), "```", ""]
            doc = rest
        out += docstring_markdown(textwrap.dedent(doc).strip("\n"))
    else:
        assert isinstance(node, ast.ClassDef)
        out += ["```python", _class_line(node), "```", ""]
        out += docstring_markdown(doc)
    return out + [""]


# -- tables from the rule core ---------------------------------------------------------


def pairs_table(call: str) -> list[str]:
    """Every ``src``/``dst`` pair ``call`` accepts: what runs forward, and what runs backward."""
    spec = CALLS[call]
    src_default = label(spec.src_default) if spec.src_default is not None else "required"
    dst_default = label(spec.dst_default) if spec.dst_default is not None else "required"
    return [
        "## Accepted types",
        "",
        f"`src` default: {src_default}; `dst` default: {dst_default}. Computed from the rule core "
        "(`spmd_types.typesystem.collectives.CALLS`), which the runtime and the mypy plugin both use; "
        "a pair that is not listed is an error. `S(i)` and `S(j)` stand for shards of two different dims.",
        "",
        *markdown_table(call),
        "",
    ]


# -- pages ---------------------------------------------------------------------------


def render_page(page: Page) -> str:
    module_doc, defs = _definitions(page.source)
    out = [NOTICE.format(source=page.source), "", f"# {page.title}", ""]
    if page.module_doc and module_doc:
        out += docstring_markdown(module_doc) + [""]
    if len(page.names) == 1:
        name = page.names[0]
        body = _documented(name, defs[name], page.source, "##")
        out += ["`import spmd_types as spmd`; `spmd." + name + "`", ""]
        out += body[2:]  # the page title already names it
    else:
        for name in page.names:
            if name not in defs:
                raise KeyError(f"{page.source} defines no {name}")
            out += _documented(name, defs[name], page.source, "##")
    if page.call is not None:
        out += pairs_table(page.call)
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def render_index() -> str:
    coll_doc, _ = _definitions("spmd_types/_collectives.py")
    local_doc, _ = _definitions("spmd_types/_local.py")
    out = [NOTICE.format(source="spmd_types/_collectives.py and spmd_types/_local.py"), "",
           "# API reference", "",
           "One page per collective and cast, pages for meshes, `assert_type`, the exceptions, mixed precision "
           "and the `torch.distributed` backend, and a page on uneven pieces and collectives over several axes. "
           "Everything here but that last page is generated from the docstrings of the runtime library and from "
           "the rule core's tables, so it says what the code does; the last one's code samples are type-checked "
           "by the tests.", "",
           "| call | what it does |", "|---|---|"]
    for name, spec in CALLS.items():
        out.append(f"| [`{name}`]({name}.md) | {spec.summary} |")
    out += ["", "| page | contents |", "|---|---|"]
    for page in PAGES:
        if page.call is None:
            contents = page.summary or ", ".join(f"`{n}`" for n in page.names)
            out.append(f"| [{page.title}]({page.slug}.md) | {contents} |")
    for slug, summary in TOPICS.items():
        out.append(f"| [{_topic_title(slug)}]({slug}.md) | {summary.partition(': ')[2] or summary} |")
    out.append("| [Other libraries' collectives](libraries.md) | Megatron's mapping functions, torch's functional "
               "collectives, and the calls they are typed as |")
    out += ["", "## Collectives", ""] + docstring_markdown(coll_doc or "")
    out += ["", "## Casts", ""] + docstring_markdown(local_doc or "")
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def render_libraries() -> str:
    """Other libraries' communication functions and the calls the checker types them as."""
    source = "spmd_types/typesystem/ecosystem.py"
    module_doc, _ = _definitions(source)
    versions = ", ".join(f"{name} {version}" for name, version in VERIFIED_AGAINST.items())
    out = [NOTICE.format(source=source), "", "# Other libraries' collectives", ""]
    out += docstring_markdown(module_doc or "") + [""]
    out += ["## The table", "",
            f"Read off and tested against: {versions}. \"Group\" is the parameter that takes the process "
            "group, and the group the library uses when it is left out (set its mesh axis with the plugin "
            "option `library_axes`).", "",
            "| function | is | forward | backward | group |", "|---|---|---|---|---|"]
    for equivalent in EQUIVALENTS.values():
        variants = [(equivalent.dst, "")]
        if equivalent.variant is not None:
            variants.append((equivalent.variant.dst_if_false, f" with `{equivalent.variant.parameter}=False`"))
        notes = "".join(f" ({note})" for note, on in (
            ("a list of tensors, stacked", equivalent.tensor_list),
            ("returns a tuple, unbound", equivalent.returns_tuple),
            (f"reduction: `{equivalent.reduction}`", equivalent.reduction is not None)) if on)
        src = f"S({equivalent.src_dim})" if equivalent.src_dim else equivalent.src.code
        for dst, condition in variants:
            forward, backward = effects(route(equivalent.call, equivalent.src, dst) or ())
            default = ("every axis in `axes` (torch's WORLD) if omitted" if equivalent.default_role == WORLD
                       else f"{equivalent.default_role} if omitted" if equivalent.default_role else "required")
            shown = f"S({equivalent.dst_dim})" if equivalent.dst_dim else dst.code
            out.append(f"| `{equivalent.function}`{condition}{notes} | `{equivalent.call}(x, axis, src={src}, "
                       f"dst={shown})` | {forward} | {backward} | "
                       f"`{equivalent.group}`: {default} |")
    out += ["", "Group getters, whose result the checker types as the process group of one mesh axis:", "",
            "| function | group |", "|---|---|"]
    out += [f"| `{function}()` | {role} |" for function, role in GROUP_GETTERS.items()]
    out += ["", "## torch's functional collectives", "",
            "The functional collectives (`torch.distributed._functional_collectives.all_reduce` and the rest) "
            "each run one op of the `_c10d_functional` operator library; [runtime checking](runtime_checking.md) "
            "checks and types each op as the call below, where the function's own entry above does not (a call "
            "of the op itself). Gathers and scatters work on dim 0, so a shard is only known to be varying. The "
            "group is the "
            "op's group-name argument, which names a mesh axis of the current mesh.", "",
            "| op | is | forward | backward |", "|---|---|---|---|"]
    for entry in FUNCTIONAL_OPS.values():
        forward, backward = effects(route(entry.call, entry.src, entry.dst) or ())
        out.append(f"| `{entry.name}` | `{entry.call}(x, axis, src={entry.src.code}, dst={entry.dst.code})` | "
                   f"{forward} | {backward} |")
    waits = ", ".join(f"`torch.ops.{op.replace('::', '.')}`" for op in sorted(PASS_THROUGH_OPS))
    out += ["", f"{waits} return their input's data with an identity gradient: the type passes through."]
    return "\n".join(out).rstrip("\n") + "\n"


def _topic_title(slug: str) -> str:
    """A topic page's title: the first heading of its source."""
    for line in (TOPIC_SOURCES / f"{slug}.md").read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise ValueError(f"tools/docs/topics/{slug}.md has no '# ' title")


def render_topic(slug: str) -> str:
    """A hand-written topic page, with the notice that says where to edit it."""
    source = f"tools/docs/topics/{slug}.md"
    notice = f"<!-- Written by hand in {source}; edit it there, then run make generated-docs, which copies it here -->"
    return notice + "\n\n" + (ROOT / source).read_text().strip("\n") + "\n"


def render() -> dict[Path, str]:
    """Every generated page by path."""
    pages = {OUT / f"{page.slug}.md": render_page(page) for page in PAGES}
    pages[OUT / "index.md"] = render_index()
    pages[OUT / "libraries.md"] = render_libraries()
    pages.update({OUT / f"{slug}.md": render_topic(slug) for slug in TOPICS})
    return pages
