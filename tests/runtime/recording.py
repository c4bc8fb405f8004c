"""A ``torch.distributed`` stand-in for ``spmd_types.set_dist`` that logs what the runtime calls on it."""

from __future__ import annotations

from typing import Any

import torch

from spmd_types.typesystem import backward_route, route

# What each effect of the rule core's transitions is, as a torch.distributed call.
_CALL_OF_EFFECT = {
    "all-reduce": "all_reduce",
    "all-gather": "all_gather_single",
    "reduce-scatter": "reduce_scatter_single",
    "all-to-all": "all_to_all_single",
    "point-to-point exchange": "all_to_all_single",
}


def expected_calls(call: str, src: Any, dst: Any, op: str = "sum") -> tuple[list[str], list[str]]:
    """The torch.distributed collectives ``call(src -> dst)`` runs forward and backward, per the rule core."""
    steps = route(call, src, dst) or ()
    forward = [_CALL_OF_EFFECT[t.effect] for t in steps if t.effect in _CALL_OF_EFFECT]
    if op in ("max", "min"):
        return forward, []
    back = [_CALL_OF_EFFECT[t.effect] for t in backward_route(steps) if t.effect in _CALL_OF_EFFECT]
    return forward, back


class Recorder:
    """``real`` (``torch.distributed``) with a log of the functions called on it.

    ``functions`` overrides some of ``real``'s functions (the originals, when
    a test patches ``torch.distributed`` itself).  Each entry of :attr:`calls`
    is the function's name and the dtype of the data it communicated (the
    tensor of ``all_reduce``, the input of the others; ``None`` for a
    function that moves no tensor).
    """

    def __init__(self, real: Any, functions: dict[str, Any] | None = None) -> None:
        self._real = real
        self._functions = functions or {}
        self.calls: list[tuple[str, torch.dtype | None]] = []

    def __getattr__(self, name: str) -> Any:
        found = self._functions[name] if name in self._functions else getattr(self._real, name)
        if not callable(found) or isinstance(found, type):
            return found  # ReduceOp, ProcessGroup and the like

        def record(*args: Any, **kwargs: Any) -> Any:
            data = args[0] if name == "all_reduce" else args[1] if len(args) > 1 else None
            self.calls.append((name, data.dtype if isinstance(data, torch.Tensor) else None))
            return found(*args, **kwargs)

        return record

    def take(self) -> list[str]:
        """The names called since the last take, in order; the log is emptied."""
        return [name for name, _ in self.take_dtypes()]

    def take_dtypes(self) -> list[tuple[str, torch.dtype | None]]:
        """Names and dtypes since the last take, in order; the log is emptied."""
        calls, self.calls = self.calls, []
        return calls
