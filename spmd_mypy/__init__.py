"""spmd_mypy: a mypy plugin that checks SPMD types of distributed PyTorch code.

Enable it with ``plugins = spmd_mypy.plugin`` in the mypy configuration; see
``mypy.ini.example`` and ``docs/`` for the options.
"""

__version__ = "0.1.0"
