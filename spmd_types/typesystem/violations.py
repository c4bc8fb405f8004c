"""Rule violations as structured values, rendered by the plugin and the runtime.

A :class:`Violation` says which rule broke (its :class:`Code`), on which mesh
axis, with which types, why, and which casts or collectives would fix it and
what each fix costs in the forward and backward pass.  Renderers decide how to
name operands and where to print; the words about the rule live here.

A violation becomes one line of text (what mypy prints, and all it hands
back): a :class:`Message`, whose suffix lists the fixes in a fixed form,
``; fix: <call> (<cost>), or <call> (<cost>)``.  :meth:`Message.parse` reads
that form back, so that a report (``spmd-check``) can show each fix on a line
of its own from nothing but mypy's output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Final

from spmd_types.typesystem.codes import Code

__all__ = ["RETURN_VALUE", "Code", "Fix", "Message", "Violation", "argument_site"]

RETURN_VALUE: Final = "return value"
"""How messages name the value a function returns, where it does not fit the declared return type."""


def argument_site(name: str | None, callee: str) -> str:
    """How messages name an argument passed to ``callee`` as parameter ``name`` (``None``: unnamed)."""
    return f'argument "{name}" of "{callee}"' if name else f'an argument of "{callee}"'


@dataclass(frozen=True)
class Fix:
    """A call that would fix a violation, and what it costs.

    ``call`` is a template with ``{x}`` standing for the value to change, for
    example ``convert({x}, "tp", src=I, dst=R)``.  ``cost`` says what it does in
    the forward and backward pass, for example
    ``no-op forward, all-reduce in backward``.  ``operands`` names the operands
    the fix applies to (their positions among the op's operands; the call is
    made on each of them), or is empty when the fix applies to the value the
    message is about.  ``replaces`` names the collective or cast call that the
    fix is written instead of (its input is the operand): the flagged call
    itself, or the call that computed the value; ``None`` when the fix is a
    call around the operand, added where the operand is used.
    """

    call: str
    cost: str
    operands: tuple[int, ...] = ()
    replaces: str | None = None

    def render(self, *names: str) -> str:
        """The call on each of ``names``, what it replaces, then its cost in parentheses (which holds no others)."""
        calls = " and ".join(self.call.format(x=name) for name in names)
        instead = f" replacing the {self.replaces} call" if self.replaces else ""
        return f"{calls}{instead} ({self.cost}{' each' if len(names) > 1 else ''})"


_FIXES: Final = "; fix: "
_OR: Final = ", or "
# One rendered fix: calls (never the marker of the fixes), then their cost in parentheses, which
# ends with what the backward does.
_FIX: Final = rf"(?:(?!{re.escape(_FIXES)})[^\n])+? \([^()]* in backward(?: each)?\)"
_WITH_FIXES: Final = re.compile(rf"(?P<text>.*?){re.escape(_FIXES)}(?P<fixes>{_FIX}(?:{re.escape(_OR)}{_FIX})*)",
                                re.DOTALL)
_ONE_FIX: Final = re.compile(rf"({_FIX})(?:{re.escape(_OR)}|$)")


@dataclass(frozen=True)
class Message:
    """A violation in words: what is wrong (``text``), and the alternative fixes, each spelled as a call.

    ``str(message)`` is the one line printed; :meth:`parse` reads it back.
    """

    text: str
    fixes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text + (_FIXES + _OR.join(self.fixes) if self.fixes else "")

    @staticmethod
    def parse(line: str) -> Message:
        """The message that ``str`` printed as ``line``; a line without fixes is all ``text``.

        The fixes are read by their form (calls, then a cost in parentheses),
        after the last marker they follow, not by splitting the words before
        them.  A fix never holds the marker: its calls spell mesh axes, which
        hold no ``:``, and expressions of the source.
        """
        found = _WITH_FIXES.fullmatch(line)
        if found is None:
            return Message(line)
        return Message(found["text"], tuple(fix for fix in _ONE_FIX.findall(found["fixes"])))


@dataclass(frozen=True)
class Violation:
    """One broken rule on one mesh axis.

    ``types`` lists the SPMD types involved on ``axis`` as text (``"I"``,
    ``"P"``, ...); ``operands`` the positions of the operands they belong to,
    when the violation is about an op's operands.  ``reason`` is a complete
    sentence fragment such as ``I does not mix with V``; renderers prefix it
    with the op and axis and follow it with the fixes.
    """

    code: Code
    axis: str | None
    reason: str
    types: tuple[str, ...] = ()
    operands: tuple[int, ...] = ()
    fixes: tuple[Fix, ...] = field(default=())

    def replacing(self, call: str, instead_of: str | None = None) -> Violation:
        """This violation with each fix that replaces ``instead_of`` (each fix, when ``None``) replacing ``call``.

        A fix written for a collective (``replacing the all_reduce call``) then
        names the call as the source spells it (``dist_nn.all_reduce``), and a
        fix that is a call written anew (``d.to_local(...)``) names the call
        it takes the place of.
        """
        return replace(self, fixes=tuple(replace(f, replaces=call) if instead_of in (None, f.replaces) else f
                                         for f in self.fixes))

    def render(self, where: str, operand_names: tuple[str | None, ...] = (), value: str | None = "x") -> str:
        """A one-line message: ``where``, the axis, the reason, the fixes (``str`` of :meth:`message`)."""
        return str(self.message(where, operand_names, value))

    def message(self, where: str, operand_names: tuple[str | None, ...] = (), value: str | None = "x") -> Message:
        """The violation in words, as it occurs at ``where``.

        ``where`` names the op or boundary (``"+"``, ``argument "x" of "f"``);
        ``operand_names`` are how to spell the operands in fixes; ``value`` is
        the spelling for fixes that apply to the value itself.  A spelling of
        ``None`` means the source cannot be written back: a fix that would
        need it is left out rather than printed with a placeholder.
        """
        head = f"{where} on axis {self.axis!r}: " if self.axis is not None else f"{where}: "
        fixes = []
        for fix in self.fixes:
            names = [operand_names[k] if k < len(operand_names) else value for k in fix.operands] or [value]
            if all(name is not None for name in names):
                fixes.append(fix.render(*(name for name in names if name is not None)))
        return Message(head + self.reason, tuple(fixes))
