"""Distributed-training programs typed with spmd-types, and their buggy twins (``examples.bugs``).

See ``examples/README.md``.  Each example module defines ``EXAMPLE``, whose
``run()`` executes it on simulated ranks and compares it with one device.
"""
