"""spmd_mypy: a mypy plugin that checks SPMD types of distributed PyTorch code.

Enable it with ``plugins = spmd_mypy.plugin`` in the mypy configuration; see
``mypy.ini.example`` and ``docs/`` for the options.

How the plugin applies a rule
-----------------------------

The rules themselves are the core's, ``spmd_types.typesystem``: the op table
(``typesystem/ops.py``) and the join (``typesystem/join.py``) for ordinary ops,
the table of collectives and casts (``typesystem/collectives.py``), and so on.
The plugin is an adapter from mypy's hooks to them, in three steps; for
``a @ b``:

1. :mod:`spmd_mypy.hooks` is the routing table.  mypy asks for a hook for
   ``torch._tensor.Tensor.__matmul__``; the route for tensor methods names the
   handler, :func:`spmd_mypy.ops.check_method`.
2. The handler reads the operands (:mod:`spmd_mypy.values`), applies the
   core's rule (``lookup("torch.Tensor.__matmul__")`` with ``apply_op``) and
   returns a :class:`~spmd_mypy.verdict.Verdict`: the violations and the
   result's SPMD type.
3. :func:`spmd_mypy.hooks.finish`, the same for every handler, gives mypy the
   result type (:mod:`spmd_mypy.encoding` writes an SPMD type as a mypy type),
   fits it to the declaration it goes into (:mod:`spmd_mypy.boundaries`) and
   reports the violations (:mod:`spmd_mypy.report`).

``all_reduce(x, "tp", src=P, dst=R)`` goes the same way through
:func:`spmd_mypy.collectives.check_collective`, which applies the core's
``check_call_on_axes``.

The other modules:

* handlers, one module per kind of expression: :mod:`~spmd_mypy.ops` (torch
  ops), :mod:`~spmd_mypy.collectives` (``spmd_types``' collectives, casts and
  ``assert_type``), :mod:`~spmd_mypy.ecosystem` (other libraries'
  communication functions), :mod:`~spmd_mypy.gradients` (where a backward pass
  starts), :mod:`~spmd_mypy.boundaries` (calls of annotated callables, returns,
  annotated variables), :mod:`~spmd_mypy.gradual` (plain tensors in code that
  has SPMD types), :mod:`~spmd_mypy.annotations` (the annotations themselves);
  a new capability is a new module beside them, with a route in
  :mod:`~spmd_mypy.hooks`;
* :mod:`~spmd_mypy.session`: everything the plugin knows while mypy runs, one
  object, given to every handler; :mod:`~spmd_mypy.files`: what is known
  about each checked file; :mod:`~spmd_mypy.callables`: which user callables
  declare SPMD types;
* :mod:`~spmd_mypy.fullnames`: every full name the plugin recognizes;
  :mod:`~spmd_mypy.summation`: the input of a reduction, read as a sum;
* :mod:`~spmd_mypy.compat`: every mypy API beyond the documented plugin
  interface; :mod:`~spmd_mypy.error_codes`: the ``spmd-*`` codes;
* :mod:`~spmd_mypy.plugin`: what mypy loads; :mod:`~spmd_mypy.config` and
  :mod:`~spmd_mypy.recommended`: the options and the recommended configuration;
  :mod:`~spmd_mypy.cli`, :mod:`~spmd_mypy.baseline` and
  :mod:`~spmd_mypy.variants`: ``spmd-check``.
"""

__version__ = "0.1.0"
