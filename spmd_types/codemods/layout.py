"""A new argument list in the layout of the one it replaces, with each comment next to its argument.

libcst keeps whitespace and comments in the separators: the comma after an
argument holds the rest of its line (a trailing comment) and the lines before
the next argument (full-line comments, blank lines).  A rewritten call keeps
the *layout* by position (its i-th separator is the old i-th, and its last
argument ends as the old last one did, trailing comma included), so one
argument per line stays one per line; and it keeps each *comment* with the
argument it was written beside, when that argument survives.  Comments of
arguments that are dropped, or that find no line break to sit on, are not
placed anywhere: :func:`comments` lets a caller see that they would be lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

__all__ = ["Placed", "comments", "laid_out"]

Placed = tuple[cst.Arg, int | None]
"""A new argument, and the index of the old argument it continues (``None``: a new one)."""

_NO_SPACE = cst.SimpleWhitespace("")
_SPACED_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def laid_out(old: Sequence[cst.Arg], new: Sequence[Placed]) -> list[cst.Arg]:
    """``new`` laid out like ``old`` (which is not empty), comments following their arguments.

    Separators beyond the old ones repeat the last old one (a newline and
    indent, or a space), or are ``", "`` when the old list had one argument.
    """
    separators = [_bare(arg.comma) for arg in old[:-1]]
    filler = separators[-1] if separators else _SPACED_COMMA
    final = len(new) - 1
    args: list[cst.Arg] = []
    for index, (arg, source) in enumerate(new):
        if index == final:
            comma, after = _bare(old[-1].comma), old[-1].whitespace_after_arg
        else:
            comma = separators[index] if index < len(separators) else filler
            after = old[source].whitespace_after_arg if source is not None and source != len(old) - 1 else _NO_SPACE
        if source is not None:
            comma = _carry(comma, old[source].comma, _trailing)
        args.append(arg.with_changes(comma=comma, whitespace_after_arg=after))
    for index, (_, source) in enumerate(new):
        if source and index:  # lines written above an argument sit in the separator before it
            previous = args[index - 1]
            args[index - 1] = previous.with_changes(comma=_carry(previous.comma, old[source - 1].comma, _leading))
    return args


def comments(nodes: Sequence[cst.CSTNode]) -> int:
    """How many comments ``nodes`` hold."""
    count = 0

    class Count(cst.CSTVisitor):
        def visit_Comment(self, node: cst.Comment) -> None:
            nonlocal count
            count += 1

    for node in nodes:
        node.visit(Count())
    return count


def _bare(comma: cst.Comma | cst.MaybeSentinel) -> cst.Comma | cst.MaybeSentinel:
    """The separator without its comments and the lines before the next argument."""
    if not isinstance(comma, cst.Comma) or not isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return comma
    after = comma.whitespace_after
    first = after.first_line.with_changes(whitespace=_NO_SPACE, comment=None)
    return comma.with_changes(whitespace_after=after.with_changes(first_line=first, empty_lines=()))


def _carry(comma: cst.Comma | cst.MaybeSentinel, source: cst.Comma | cst.MaybeSentinel,
           part: Callable[[cst.ParenthesizedWhitespace, cst.ParenthesizedWhitespace], cst.ParenthesizedWhitespace],
           ) -> cst.Comma | cst.MaybeSentinel:
    """``comma`` with ``part`` of what follows ``source``, when both are commas followed by a line break."""
    if not (isinstance(comma, cst.Comma) and isinstance(source, cst.Comma)):
        return comma
    after, before = comma.whitespace_after, source.whitespace_after
    if not (isinstance(after, cst.ParenthesizedWhitespace) and isinstance(before, cst.ParenthesizedWhitespace)):
        return comma
    return comma.with_changes(whitespace_after=part(after, before))


def _trailing(after: cst.ParenthesizedWhitespace, before: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """The end of ``before``'s line (the trailing comment), in ``after``."""
    end = before.first_line
    return after.with_changes(first_line=after.first_line.with_changes(whitespace=end.whitespace, comment=end.comment))


def _leading(after: cst.ParenthesizedWhitespace, before: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """The lines ``before`` puts above the next argument (full-line comments), in ``after``."""
    return after.with_changes(empty_lines=before.empty_lines)
