"""The two BLAS passes of a least-squares gradient with X in row-major and in column-major order.

A DP-GD step (``algorithms._kernels.LeastSquaresSums``) and the non-private floor of
``bench_dp_gd.py grid`` both compute r = X theta - y and X^T r with numpy on a C-ordered
(row-major) X. For a narrow X (p = 10) these are matrix-vector products with inner
dimension p (row-major X theta: n dot products of length p) or with p outputs (X^T r), the
shapes that BLAS handles worst. On a column-major copy of X the same products are p axpys of
length n and p dot products of length n. This script times the passes both ways, interleaved,
by the thread's CPU time, and reports how far the results differ: the layouts add the same
products in another order, so the results differ in their last bits (a trajectory would not
be bit-identical to a row-major one).

Command (from the repository root; BLAS single-threaded):
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/bench_gemv_layout.py --repeats 9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # this folder's helper

RESULTS = Path(__file__).resolve().parent / "results"


def _passes(X: np.ndarray, y: np.ndarray, theta: np.ndarray, r: np.ndarray, steps: int) -> None:
    """``steps`` times r = X theta - y into a buffer, then X^T r (as the DP-GD kernel does)."""
    XT = X.T
    for _ in range(steps):
        np.matmul(X, theta, out=r)
        np.subtract(r, y, out=r)
        XT @ r


def _floor(X: np.ndarray, y: np.ndarray, theta: np.ndarray, steps: int) -> None:
    """``bench_dp_gd.py grid``'s floor: theta - eta * X^T (X theta - y) / n, on row-major X."""
    for _ in range(steps):
        theta - 0.2 * (X.T @ (X @ theta - y)) / X.shape[0]


def bench(n: int, p: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)  # benchmark data, not privacy noise
    X = rng.standard_normal((n, p))
    y, theta = rng.standard_normal(n), rng.standard_normal(p)
    XF = np.asfortranarray(X)
    r = np.empty(n)
    steps = max(10, int(2e8 / (n * p)))
    runs = {
        "floor_row_major": lambda: _floor(X, y, theta, steps),
        "passes_row_major": lambda: _passes(X, y, theta, r, steps),
        "passes_column_major": lambda: _passes(XF, y, theta, r, steps),
    }
    for fn in runs.values():
        fn()  # warm-up
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.thread_time()
            fn()
            cpu[name].append((time.thread_time() - start) / steps)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    row, col = X.T @ (X @ theta - y), XF.T @ (XF @ theta - y)
    return {
        "steps": steps,
        "cpu_median_s_per_step": med,
        "column_over_row_major": med["passes_column_major"] / med["passes_row_major"],
        "column_major_passes_over_floor": med["passes_column_major"] / med["floor_row_major"],
        "max_relative_difference": float(np.max(np.abs(row - col)) / np.max(np.abs(row))),
        "cpu_s_per_step": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e4x10,1e5x10,1e4x100")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", type=Path, default=RESULTS / "gemv_layout.json")
    args = parser.parse_args()
    info = machine()
    sizes = [tuple(int(float(v)) for v in item.split("x")) for item in args.sizes.split(",")]
    out = {f"{n}x{p}": bench(n, p, args.repeats) for n, p in sizes}
    info["load_average_at_end"] = os.getloadavg()
    record = {"command": command(), "machine": info, "result": out}
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    for key, row in out.items():
        med = row["cpu_median_s_per_step"]
        print(
            f"{key}: floor {med['floor_row_major'] * 1e6:.1f} us, passes row-major "
            f"{med['passes_row_major'] * 1e6:.1f} us, column-major "
            f"{med['passes_column_major'] * 1e6:.1f} us "
            f"({row['column_over_row_major']:.2f}x; {row['column_major_passes_over_floor']:.2f}x "
            f"the floor); results differ by {row['max_relative_difference']:.1e} relative"
        )
    print(f"load {info['load_average_at_start'][0]:.1f} -> {info['load_average_at_end'][0]:.1f}")


if __name__ == "__main__":
    main()
