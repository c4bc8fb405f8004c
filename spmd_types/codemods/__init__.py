"""Tools that rewrite source code: ``spmd-annotate`` infers SPMD annotations from a run on simulated ranks."""
