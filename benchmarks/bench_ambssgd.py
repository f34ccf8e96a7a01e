"""Benchmark: throughput of one DP-AMBSSGD pass against plain one-pass SGD in the same run.

Both read the same N x d in-memory data once, in the order of the same random permutation,
with the same schedule (T blocks of s + b records, step size eta): DP-AMBSSGD adds DP-STAT
(one sort of s residuals and K + 1 charged noisy counts per block), per-example clipping (row
norms and factors) and a charged Gaussian release per block; the plain twin
(:func:`dpfit.baselines.onepass_sgd.onepass_sgd`) takes the unclipped, noiseless mean
gradient. Each is timed end to end (validation, permutation, gathers, steps), alternately,
``--repeats`` times; the reported throughput is rows / median seconds, and the slowdown is the
median over the alternating pairs of (private seconds / plain seconds), which is robust to the
load of a shared machine drifting during the run. Target: the private pass within 1.5x of the
plain one at N = 1e6, d = 32.

Run:  python benchmarks/bench_ambssgd.py [--n 1000000] [--d 32] [--repeats 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
import warnings

import numpy as np

from dpfit.algorithms.ambssgd import dp_ambssgd
from dpfit.baselines.onepass_sgd import onepass_sgd
from dpfit.theory.ambssgd import rho_for_epsilon


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    n, d = args.n, args.d

    rng = np.random.default_rng(0)  # benchmark data
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((n, d))
    y = X @ w + rng.standard_normal(n)
    r_x = math.sqrt(d + 2)
    rho = rho_for_epsilon(1.0, 1e-6)
    bound = math.sqrt(d) * 2 * math.log(n)

    def private():
        return dp_ambssgd(X, y, rho=rho, feature_scale=r_x, residual_bound=bound, rng=1)

    def plain():
        return onepass_sgd(X, y, feature_scale=r_x, rng=1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded runs: InsecureRandomnessWarning
        private(), plain()  # warm-up (imports, page faults)
        times = {"dp_ambssgd": [], "onepass_sgd": []}
        for _ in range(args.repeats):
            times["dp_ambssgd"].append(_timed(private))
            times["onepass_sgd"].append(_timed(plain))
        traj = private()
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "n": n,
        "d": d,
        "steps": traj.config["steps"],
        "repeats": args.repeats,
        "seconds_median": med,
        "seconds_min": {k: min(v) for k, v in times.items()},
        "rows_per_second": {k: n / s for k, s in med.items()},
        "slowdown_paired_median": statistics.median(
            a / b for a, b in zip(times["dp_ambssgd"], times["onepass_sgd"], strict=True)
        ),
        "slowdown_median": med["dp_ambssgd"] / med["onepass_sgd"],
        "slowdown_min": min(times["dp_ambssgd"]) / min(times["onepass_sgd"]),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
    }
    print(
        f"N={n} d={d} T={result['steps']}: dp_ambssgd {result['rows_per_second']['dp_ambssgd']:.3g}"
        f" rows/s, onepass_sgd {result['rows_per_second']['onepass_sgd']:.3g} rows/s, "
        f"slowdown {result['slowdown_paired_median']:.2f}x (median of {args.repeats} paired "
        f"ratios; {result['slowdown_median']:.2f}x of medians, {result['slowdown_min']:.2f}x of "
        "minima)"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
