"""DP-GD on a LocalCluster over an on-disk Zarr data set, against the same data in memory.

Modes (one per process, so each records its own driver peak RSS):

``dask``
    Starts a LocalCluster (``--workers`` processes x ``--threads`` threads), opens X and y
    from the Zarr group lazily (``dask.array.from_zarr``; optionally only the first
    ``--rows`` records) and runs :func:`dpfit.algorithms.dp_gd` with ``n_public`` declared:
    each step is one distributed reduction over the row chunks (read from disk at every
    step, or from the workers' memory with ``--persist``), the noise is added on the
    driver. Nothing of size n is ever held by the driver.
``memory``
    Reads the first ``--rows`` records into NumPy arrays and runs the same ``dp_gd``.

Prints one JSON line: mode, n, p, steps, seconds per step (wall time of the whole call
divided by ``--steps``; the in-memory figure includes the one-off row-norm pass), the
driver's peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss``: the driver process
only; with ``--workers`` processes the scheduler runs in the driver and the workers in
child processes), the estimation error against the generator's theta*, the machine and
its load average at the end (the machine may be shared).

Usage (after ``benchmarks/make_dask_data.py``)::

    python benchmarks/bench_dask.py dask --steps 5
    python benchmarks/bench_dask.py dask --rows 2000000 --steps 10
    python benchmarks/bench_dask.py memory --rows 2000000 --steps 10
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from dpfit.algorithms import dp_gd

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


def run_memory(args: argparse.Namespace) -> dict:
    import zarr

    group = zarr.open_group(str(args.data), mode="r")
    rows = args.rows or group["X"].shape[0]
    X, y = np.asarray(group["X"][:rows]), np.asarray(group["y"][:rows])
    n, p = X.shape
    start = time.perf_counter()
    traj = fit(X, y, n, p, args.steps)
    return summary(traj, n, p, args.steps, time.perf_counter() - start)


def fit(X, y, n: int, p: int, steps: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise: a benchmark, not a release
        return dp_gd(
            X, y, rho=RHO, clip=5.0 * np.sqrt(p), steps=steps, step_size=STEP_SIZE,
            n_public=n, rng=0,
        )  # fmt: skip


def summary(traj, n: int, p: int, steps: int, seconds: float) -> dict:
    theta_star = np.linspace(-1.0, 1.0, p)  # as in make_dask_data.py
    return {
        "n": n,
        "p": p,
        "steps": steps,
        "seconds_total": round(seconds, 2),
        "seconds_per_step": round(seconds / steps, 3),
        "driver_peak_rss_mb": round(peak_rss_mb()),
        "error_norm": float(np.linalg.norm(traj.estimate - theta_star)),
        "noise_std": traj.config["noise_std"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("dask", "memory"))
    parser.add_argument("--data", type=Path, default=Path("benchmarks/data/dpgd.zarr"))
    parser.add_argument("--rows", type=int, default=0, help="use the first ROWS records")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker-memory", default="3GB")
    parser.add_argument("--persist", action="store_true", help="keep X, y in worker memory")
    args = parser.parse_args()
    result = run_dask(args) if args.mode == "dask" else run_memory(args)
    result = {
        "mode": args.mode,
        **result,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
        "load_average_1_5_15": [round(v, 1) for v in os.getloadavg()],
        "command": " ".join(["python", *sys.argv]),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
