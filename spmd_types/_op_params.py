"""Which parameter each positional argument of a torch op is bound to, named as torch's stubs name it.

The op table (:mod:`spmd_types.typesystem.ops`) names an op's arguments as
the type stubs that ship with torch do (the names mypy, and so the plugin,
sees): ``torch.add(input, other)``, ``Tensor.copy_(self, other)``,
``F.linear(input, weight, bias)``.  At run time most ops are C functions
without an introspectable signature, and their docstrings do not always use
the stubs' names, so the names are read here from the same stubs:
``torch/_C/__init__.pyi`` (the methods of ``TensorBase``),
``torch/_C/_VariableFunctions.pyi`` (``torch.*``), ``torch/nn/functional.pyi``
and ``torch/_C/_nn.pyi`` (``torch.nn.functional.*``).  Ops written in Python
(``torch.functional.split``, ``Tensor.split``, ``F.embedding``) have a real
signature, which is what the stubs repeat.

An overloaded op has one list of names per overload.  Only the first use of
an op pays for reading: the stub files are read once, and each op's answer
is kept.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path
from typing import Final

import torch

__all__ = ["Signatures", "signatures"]

_TORCH: Final = Path(torch.__file__).resolve().parent

# Where the stubs declare each public namespace's functions, in the order they are searched.
_STUBS: Final = {
    "torch.Tensor.": (("_C/__init__.pyi", "TensorBase"),),
    "torch.nn.functional.": (("nn/functional.pyi", None), ("_C/_nn.pyi", None)),
    "torch.": (("_C/_VariableFunctions.pyi", None),),
}

Signatures = tuple[tuple[tuple[str, ...], str | None], ...]
"""Per overload: the positional parameter names in order, and the name of a ``*args`` parameter (or ``None``)."""


def signatures(name: str, func: object) -> Signatures:
    """The positional parameters of op ``name`` (``torch.add``, ``torch.Tensor.add``), called as ``func``.

    A method's first parameter is its receiver (``self``).  Empty when
    neither the object nor the stubs say (the arguments are then bound to no
    name, which the op table treats as arguments the op is not linear in).
    """
    found = _from_python(func)
    if found:
        return found
    return _from_stubs(name)


def _from_python(func: object) -> Signatures:
    target = inspect.unwrap(func) if callable(func) else func
    if not inspect.isfunction(target):
        return ()
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return ()
    positional = tuple(p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    rest = next((p.name for p in parameters if p.kind is p.VAR_POSITIONAL), None)
    return ((positional, rest),)


@functools.lru_cache(maxsize=1024)
def _from_stubs(name: str) -> Signatures:
    for prefix, places in _STUBS.items():
        if not name.startswith(prefix):
            continue
        short = name[len(prefix):]
        if "." in short:
            return ()
        for path, cls in places:
            found = tuple(_parse(header) for header in _headers(_text(path, cls), short))
            if found:
                return found
        return ()
    return ()


@functools.lru_cache(maxsize=8)
def _text(path: str, cls: str | None) -> str:
    """A stub file's text; with ``cls``, only the body of that class."""
    try:
        text = (_TORCH / path).read_text()
    except OSError:
        return ""
    if cls is None:
        return text
    start = text.find(f"\nclass {cls}(")
    if start < 0:
        return ""
    end = text.find("\nclass ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _headers(text: str, short: str) -> list[str]:
    """The parameter lists of every ``def short(...)`` in ``text``."""
    headers = []
    for match in re.finditer(rf"^[ \t]*def {re.escape(short)}\(", text, re.MULTILINE):
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(text[i], 0)
            i += 1
        headers.append(text[match.end():i - 1])
    return headers


def _parse(parameters: str) -> tuple[tuple[str, ...], str | None]:
    try:
        tree = ast.parse(f"def f({parameters}): ...")
    except SyntaxError:
        return ((), None)
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    arguments = node.args
    positional = tuple(a.arg for a in (*arguments.posonlyargs, *arguments.args))
    return positional, arguments.vararg.arg if arguments.vararg is not None else None
