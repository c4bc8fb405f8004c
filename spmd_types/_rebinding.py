"""Replacing loaded library functions by wrappers, in every module that holds them, and putting them back.

Runtime checking types some functions of other libraries as the calls that the
rule core's ecosystem table says they are (Megatron's
``copy_to_tensor_model_parallel_region`` is ``reinterpret(x, "tp", src=I,
dst=R)``).  Callers reach such a function through the name their own module
bound it to (``from megatron.core.tensor_parallel import
copy_to_tensor_model_parallel_region``), so replacing the attribute of the
defining module is not enough: :func:`rebind` replaces the function wherever a
loaded module's namespace holds it.  A library that is not loaded is left
alone (nothing is imported), and references held elsewhere (a default
argument, a closure, an object's attribute) still reach the original.
:func:`replace_attributes` replaces methods of a class (DTensor's ``to_local``)
the same way: for the time checking is on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["rebind", "replace_attributes"]

Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]


def rebind(replacements: Mapping[str, Wrap]) -> Callable[[], None]:
    """Replace each loaded function named in ``replacements`` by ``wrap(function)``; returns the undo.

    ``replacements`` maps a function's full name (``package.module.function``)
    to what wraps it.  Every loaded module's global that is the function
    becomes the wrapper; the undo puts the original back where the wrapper is
    still in place.
    """
    wrapped: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}
    for full_name, wrap in replacements.items():
        module_name, _, attribute = full_name.rpartition(".")
        module = sys.modules.get(module_name)
        original = getattr(module, attribute, None) if module is not None else None
        if callable(original):
            wrapped[id(original)] = (original, wrap(original))
    if not wrapped:
        return lambda: None
    replaced: list[tuple[dict[str, Any], str, Callable[..., Any], Callable[..., Any]]] = []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            found = wrapped.get(id(value))
            if found is not None and found[0] is value:
                namespace[key] = found[1]
                replaced.append((namespace, key, *found))

    def undo() -> None:
        for namespace, key, original, wrapper in replaced:
            if namespace.get(key) is wrapper:
                namespace[key] = original

    return undo


def replace_attributes(owner: type, replacements: Mapping[str, Any]) -> Callable[[], None]:
    """Set the class attributes of ``owner`` named in ``replacements``; returns the undo.

    The undo puts back what the class itself defined (a ``staticmethod``
    stays one), where the replacement is still in place.
    """
    saved = {name: owner.__dict__.get(name) for name in replacements}
    for name, value in replacements.items():
        setattr(owner, name, value)

    def undo() -> None:
        for name, value in replacements.items():
            if owner.__dict__.get(name) is not value:
                continue
            if saved[name] is None:
                delattr(owner, name)
            else:
                setattr(owner, name, saved[name])

    return undo
