"""Rule violations as structured values, rendered by the plugin and the runtime.

A :class:`Violation` says which rule broke (its :class:`Code`), on which mesh
axis, with which types, why, and which casts or collectives would fix it and
what each fix costs in the forward and backward pass.  Renderers decide how to
name operands and where to print; the words about the rule live here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from spmd_types.typesystem.codes import Code

__all__ = ["RETURN_VALUE", "Code", "Fix", "Violation", "argument_site"]

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
    message is about.
    """

    call: str
    cost: str
    operands: tuple[int, ...] = ()

    def render(self, *names: str) -> str:
        """The call on each of ``names``, followed by its cost."""
        calls = " and ".join(self.call.format(x=name) for name in names)
        return f"{calls} ({self.cost}{' each' if len(names) > 1 else ''})"


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

    def render(self, where: str, operand_names: tuple[str, ...] = (), value: str = "x") -> str:
        """A one-line message: ``where``, the axis, the reason, the fixes.

        ``where`` names the op or boundary (``"+"``, ``argument "x" of "f"``);
        ``operand_names`` are how to spell the operands in fixes; ``value`` is
        the spelling for fixes that apply to the value itself.
        """
        head = f"{where} on axis {self.axis!r}: " if self.axis is not None else f"{where}: "
        text = head + self.reason
        if self.fixes:
            rendered = []
            for fix in self.fixes:
                names = [operand_names[k] if k < len(operand_names) else value for k in fix.operands]
                rendered.append(fix.render(*(names or [value])))
            text += "; fix: " + ", or ".join(rendered)
        return text
