"""A migrated module is typed as the original: the same SPMD types, the same errors.

The checker types each Megatron call as the call the core's table names, so a
rewrite into that call must not change what mypy reports.  The module below
uses the functions with a declared group, the default group, a group getter,
the flag that picks the backward, and two wrong inputs; mypy checks it and its
migration in one run.  The errors name the call differently (the Megatron
function, "that is" its equivalent; or the equivalent itself), so they are
compared from "on axis" onwards.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from mypy import api

from tests.plugin.harness import OUTPUT, config_text

pytest.importorskip("libcst", reason="libcst is the codemods extra; make setup installs it")

from spmd_types.codemods.rewrite import migrate_source

ORIGINAL = textwrap.dedent('''\
    from typing import Annotated

    from megatron.core import parallel_state
    from megatron.core.tensor_parallel import (
        all_to_all,
        copy_to_tensor_model_parallel_region,
        gather_from_sequence_parallel_region,
        reduce_from_tensor_model_parallel_region,
        reduce_scatter_to_sequence_parallel_region,
    )
    from torch import Tensor
    from torch.distributed import ProcessGroup

    from spmd_types import Axis, I, S, V


    def block(
        x: Annotated[Tensor, I["tp"]],
        s: Annotated[Tensor, S["tp", 0]],
        v: Annotated[Tensor, V["tp"]],
        tp: Annotated[ProcessGroup, Axis["tp"]],
        ep: Annotated[ProcessGroup, Axis["ep"]],
    ) -> None:
        reveal_type(copy_to_tensor_model_parallel_region(x))
        reveal_type(copy_to_tensor_model_parallel_region(x, group=tp))
        reveal_type(reduce_from_tensor_model_parallel_region(v, tp))
        reveal_type(gather_from_sequence_parallel_region(s, tensor_parallel_output_grad=False, group=tp))
        reveal_type(gather_from_sequence_parallel_region(s, group=parallel_state.get_tensor_model_parallel_group()))
        reveal_type(reduce_scatter_to_sequence_parallel_region(v, group=tp))
        reveal_type(all_to_all(ep, v))
        reduce_from_tensor_model_parallel_region(x)
        copy_to_tensor_model_parallel_region(v, tp)
    ''')


def test_the_migration_is_typed_as_the_original(tmp_path: Path) -> None:
    migration = migrate_source(ORIGINAL, tmp_path / "original.py")
    assert len(migration.rewritten) == 9 and not migration.left
    (tmp_path / "original.py").write_text(ORIGINAL)
    (tmp_path / "migrated.py").write_text(migration.code)
    (tmp_path / "mypy.ini").write_text(config_text())
    stdout, _, _ = api.run(["--config-file", str(tmp_path / "mypy.ini"), "--cache-dir", str(tmp_path / "cache"),
                            "--show-error-codes", "--no-error-summary", "--hide-error-context",
                            str(tmp_path / "original.py"), str(tmp_path / "migrated.py")])
    reports: dict[str, list[tuple[str, str | None, str]]] = {"original.py": [], "migrated.py": []}
    for match in filter(None, map(OUTPUT.match, stdout.splitlines())):
        # An error names the call as written (the Megatron function, or its spmd_types equivalent), also
        # in a fix that replaces it; the rest of the message must be the same.
        message = re.sub(r"replacing the [\w.]+ call", "replacing the call", match["message"])
        reports[Path(match["path"]).name].append((match["kind"], match["code"], message[message.find(" on axis "):]
                                                  if match["kind"] == "error" else message))
    assert reports["original.py"] == reports["migrated.py"]
    assert [kind for kind, _, _ in reports["original.py"]] == ["note"] * 7 + ["error"] * 2
