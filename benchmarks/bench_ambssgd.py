"""Benchmark: one DP-AMBSSGD pass against plain numpy SGD on the same permutation and batches.

Both read the same N x d in-memory data once, in the order of the same random permutation (the
one dp_ambssgd draws from its noise source for the same seed), with the same schedule (T
blocks of s + b records, step size eta). The floor is the fastest honest non-private pass:

    perm = generator.permutation(N)
    for each block t: rows = the b gradient records of block t
        Xb, yb = np.take(X, rows, axis=0), np.take(y, rows)
        w -= eta * Xb.T @ (Xb @ w - yb) / b

(no validation, no DP-STAT records read, no clipping, no noise). ``--route contiguous`` times
``dp_ambssgd(..., shuffle=False)`` against the same loop on consecutive rows (``Xb = X[rows]``,
views, no permutation); ``--route both`` (the default) times both routes in one run, their
pairs interleaved. DP-AMBSSGD adds the
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
      [--route both] [--json benchmarks/results/ambssgd.json]
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


def plain_sgd_contiguous(X: np.ndarray, y: np.ndarray, sched) -> np.ndarray:
    """The contiguous floor: the same loop on consecutive rows (views), no permutation."""
    s, b, eta = sched.stat_size, sched.batch_size, sched.step_size
    w = np.zeros(X.shape[1])
    iterates = np.empty((sched.steps, X.shape[1]))
    for t in range(sched.steps):
        start = t * (s + b) + s
        Xb, yb = X[start : start + b], y[start : start + b]
        w = w - eta * (Xb.T @ (Xb @ w - yb)) / b
        iterates[t] = w
    return iterates


def _stats(times: dict[str, list[float]], cpu: dict[str, list[float]], priv: str, base: str):
    ratios = [a / b for a, b in zip(times[priv], times[base], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpu[priv], cpu[base], strict=True)]
    med = {k: statistics.median(times[k]) for k in (priv, base)}
    return {
        "seconds_median": med,
        "slowdown_paired_median": statistics.median(ratios),
        "slowdown_paired_quartiles": statistics.quantiles(ratios, n=4),
        "slowdown_of_medians": med[priv] / med[base],
        "cpu_slowdown_paired_median": statistics.median(cpu_ratios),
        "cpu_slowdown_paired_quartiles": statistics.quantiles(cpu_ratios, n=4),
        "cpu_slowdown_of_medians": statistics.median(cpu[priv]) / statistics.median(cpu[base]),
    }


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--route", choices=["shuffled", "contiguous", "both"], default="both")
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    routes = ("shuffled", "contiguous") if args.route == "both" else (args.route,)
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

    runs = {
        "shuffled": {
            "dp_ambssgd": lambda: dp_ambssgd(
                X, y, rho=rho, feature_scale=r_x, residual_bound=bound, rng=SEED
            ),
            "plain_sgd": lambda: plain_sgd(X, y, sched, SEED),
        },
        "contiguous": {
            "dp_ambssgd": lambda: dp_ambssgd(
                X, y, rho=rho, feature_scale=r_x, residual_bound=bound, rng=SEED, shuffle=False
            ),
            "plain_sgd": lambda: plain_sgd_contiguous(X, y, sched),
        },
    }

    def timed(fn) -> tuple[float, float]:
        """(wall seconds, this thread's CPU seconds: leaves out waiting for a core)."""
        start, cpu = time.perf_counter(), time.thread_time()
        fn()
        return time.perf_counter() - start, time.thread_time() - cpu

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded runs: InsecureRandomnessWarning
        twin = onepass_sgd(X, y, feature_scale=r_x, rng=SEED).iterates
        if not np.allclose(plain_sgd(X, y, sched, SEED), twin, rtol=1e-9, atol=1e-12):
            sys.exit("the floor does not reproduce onepass_sgd: not the same batches")
        twin = onepass_sgd(X, y, feature_scale=r_x, rng=SEED, shuffle=False).iterates
        if not np.allclose(plain_sgd_contiguous(X, y, sched), twin, rtol=1e-9, atol=1e-12):
            sys.exit("the contiguous floor does not reproduce onepass_sgd(shuffle=False)")
        steps = runs["shuffled"]["dp_ambssgd"]().config["steps"]  # also a warm-up
        names = [f"{route}/{name}" for route in routes for name in ("dp_ambssgd", "plain_sgd")]
        times: dict[str, list[float]] = {k: [] for k in names}
        cpu: dict[str, list[float]] = {k: [] for k in names}
        for k in range(args.repeats):
            for route in routes:
                order = ("dp_ambssgd", "plain_sgd") if k % 2 == 0 else ("plain_sgd", "dp_ambssgd")
                for name in order:
                    wall, thread = timed(runs[route][name])
                    times[f"{route}/{name}"].append(wall)
                    cpu[f"{route}/{name}"].append(thread)
    result = {
        "n": n,
        "d": d,
        "steps": steps,
        "stat_size": sched.stat_size,
        "batch_size": sched.batch_size,
        "repeats": args.repeats,
        "seconds": times,
        "cpu_seconds": cpu,
        "routes": {r: _stats(times, cpu, f"{r}/dp_ambssgd", f"{r}/plain_sgd") for r in routes},
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "machine": machine()
        | {"threads": {v: os.environ[v] for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}},
        "command": command(),
    }
    for route, st in result["routes"].items():
        med = st["seconds_median"]
        q1, _, q3 = st["slowdown_paired_quartiles"]
        print(
            f"{route}: N={n} d={d} T={steps}: dp_ambssgd {med[f'{route}/dp_ambssgd']:.3f} s, "
            f"plain numpy SGD {med[f'{route}/plain_sgd']:.3f} s (medians); slowdown "
            f"{st['slowdown_paired_median']:.2f}x (median of {args.repeats} paired ratios, "
            f"quartiles {q1:.2f}-{q3:.2f}; {st['slowdown_of_medians']:.2f}x of medians); CPU "
            f"time: {st['cpu_slowdown_paired_median']:.2f}x paired, "
            f"{st['cpu_slowdown_of_medians']:.2f}x of medians"
        )
    print(f"load {load_start[0]:.1f} -> {result['load_average']['end'][0]:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
