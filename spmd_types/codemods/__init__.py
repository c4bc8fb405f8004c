"""Tools that rewrite source code, with libcst (the ``codemods`` extra).

* ``spmd-annotate`` (:mod:`.annotate`) infers SPMD annotations from a run on
  simulated ranks;
* ``spmd-migrate`` (:mod:`.migrate`) rewrites calls of Megatron's mapping
  functions into the ``spmd_types`` calls that the rule core's ecosystem table
  says they are; it imports neither torch nor mypy.
"""
