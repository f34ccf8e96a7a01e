"""Benchmark: one DP-AMBSSGD pass against plain numpy SGD on the same permutation and batches.

Both read the same N x d in-memory data once, in the order of the same random permutation (the
one dp_ambssgd draws from its noise source for the same seed), with the same schedule (T
blocks of s + b records, step size eta). The floor is the fastest honest non-private pass:

    perm = generator.permutation(N)
    for each block t: rows = the b gradient records of block t
        Xb, yb = np.take(X, rows, axis=0), np.take(y, rows)
        w -= eta * Xb.T @ (Xb @ w - yb) / b

(no validation, no DP-STAT records read, no clipping, no noise). DP-AMBSSGD adds the
validation of X (finiteness), DP-STAT on the s further records of each block (a gather, one
residual pass, a count of the residuals at K + 1 levels and one charged release of those K + 1
noisy counts), the per-example clip (row norms and factors) and a charged Gaussian release per
block. Each pass is timed end to end (wall clock and the thread's CPU time), in pairs whose
order alternates, ``--repeats`` times, with one BLAS / OpenMP thread; the slowdown is the
median of the paired ratios (private seconds / plain seconds), robust to the load of a shared
machine drifting during the run. Before timing, the floor is checked against
:func:`dpfit.baselines.onepass_sgd.onepass_sgd` (same iterates to rounding), so it really uses
the same permutation and batches. Target (issue 19): at most 1.3x at N = 1e6, d = 32.

Run:  .venv/bin/python benchmarks/bench_ambssgd.py [--n 1000000] [--d 32] [--repeats 9]
      [--json benchmarks/results/ambssgd.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported: one thread for both passes

import argparse  # noqa: E402 - after the thread settings
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dpfit.algorithms.ambssgd import dp_ambssgd  # noqa: E402
from dpfit.baselines.onepass_sgd import onepass_sgd  # noqa: E402
from dpfit.mechanisms import make_noise_source  # noqa: E402
from dpfit.theory.ambssgd import ambssgd_schedule, rho_for_epsilon  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # noqa: E402 - this folder's helper

SEED = 1


def plain_sgd(X: np.ndarray, y: np.ndarray, sched, seed: int) -> np.ndarray:
    """The floor: non-private one-pass SGD on dp_ambssgd's permutation and gradient batches."""
    perm = make_noise_source(seed).generator.permutation(X.shape[0])
    s, b, eta = sched.stat_size, sched.batch_size, sched.step_size
    w = np.zeros(X.shape[1])
    iterates = np.empty((sched.steps, X.shape[1]))
    for t in range(sched.steps):
        rows = perm[t * (s + b) + s : (t + 1) * (s + b)]
        Xb, yb = np.take(X, rows, axis=0), np.take(y, rows)
        w = w - eta * (Xb.T @ (Xb @ w - yb)) / b
        iterates[t] = w
    return iterates


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    n, d = args.n, args.d

    rng = np.random.default_rng(0)  # benchmark data, not privacy noise
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((n, d))
    y = X @ w + rng.standard_normal(n)
    r_x = math.sqrt(d + 2)
    rho = rho_for_epsilon(1.0, 1e-6)
    bound = math.sqrt(d) * 2 * math.log(n)
    sched = ambssgd_schedule(n, feature_scale=r_x)
    load_start = os.getloadavg()

    def private():
        return dp_ambssgd(X, y, rho=rho, feature_scale=r_x, residual_bound=bound, rng=SEED)

    def plain():
        return plain_sgd(X, y, sched, SEED)

    def timed(fn) -> tuple[float, float]:
        """(wall seconds, this thread's CPU seconds: leaves out waiting for a core)."""
        start, cpu = time.perf_counter(), time.thread_time()
        fn()
        return time.perf_counter() - start, time.thread_time() - cpu

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded runs: InsecureRandomnessWarning
        twin = onepass_sgd(X, y, feature_scale=r_x, rng=SEED).iterates
        if not np.allclose(plain(), twin, rtol=1e-9, atol=1e-12):
            sys.exit("the floor does not reproduce onepass_sgd: not the same batches")
        steps = private().config["steps"]  # also the warm-up
        times: dict[str, list[float]] = {"dp_ambssgd": [], "plain_sgd": []}
        cpu: dict[str, list[float]] = {"dp_ambssgd": [], "plain_sgd": []}
        for k in range(args.repeats):
            order = ("dp_ambssgd", "plain_sgd") if k % 2 == 0 else ("plain_sgd", "dp_ambssgd")
            for name in order:
                wall, thread = timed(private if name == "dp_ambssgd" else plain)
                times[name].append(wall)
                cpu[name].append(thread)
    ratios = [a / b for a, b in zip(times["dp_ambssgd"], times["plain_sgd"], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpu["dp_ambssgd"], cpu["plain_sgd"], strict=True)]
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "n": n,
        "d": d,
        "steps": steps,
        "stat_size": sched.stat_size,
        "batch_size": sched.batch_size,
        "repeats": args.repeats,
        "seconds": times,
        "seconds_median": med,
        "rows_per_second": {k: n / s for k, s in med.items()},
        "slowdown_paired_median": statistics.median(ratios),
        "slowdown_paired_quartiles": statistics.quantiles(ratios, n=4),
        "slowdown_of_medians": med["dp_ambssgd"] / med["plain_sgd"],
        "cpu_seconds": cpu,
        "cpu_slowdown_paired_median": statistics.median(cpu_ratios),
        "cpu_slowdown_paired_quartiles": statistics.quantiles(cpu_ratios, n=4),
        "cpu_slowdown_of_medians": statistics.median(cpu["dp_ambssgd"])
        / statistics.median(cpu["plain_sgd"]),
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "machine": machine()
        | {"threads": {v: os.environ[v] for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}},
        "command": command(),
    }
    q1, _, q3 = result["slowdown_paired_quartiles"]
    print(
        f"N={n} d={d} T={steps}: dp_ambssgd {med['dp_ambssgd']:.3f} s, plain numpy SGD "
        f"{med['plain_sgd']:.3f} s (medians); slowdown {result['slowdown_paired_median']:.2f}x "
        f"(median of {args.repeats} paired ratios, quartiles {q1:.2f}-{q3:.2f}; "
        f"{result['slowdown_of_medians']:.2f}x of medians); CPU time: "
        f"{result['cpu_slowdown_paired_median']:.2f}x paired, "
        f"{result['cpu_slowdown_of_medians']:.2f}x of medians; load {load_start[0]:.1f} -> "
        f"{result['load_average']['end'][0]:.1f}"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
