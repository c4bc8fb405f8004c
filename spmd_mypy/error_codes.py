"""The plugin's mypy error codes, one per :class:`~spmd_types.typesystem.Code`.

mypy checks every ``disable_error_code``/``enable_error_code`` (command line,
configuration sections, inline ``# mypy:`` comments) against the codes it knows
right after it loads the plugins, so :mod:`spmd_mypy.plugin` imports this module
when mypy loads it.  It reads only the core's small code catalogue, which keeps
a warm run (where no hook is ever asked for) free of the rule core.
"""

from __future__ import annotations

from typing import Final

from mypy.errorcodes import ErrorCode

from spmd_types.typesystem import Code

__all__ = ["ANNOTATION", "CODES", "INTERNAL"]

CODES: Final[dict[Code, ErrorCode]] = {code: ErrorCode(code.value, code.description, "SPMD") for code in Code}
ANNOTATION: Final = CODES[Code.ANNOTATION]
INTERNAL: Final = ErrorCode("spmd-internal", "the SPMD plugin could not check this expression", "SPMD")
