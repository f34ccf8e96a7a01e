"""Benchmark: a default ``dpfit.ols`` fit against scikit-learn's ``LinearRegression`` (and
statsmodels' OLS with HC1 standard errors) on the same frame, as ratios in one run.

The frame: n = 2e5 records of p = 20 features uniform on [0, 10] (public bounds (0, 10)) and
a linear response with N(0, 1) errors, y bounds (-60, 60)
(:func:`bench_ols_memory.frame`). Timed end to end, each on the same frame:

    dpfit.ols("y ~ x1 + ... + x20", frame, rho=1, bounds=..., y_bounds=(-60, 60))
    LinearRegression().fit(frame[features], frame["y"])
    sm.OLS(frame["y"], sm.add_constant(frame[features])).fit(cov_type="HC1")

The dpfit fit is the whole default: the formula, every release (preconditioner, private
clip, DP-GD, bread, meat, gap), the bounds check and the result. Each round times the three
in an order that rotates from round to round, with one BLAS thread each (unless the
environment sets it); the statistic is the median over rounds of the paired ratio dpfit /
other, with its quartiles, by wall clock and by the process's CPU time (which leaves out
waiting for a core on a loaded machine).

Run:  .venv/bin/python benchmarks/bench_ols_speed.py [--n 200000] [--p 20] [--repeats 11]
      [--json benchmarks/results/ols_speed.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported: one BLAS thread for each

import argparse  # noqa: E402 - after the thread settings
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # noqa: E402 - this folder's helper
from bench_ols_memory import LIBRARIES, fitter, frame  # noqa: E402


def _timed(fit, df) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fit(df)
    return time.perf_counter() - wall, time.process_time() - cpu


def _quartiles(values: list[float]) -> list[float]:
    return [float(v) for v in np.quantile(values, [0.25, 0.5, 0.75])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # seeded-noise and bounds notes are not what is timed
    df = frame(args.n, args.p)
    fits = {library: fitter(library, args.p) for library in LIBRARIES}
    for fit in fits.values():
        fit(df.iloc[:2000].copy())  # warm-up: imports and caches
    times: dict[str, dict[str, list[float]]] = {lib: {"wall": [], "cpu": []} for lib in fits}
    out = {"machine": machine(), "command": command(), "n": args.n, "p": args.p}
    for r in range(args.repeats):
        order = LIBRARIES[r % 3 :] + LIBRARIES[: r % 3]
        for library in order:
            wall, cpu = _timed(fits[library], df)
            times[library]["wall"].append(wall)
            times[library]["cpu"].append(cpu)
    out["seconds"] = times
    ratios = {}
    for other in LIBRARIES[1:]:
        for clock in ("wall", "cpu"):
            pairs = zip(times["dpfit"][clock], times[other][clock], strict=True)
            paired = [a / b for a, b in pairs]
            ratios[f"dpfit/{other} {clock}"] = {
                "paired_quartiles": _quartiles(paired),
                "ratio_of_medians": statistics.median(times["dpfit"][clock])
                / statistics.median(times[other][clock]),
            }
            q = ratios[f"dpfit/{other} {clock}"]["paired_quartiles"]
            print(f"dpfit / {other:12s} {clock:4s}: median paired {q[1]:5.2f}x "
                  f"(quartiles {q[0]:.2f}-{q[2]:.2f})")  # fmt: skip
    for library in LIBRARIES:
        print(f"{library:12s} median wall {statistics.median(times[library]['wall']):.3f} s")
    out["ratios"] = ratios
    out["load_average_at_end"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
