"""Benchmark: start-up time of the ``dpfit`` command line against ``python -c "import numpy"``.

Each command runs in a fresh interpreter (``sys.executable``), alternately with the numpy
baseline, ``--repeats`` times; the reported ratio is the median over the alternating pairs of
(command seconds / baseline seconds), which is robust to the load of a shared machine drifting
during the run. Target: every command within 3x of the baseline (issue 15).

Run:  python benchmarks/bench_cli_startup.py [--repeats 21] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

BASELINE = [sys.executable, "-c", "import numpy"]
COMMANDS = {
    "dpfit --version": ["--version"],
    "dpfit --help": ["--help"],
    "dpfit fit --help": ["fit", "--help"],
    "dpfit privacy --rho 0.5": ["privacy", "--rho", "0.5"],
    "dpfit budget --help": ["budget", "--help"],
}


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    results = {}
    for label, rest in COMMANDS.items():
        argv = [sys.executable, "-m", "dpfit", *rest]
        _timed(argv)  # warm the file cache
        pairs = [(_timed(argv), _timed(BASELINE)) for _ in range(args.repeats)]
        results[label] = {
            "median_s": statistics.median(c for c, _ in pairs),
            "baseline_median_s": statistics.median(b for _, b in pairs),
            "ratio": statistics.median(c / b for c, b in pairs),
        }
        r = results[label]
        print(
            f"{label:<26} {r['median_s']:.3f} s   import numpy {r['baseline_median_s']:.3f} s"
            f"   ratio {r['ratio']:.2f}"
        )
    if args.json:
        meta = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg()[0],
            "repeats": args.repeats,
        }
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
