"""The verdict of a call that mypy checks a second time, remembered from the first.

mypy infers some call expressions twice in a row: the right operand of a
binary operator (``x * torch.rsqrt(v)``: once on its own in
``checkexpr.check_op``, once more as the argument of ``__mul__`` in
``check_op_reversible``), and the argument of an overloaded callee, once per
overload tried.  Each time it runs the plugin's hook on every call inside, with
the same call node and, for each argument, the same type object: a variable's
type is the binder's, a parameter's its declaration's, a nested call's the
type its own hook gave.  On a transformer block 11 of 59 hooked calls are such
repeats.

A handler's verdict depends on the call node, its argument types, the
receiver's type, mypy's result type and the checker; nothing else it reads
changes between the two inferences (the checked file's facts, the type map's
entries for the expressions inside the call, the rule tables).  So a call
checked again with every one of these the same object gets the verdict of the
first check: :func:`spmd_mypy.hooks.finish`, which reads the type context
(different the second time) and reports, still runs on it, and changes no
verdict it is given.  mypy builds the type of a literal (``2``, ``-1``,
``True``) anew at each inference: such an argument's type is compared by value
instead.

Each hook remembers its last call, and is dropped whenever mypy parses a
module (see :meth:`spmd_mypy.hooks.Router.forget_declared`).
"""

from __future__ import annotations

from typing import TypeAlias

from mypy.nodes import Context, Expression
from mypy.plugin import FunctionContext, MethodContext
from mypy.types import Type

from spmd_mypy.values import plain_literal
from spmd_mypy.verdict import Verdict

__all__ = ["Repeats"]

CallContext: TypeAlias = FunctionContext | MethodContext


class Repeats:
    """The verdict of the call one hook checked last, and what the hook saw of it.

    One call is enough: the second inference of a call follows the first within
    the same expression, and no other call of the same callee comes between
    them (on the 100-block benchmark model, 934 of the 954 repeats that a table
    of 64 calls per hook finds).  Kept in fields, not a table, since every
    checked call replaces them.
    """

    def __init__(self) -> None:
        # The call node and the types are only compared, so typed ``object``: the compiled build then does not
        # test the class of each (mypy's own, from another compiled library) at every call kept.
        self._context: object = None
        self._call: CallContext | None = None
        self._receiver: object = None
        self._default: object = None
        self._verdict: Verdict | None = None

    def find(self, ctx: CallContext, context: Context, receiver: Type | None, default: Type) -> Verdict | None:
        """The verdict given when this call was last checked, if with the same inputs; else ``None``.

        ``context`` is the call node (``ctx.context``), ``receiver`` the type of the object whose method is
        called (``None`` for a function), ``default`` mypy's result type.
        """
        call = self._call
        if context is not self._context or call is None:
            return None
        known = self._default
        if (receiver is not self._receiver or not (known is default or known == default)
                or ctx.api is not call.api or ctx.callee_arg_names != call.callee_arg_names
                or ctx.arg_kinds != call.arg_kinds or not _same_arguments(call.arg_types, ctx.arg_types, ctx.args)):
            return None
        return self._verdict

    def keep(self, ctx: CallContext, context: Context, receiver: Type | None, default: Type,
             verdict: Verdict) -> Verdict:
        """Remember ``verdict`` as this call's, in place of the last one's; returns ``verdict``.  The context
        mypy passed is kept whole: its fields are read only when the same call comes again."""
        self._context = context
        self._call = ctx
        self._receiver = receiver
        self._default = default
        self._verdict = verdict
        return verdict


def _same_arguments(before: list[list[Type]], now: list[list[Type]], args: list[list[Expression]]) -> bool:
    """Whether each argument has the same type as before: the same object, or for a literal an equal type."""
    if len(before) != len(now):
        return False
    for k in range(len(now)):
        was, types = before[k], now[k]
        if len(was) != len(types):
            return False
        exprs = args[k]
        for j in range(len(types)):
            if was[j] is not types[j] and not (j < len(exprs) and plain_literal(exprs[j]) and was[j] == types[j]):
                return False
    return True

