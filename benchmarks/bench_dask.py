"""DP-GD on a LocalCluster against the same data in memory: paired step times, and Zarr runs.

Modes (one per process, so each records its own driver peak RSS):

``compare``
    The per-step cost side by side, in one run. Generates X (``--rows`` x ``--cols``, N(0, 1)
    entries) and y = X theta* + N(0, 1) on the workers of a LocalCluster (``--workers``
    processes x ``--threads`` threads) in row chunks of ``--chunk-rows``, persists them there
    and gathers a copy into the driver. Then, ``--repeats`` times, interleaved (the order of
    the four cases alternates between repeats): :func:`dpfit.algorithms.dp_gd` in memory and
    on the persisted Dask arrays, and :func:`dpfit.ols` (``y ~ x0 + ... ``, public bounds,
    ``precondition=False``) on the pandas frame and on a persisted Dask DataFrame, each with
    ``--steps`` steps (default 20). A fit's seconds per step is the median wall time of its
    steps after the first (:class:`StepTimer`), so one-off costs (checks, building and
    persisting a formula's design, row norms) are left out; one untimed warm-up fit of each
    case comes first. Reports the medians over the repeats, the ratio of medians (Dask /
    memory), the median of the paired ratios, the whole fits' times, the load average
    before and after, and how far the two routes' estimates are apart.
``dask``
    Opens X and y from the Zarr group of ``benchmarks/make_dask_data.py`` lazily
    (``dask.array.from_zarr``; optionally only the first ``--rows`` records) and runs
    ``dp_gd`` with ``n_public`` declared: each step is one distributed reduction over the
    row chunks (read from disk at every step, or from the workers' memory with
    ``--persist``), the noise is added on the driver. Nothing of size n is ever held by
    the driver.
``memory``
    Reads the first ``--rows`` records of the Zarr group into NumPy arrays and runs the same
    ``dp_gd``.

``dask`` and ``memory`` print one JSON line: seconds per step (wall time of the whole call
divided by ``--steps``; the in-memory figure includes the one-off row-norm pass), the driver's
peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss``: the driver process only; with
``--workers`` processes the scheduler runs in the driver and the workers in child
processes), the estimation error against theta*, the machine and its load average at the
end (the machine may be shared).

Usage::

    python benchmarks/bench_dask.py compare --rows 1000000 --cols 20 --repeats 5 --steps 20
    python benchmarks/bench_dask.py dask --steps 5          # after make_dask_data.py
    python benchmarks/bench_dask.py dask --rows 2000000 --steps 10
    python benchmarks/bench_dask.py memory --rows 2000000 --steps 10
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import dpfit
from dpfit.algorithms import dp_gd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_dask_data import chunk, theta_star

#: Public hyperparameters (unit-scale features, noise std 1, theta* in [-1, 1]^p):
#: clip = 5 sigma sqrt(p) (Brown et al. 2024's rule), eta = 0.25.
RHO, STEP_SIZE = 0.1, 0.25


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_dask(args: argparse.Namespace) -> dict:
    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    X = da.from_zarr(str(args.data), component="X")
    y = da.from_zarr(str(args.data), component="y")
    if args.rows:
        X, y = X[: args.rows], y[: args.rows]
    n, p = int(X.shape[0]), int(X.shape[1])
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=True,
            memory_limit=args.worker_memory,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        if args.persist:
            X, y = client.persist([X, y])
            wait([X, y])
        start = time.perf_counter()
        traj = fit(X, y, n, p, args.steps)
        seconds = time.perf_counter() - start
        worker_rss = client.run(lambda: __import__("psutil").Process().memory_info().rss)
    return {
        "workers": args.workers,
        "threads_per_worker": args.threads,
        "chunk_rows": int(X.chunks[0][0]),
        "persisted": args.persist,
        "worker_rss_mb_at_end": [round(v / 2**20) for v in worker_rss.values()],
        **summary(traj, n, p, args.steps, seconds),
    }


#: ``compare``: the data seed, and the public bounds of the formula fits (|x_j| > 5 or
#: |y| > 25 happen with probability < 1e-6 per record; clipped into the bounds if they do).
SEED, X_BOUND, Y_BOUND = 20260101, 5.0, 25.0


def _frame(part: tuple[np.ndarray, np.ndarray], start: int):
    import pandas as pd

    X, y = part
    columns = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    return pd.DataFrame({**columns, "y": y}, index=pd.RangeIndex(start, start + len(y)))


def _persisted_data(client, n: int, p: int, rows: int):
    """X, y (Dask arrays) and the same records as a Dask DataFrame, generated and persisted
    on the workers, and in-memory copies of both gathered into the driver."""
    import dask
    import dask.array as da
    import dask.dataframe as dd
    from dask.distributed import wait

    starts = range(0, n, rows)
    parts = [dask.delayed(chunk)(SEED, i, min(rows, n - a), p) for i, a in enumerate(starts)]
    blocks = list(zip(parts, starts, strict=True))
    X = da.concatenate(
        [da.from_delayed(part[0], (min(rows, n - a), p), np.float64) for part, a in blocks]
    )
    y = da.concatenate(
        [da.from_delayed(part[1], (min(rows, n - a),), np.float64) for part, a in blocks]
    )
    meta = _frame((np.empty((0, p)), np.empty(0)), 0)
    frame = dd.from_delayed([dask.delayed(_frame)(part, a) for part, a in blocks], meta=meta)
    X, y = client.persist([X, y])  # arrays and frames apart: Dask warns on mixed collections
    frame = client.persist(frame)
    wait([X, y, frame])
    X_mem, y_mem = client.compute([X, y], sync=True)
    frame_mem = client.compute(frame, sync=True)
    # What a worker sends can arrive as a misaligned view into the message buffer, on which
    # the in-memory kernel's BLAS calls ran 2.5x slower: give the in-memory route fresh arrays.
    X_mem, y_mem = np.array(X_mem, order="C"), np.array(y_mem, order="C")
    return (X, y, frame), (X_mem, y_mem, frame_mem)


class StepTimer:
    """Wall time of every DP-GD step of the fits that follow: each call of the clipped-gradient
    sum ``least_squares_sums(X, y, clip)(theta)`` (in memory: the row-block kernel; on Dask: the
    distributed reduction, submitted and gathered). The rest of a step (the noise draw and the
    update, on the driver) takes microseconds."""

    def __init__(self) -> None:
        import importlib

        module = importlib.import_module("dpfit.algorithms.dp_gd")  # not the function
        self.seconds: list[float] = []
        real = module.least_squares_sums

        def timed_sums(*args, **kwargs):
            sums = real(*args, **kwargs)

            def timed(theta):
                start = time.perf_counter()
                out = sums(theta)
                self.seconds.append(time.perf_counter() - start)
                return out

            return timed

        module.least_squares_sums = timed_sums

    def step_seconds(self, run) -> tuple[float, Any, float]:
        """Median seconds of the steps of ``run()`` after its first (the first step on Dask
        waits for the persist), its result, and the wall time of the whole call."""
        self.seconds.clear()
        start = time.perf_counter()
        out = run()
        total = time.perf_counter() - start
        return statistics.median(self.seconds[1:]), out, total


def _cases(lazy, memory, n: int, p: int, steps: int):
    """name -> (in-memory fit, Dask fit), each returning the estimate."""
    formula = "y ~ " + " + ".join(f"x{j}" for j in range(p))
    ols_kw = {
        "rho": RHO,
        "bounds": {f"x{j}": (-X_BOUND, X_BOUND) for j in range(p)},
        "y_bounds": (-Y_BOUND, Y_BOUND),
        "interval": None,
        "precondition": False,  # the Dask path runs plain DP-GD; compare the same algorithm
        "bounds_check": 0.0,  # no extra private count: every pass is a DP-GD step
        "n_public": n,
        "random_state": 0,
        "steps": steps,
    }

    def gd(X, y):
        return lambda: fit(X, y, n, p, steps).estimate

    def ols(frame):
        return lambda: quiet(dpfit.ols, formula, frame, **ols_kw).params.to_numpy()

    return {
        "dp_gd": (gd(*memory[:2]), gd(*lazy[:2])),
        "ols": (ols(memory[2]), ols(lazy[2])),
    }


def run_compare(args: argparse.Namespace) -> dict:
    from dask.distributed import Client, LocalCluster

    n, p = args.rows, args.cols
    load_before = os.getloadavg()
    timer = StepTimer()
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=True,
            memory_limit=args.worker_memory,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        lazy, memory = _persisted_data(client, n, p, args.chunk_rows)
        cases = _cases(lazy, memory, n, p, args.steps)
        keys = [f"{name}/{route}" for name in cases for route in ("memory", "dask")]
        per_step, per_fit = {key: [] for key in keys}, {key: [] for key in keys}
        agreement = {}
        for mem_fit, dask_fit in cases.values():  # warm-up: imports, caches, worker pools
            mem_fit(), dask_fit()
        for repeat in range(args.repeats):
            for name, (mem_fit, dask_fit) in cases.items():
                routes = [("memory", mem_fit), ("dask", dask_fit)]
                estimates = {}
                for route, run in routes if repeat % 2 == 0 else routes[::-1]:
                    step, estimates[route], total = timer.step_seconds(run)
                    per_step[f"{name}/{route}"].append(step)
                    per_fit[f"{name}/{route}"].append(total)
                gap = np.max(np.abs(estimates["dask"] - estimates["memory"]))
                agreement[name] = float(gap / np.max(np.abs(estimates["memory"])))
            latest = {key: round(values[-1], 4) for key, values in per_step.items()}
            print(
                f"repeat {repeat + 1}: load {os.getloadavg()[0]:.1f}, s/step {latest}",
                file=sys.stderr,
            )
    summary_ = {}
    for name in cases:
        mem, lazy_ = per_step[f"{name}/memory"], per_step[f"{name}/dask"]
        summary_[name] = {
            "memory_s_per_step": round(statistics.median(mem), 4),
            "dask_s_per_step": round(statistics.median(lazy_), 4),
            "ratio_of_medians": round(statistics.median(lazy_) / statistics.median(mem), 2),
            "median_paired_ratio": round(
                statistics.median(b / a for a, b in zip(mem, lazy_, strict=True)), 2
            ),
            "memory_s_per_fit": round(statistics.median(per_fit[f"{name}/memory"]), 2),
            "dask_s_per_fit": round(statistics.median(per_fit[f"{name}/dask"]), 2),
            "max_relative_difference_of_estimates": agreement[name],
        }
    return {
        "n": n,
        "p": p,
        "chunk_rows": args.chunk_rows,
        "workers": args.workers,
        "threads_per_worker": args.threads,
        "steps": args.steps,
        "repeats": args.repeats,
        "summary": summary_,
        "per_step_seconds": {k: [round(v, 4) for v in vals] for k, vals in per_step.items()},
        "load_average_before": [round(v, 1) for v in load_before],
    }


def run_memory(args: argparse.Namespace) -> dict:
    import zarr

    group = zarr.open_group(str(args.data), mode="r")
    rows = args.rows or group["X"].shape[0]
    X, y = np.asarray(group["X"][:rows]), np.asarray(group["y"][:rows])
    n, p = X.shape
    start = time.perf_counter()
    traj = fit(X, y, n, p, args.steps)
    return summary(traj, n, p, args.steps, time.perf_counter() - start)


def quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise: a benchmark, not a release
        return func(*args, **kwargs)


def fit(X, y, n: int, p: int, steps: int):
    return quiet(
        dp_gd, X, y, rho=RHO, clip=5.0 * np.sqrt(p), steps=steps, step_size=STEP_SIZE,
        n_public=n, rng=0,
    )  # fmt: skip


def summary(traj, n: int, p: int, steps: int, seconds: float) -> dict:
    return {
        "n": n,
        "p": p,
        "steps": steps,
        "seconds_total": round(seconds, 2),
        "seconds_per_step": round(seconds / steps, 3),
        "driver_peak_rss_mb": round(peak_rss_mb()),
        "error_norm": float(np.linalg.norm(traj.estimate - theta_star(p))),
        "noise_std": traj.config["noise_std"],
    }


def machine() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next(
            line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line
        )
    except (OSError, subprocess.CalledProcessError, StopIteration):
        model = platform.processor() or "unknown CPU"
    return f"{model}, {platform.machine()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("compare", "dask", "memory"))
    parser.add_argument("--data", type=Path, default=Path("benchmarks/data/dpgd.zarr"))
    parser.add_argument("--rows", type=int, default=0, help="use the first ROWS records")
    parser.add_argument("--steps", type=int, default=0, help="steps (default 5; compare: 20)")
    parser.add_argument("--cols", type=int, default=20, help="compare: features p")
    parser.add_argument("--chunk-rows", type=int, default=250_000, help="compare: rows a chunk")
    parser.add_argument("--repeats", type=int, default=5, help="compare: interleaved repeats")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker-memory", default="3GB")
    parser.add_argument("--persist", action="store_true", help="keep X, y in worker memory")
    args = parser.parse_args()
    if args.mode == "compare":
        args.rows = args.rows or 1_000_000
        args.steps = args.steps or 20
        result = run_compare(args)
    else:
        args.steps = args.steps or 5
        result = run_dask(args) if args.mode == "dask" else run_memory(args)
    result = {
        "mode": args.mode,
        **result,
        "machine": machine(),
        "load_average_1_5_15": [round(v, 1) for v in os.getloadavg()],
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "dpfit_commit": _commit(),
        "command": " ".join(["python", *sys.argv]),
    }
    print(json.dumps(result))


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


if __name__ == "__main__":
    main()
