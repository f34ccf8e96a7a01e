"""Benchmark: peak extra memory of a default ``dpfit.ols`` fit against scikit-learn's
``LinearRegression`` and statsmodels' ``OLS(...).fit(cov_type="HC1")`` on the same frame.

The frame: n records of p features uniform on [0, 10] (public bounds (0, 10)) and a linear
response with N(0, 1) errors, y bounds (-60, 60); n = 1e6, p = 20 by default (168 MB).
Each library runs in a fresh subprocess (``--worker``) that builds the frame, makes one
small warm-up fit (modules imported on first use are not data), and then measures one fit
on the whole frame two ways:

* ``tracemalloc``: the peak of the memory traced by Python's allocator during the fit minus
  the traced memory before it (numpy and pandas report their arrays to tracemalloc);
* ``rss``: the peak resident set size during the fit (``VmHWM`` of /proc/self/status, reset
  just before the fit by writing 5 to /proc/self/clear_refs) minus the resident size before
  it; this includes BLAS and allocator buffers that tracemalloc does not see.

Both are reported as multiples of the frame's ``memory_usage(deep=True)``.

    dpfit.ols("y ~ x1 + ... + x20", frame, rho=1, bounds=..., y_bounds=(-60, 60))
    LinearRegression().fit(frame[features], frame["y"])
    sm.OLS(frame["y"], sm.add_constant(frame[features])).fit(cov_type="HC1")

Run:  .venv/bin/python benchmarks/bench_ols_memory.py [--n 1000000] [--p 20]
      [--json benchmarks/results/ols_memory.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported: one BLAS thread for each

import argparse  # noqa: E402 - after the thread settings
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tracemalloc  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # noqa: E402 - this folder's helper

LIBRARIES = ("dpfit", "sklearn", "statsmodels")


def frame(n: int, p: int, seed: int = 0) -> pd.DataFrame:
    """Features uniform on [0, 10], y = x' beta + N(0, 1) with beta evenly in [-1, 1]."""
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    columns = {f"x{j}": gen.uniform(0.0, 10.0, n) for j in range(1, p + 1)}
    df = pd.DataFrame(columns)
    df["y"] = df.to_numpy() @ np.linspace(-1.0, 1.0, p) + gen.standard_normal(n)
    return df


def fitter(library: str, p: int):
    """The fit of ``library`` on a frame (a function of the frame)."""
    features = [f"x{j}" for j in range(1, p + 1)]
    if library == "dpfit":
        import dpfit

        formula = "y ~ " + " + ".join(features)
        bounds = {name: (0.0, 10.0) for name in features}
        return lambda df: dpfit.ols(
            formula, df, rho=1.0, bounds=bounds, y_bounds=(-60.0, 60.0), random_state=0
        )
    if library == "sklearn":
        from sklearn.linear_model import LinearRegression

        return lambda df: LinearRegression().fit(df[features], df["y"])
    import statsmodels.api as sm

    return lambda df: sm.OLS(df["y"], sm.add_constant(df[features])).fit(cov_type="HC1")


def _rss(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def worker(library: str, n: int, p: int) -> dict:
    """One library's measurements in this (fresh) process."""
    warnings.simplefilter("ignore")  # seeded-noise and bounds notes are not what is measured
    df = frame(n, p)
    size = int(df.memory_usage(deep=True).sum())
    fit = fitter(library, p)
    fit(df.iloc[:2000].copy())  # warm-up: imports and caches
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident size
    rss_before = _rss("VmRSS")
    tracemalloc.start()
    traced_before = tracemalloc.get_traced_memory()[0]
    fit(df)
    traced_peak = tracemalloc.get_traced_memory()[1] - traced_before
    tracemalloc.stop()
    rss_peak = _rss("VmHWM") - rss_before
    return {
        "library": library,
        "frame_bytes": size,
        "tracemalloc_peak_bytes": traced_peak,
        "rss_peak_bytes": rss_peak,
        "tracemalloc_x_frame": traced_peak / size,
        "rss_x_frame": rss_peak / size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.p)))
        return
    out = {"machine": machine(), "command": command(), "n": args.n, "p": args.p, "results": []}
    for library in LIBRARIES:
        run = subprocess.run(
            [sys.executable, __file__, "--worker", library, "--n", str(args.n), "--p", str(args.p)],
            check=True,
            capture_output=True,
            text=True,
        )
        row = json.loads(run.stdout.strip().splitlines()[-1])
        out["results"].append(row)
        print(
            f"{library:12s} tracemalloc {row['tracemalloc_x_frame']:5.2f}x  "
            f"rss {row['rss_x_frame']:5.2f}x  of the frame ({row['frame_bytes'] / 1e6:.0f} MB)",
            flush=True,
        )
    out["load_average_at_end"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
