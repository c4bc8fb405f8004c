"""The generated parts of the documentation, and the one command that rewrites them all.

Run from the repository root (``make generated-docs`` does the first)::

    python -m tools.docs           # rewrite every generated file that is out of date
    python -m tools.docs --check   # write nothing; exit 1, naming them, if any is out of date

A test (``tests/docs/test_generated.py``) fails while anything is out of date.
The generators (:data:`tools.docs.generators.GENERATORS`), in the order they
run (a later one may read what an earlier one writes):

* ``docstrings``: the typed signature and the table of accepted types of
  each collective's and cast's docstring in ``spmd_types/``
  (:mod:`tools.docs.docstrings`);
* ``type-system``: the tables of ``docs/type-system.md``
  (:mod:`tools.docs.type_system`);
* ``samples``: under each checked code sample of the hand-written pages, what
  mypy prints for it (``tests/docs/snippets.py``, which checks them as the
  tests do);
* ``walkthrough``: under each command of the walk-through pages, what it
  prints when the page's steps are run in a scratch project
  (``tests/docs/walkthrough.py``);
* ``reference``: the API reference, ``docs/reference/``, from the runtime's
  docstrings, the rule core and the topic pages of ``tools/docs/topics/``
  (:mod:`tools.docs.reference`).

Everything but the samples and the walk-throughs is computed without torch or
mypy; the samples need mypy, which reads torch's sources but does not import
torch; the walk-throughs run the command-line tools, in processes of their own.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root, which every path the generators read and write is under."""
