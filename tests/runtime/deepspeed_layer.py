"""DeepSpeed's ``deepspeed/sequence/layer.py``, loaded from the installed package without importing DeepSpeed.

``make setup`` installs deepspeed without its dependencies (psutil, pydantic,
hjson, ninja, ...), and ``import deepspeed`` needs them all: its
``__init__`` builds the training engine.  The all-to-all the checker types
(``single_all_to_all`` and ``_SeqAllToAll``) needs only torch and
``deepspeed.comm``'s ``get_world_size`` and ``all_to_all_single``, which are
thin wrappers over ``torch.distributed``'s functions of the same name.  So
the module's own file is executed with those two taken from
``torch.distributed``, and its other imports (einops, the accelerator, the
uneven-heads helpers, used only on paths the tests do not take) replaced by
placeholders that fail if called.  Every line of ``layer.py`` that runs is
DeepSpeed's.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import torch.distributed as dist

__all__ = ["load_layer"]

NAME = "deepspeed.sequence.layer"


def _unused(name: str) -> Any:
    def fail(*args: object, **kwargs: object) -> None:
        raise NotImplementedError(f"{name} is not loaded: the tests run deepspeed/sequence/layer.py alone")

    return fail


def _modules() -> dict[str, types.ModuleType]:
    """The placeholders of layer.py's imports, by module name."""
    comm = types.ModuleType("deepspeed.comm")
    comm.get_world_size = dist.get_world_size  # type: ignore[attr-defined]
    comm.all_to_all_single = dist.all_to_all_single  # type: ignore[attr-defined]
    comm.ProcessGroup = dist.ProcessGroup  # type: ignore[attr-defined]
    modules = {name: types.ModuleType(name) for name in (
        "einops", "deepspeed", "deepspeed.accelerator", "deepspeed.module_inject",
        "deepspeed.module_inject.tp_shard", "deepspeed.utils")}
    modules["deepspeed.comm"] = comm
    modules["einops"].rearrange = _unused("einops.rearrange")  # type: ignore[attr-defined]
    modules["deepspeed.accelerator"].get_accelerator = _unused("get_accelerator")  # type: ignore[attr-defined]
    tp_shard = modules["deepspeed.module_inject.tp_shard"]
    tp_shard.AutoTPMeta = _unused("AutoTPMeta")  # type: ignore[attr-defined]
    tp_shard.get_shard_size_list = _unused("get_shard_size_list")  # type: ignore[attr-defined]
    modules["deepspeed.utils"].groups = types.ModuleType("deepspeed.utils.groups")  # type: ignore[attr-defined]
    modules["deepspeed"].comm = comm  # type: ignore[attr-defined]
    return modules


def load_layer() -> types.ModuleType | None:
    """The module, loaded once per process; ``None`` when deepspeed is not installed."""
    if NAME in sys.modules:
        return sys.modules[NAME]
    spec = importlib.util.find_spec("deepspeed")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "sequence" / "layer.py"
    placeholders = _modules()
    saved = {name: sys.modules.get(name) for name in placeholders}
    sys.modules.update(placeholders)
    try:
        layer_spec = importlib.util.spec_from_file_location(NAME, path)
        assert layer_spec is not None and layer_spec.loader is not None
        module = importlib.util.module_from_spec(layer_spec)
        layer_spec.loader.exec_module(module)
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
    sys.modules[NAME] = module  # its custom op is registered once per process
    return module
