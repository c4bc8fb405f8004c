"""How long importing the rule core and the markers takes, in fresh interpreters.

    python benchmarks/import_time.py [--runs 20]

Prints the median and best of ``--runs`` cold-process imports for each module,
measured inside the child with ``time.perf_counter`` around the import alone.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

MODULES = ("spmd_types.typesystem", "spmd_types", "spmd_mypy.plugin")
SNIPPET = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def measure(module: str, runs: int) -> list[float]:
    return [
        float(subprocess.run([sys.executable, "-c", SNIPPET.format(module=module)],
                             capture_output=True, text=True, check=True).stdout)
        for _ in range(runs)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"{'module':28} {'median ms':>10} {'best ms':>8}")
    for module in MODULES:
        try:
            times = measure(module, args.runs)
        except subprocess.CalledProcessError:
            print(f"{module:28} {'(not importable)':>19}")
            continue
        print(f"{module:28} {statistics.median(times) * 1e3:10.1f} {min(times) * 1e3:8.1f}")


if __name__ == "__main__":
    main()
