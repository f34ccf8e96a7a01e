"""One default DPLinearRegression fit (preconditioned, population interval) in memory and on Dask.

Generates X (``--rows`` x ``--cols``, N(0, 1) entries) and y = 1 + X theta* + N(0, 1) on the
driver, gives the same records to a LocalCluster (``--workers`` processes x ``--threads``
threads, row chunks of ``--chunk-rows``, persisted there), and then, ``--repeats`` times
with the order alternating, times one whole default fit on each route:
``DPLinearRegression(rho, bounds=[(-5, 5)] * p, y_bounds=(-25, 25), n_public=n)``: the
releases X'X/n with X'y/n, the residual scale, 200 whitened DP-GD steps, the Huber Hessian
and Omega (docs/dask.md, "Population intervals on Dask"). The Dask time includes what a fit
does once (the public rescaling, checks, persisting the design and the whitened rows). One
untimed warm-up fit of each route comes first. Prints one JSON object: the median seconds
per fit, the ratio of medians (Dask / memory), the largest relative gap between the two
routes' estimates and interval ends, the machine (:mod:`_machine`) and the load before and
after.

Usage::

    python benchmarks/bench_dask_population.py --rows 1000000 --cols 10 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings

import numpy as np

from _machine import command, machine

SEED = 20261124


def _fit(X, y, n: int, p: int, seed: int, **kw):
    from dpfit import DPLinearRegression
    from dpfit.exceptions import InsecureRandomnessWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        start = time.perf_counter()
        model = DPLinearRegression(
            rho=0.5, bounds=[(-5.0, 5.0)] * p, y_bounds=(-25.0, 25.0), random_state=seed, **kw
        ).fit(X, y)
        seconds = time.perf_counter() - start
    return seconds, np.r_[model.intercept_, model.coef_, model.conf_int().to_numpy().ravel()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    args = parser.parse_args()
    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    n, p = args.rows, args.cols
    rng = np.random.default_rng(SEED)
    X = rng.standard_normal((n, p))
    y = 1.0 + X @ np.linspace(-1.0, 1.0, p) + rng.standard_normal(n)
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {"memory": [], "dask": []}
    gaps = []
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=True,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        Xd = da.from_array(X, chunks=(args.chunk_rows, p))
        yd = da.from_array(y, chunks=args.chunk_rows)
        Xd, yd = client.persist([Xd, yd])
        wait([Xd, yd])
        routes = {
            "memory": lambda seed: _fit(X, y, n, p, seed),
            "dask": lambda seed: _fit(Xd, yd, n, p, seed, n_public=n),
        }
        for run in routes.values():  # warm-up: imports, worker pools
            run(0)
        for repeat in range(args.repeats):
            order = list(routes) if repeat % 2 == 0 else list(routes)[::-1]
            out = {}
            for route in order:
                seconds, out[route] = routes[route](repeat + 1)
                times[route].append(seconds)
            gap = np.max(np.abs(out["dask"] - out["memory"]) / np.abs(out["memory"]))
            gaps.append(float(gap))
    mem, lazy = statistics.median(times["memory"]), statistics.median(times["dask"])
    print(
        json.dumps(
            {
                "benchmark": "default DPLinearRegression fit, memory vs Dask",
                "n": n,
                "p": p,
                "workers": args.workers,
                "threads_per_worker": args.threads,
                "chunk_rows": args.chunk_rows,
                "repeats": args.repeats,
                "memory_s_per_fit": round(mem, 2),
                "dask_s_per_fit": round(lazy, 2),
                "ratio_of_medians": round(lazy / mem, 2),
                "seconds": {k: [round(v, 2) for v in vals] for k, vals in times.items()},
                "max_relative_gap_estimate_and_interval": max(gaps),
                "load_average_before": [round(v, 1) for v in load_before],
                "load_average_after": [round(v, 1) for v in os.getloadavg()],
                "machine": machine(),
                "command": command(),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
