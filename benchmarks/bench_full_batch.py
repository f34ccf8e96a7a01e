"""CPU time of whole in-memory runs of the other full-batch algorithms (issue 19).

Two-stage GD (Liang et al. 2025, Alg. 2: the DP-2S-GD loop without noise), noisy GD and
KL-Spider (Menart et al. 2024) on a squared loss: each run is timed by the thread's CPU time
(which leaves out waiting for a core on a shared machine), ``--repeats`` times, the
algorithms interleaved, one BLAS / OpenMP thread. The numbers are absolute, so a before/after
comparison runs this script once per library version (``PYTHONPATH=<old checkout>/src``),
alternately, and compares the medians.

Run:  .venv/bin/python benchmarks/bench_full_batch.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402 - after the thread settings
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dpfit.algorithms import kl_spider, noisy_gd, two_stage_gd  # noqa: E402
from dpfit.losses import SquaredLoss  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # noqa: E402 - this folder's helper


def _runs() -> dict:
    gen = np.random.default_rng(0)  # benchmark data, not privacy noise
    n, q, p = 200_000, 10, 5  # two-stage: instruments Z (n x q), regressors X (n x p)
    Z = gen.standard_normal((n, q))
    X = Z @ (gen.standard_normal((q, p)) / np.sqrt(q)) + gen.standard_normal((n, p))
    y = X @ np.linspace(-1, 1, p) + gen.standard_t(3, size=n)
    d = 20  # loss queries: n x d, a squared loss with a declared bound
    A = gen.standard_normal((n, d)) / np.sqrt(d)
    b = np.clip(A @ np.ones(d) + 0.3 * gen.standard_normal(n), -1.0, 1.0)
    loss = SquaredLoss(y_bound=1.0, radius=2.0)
    kl = {"gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0}
    return {
        "two_stage_gd, 2e5 x (q=10, p=5), 30 steps": lambda: two_stage_gd(
            X, y, Z, steps=30, step_size_theta=0.5, step_size_beta=0.5, clip_theta=5.0,
            clip_beta=8.0,
        ),
        "noisy_gd, 2e5 x 20, 20 steps": lambda: noisy_gd(
            loss, A, b, rho=0.5, steps=20, clip=True, rng=1
        ),
        "kl_spider, 2e5 x 20": lambda: kl_spider(loss, A, b, rho=0.5, rng=1, **kl),
    }  # fmt: skip


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args()
    load_start = os.getloadavg()
    cpu: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded runs: InsecureRandomnessWarning
        runs = _runs()
        for fn in runs.values():
            fn()  # warm-up
        for _ in range(args.repeats):
            for name, fn in runs.items():
                start = time.thread_time()
                fn()
                cpu.setdefault(name, []).append(time.thread_time() - start)
    result = {
        "cpu_seconds": cpu,
        "cpu_seconds_median": {k: statistics.median(v) for k, v in cpu.items()},
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "machine": machine(),
        "command": command(),
    }
    for name, seconds in result["cpu_seconds_median"].items():
        print(f"{name}: {seconds:.3f} s CPU (median of {args.repeats})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
