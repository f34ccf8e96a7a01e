"""Benchmark: per-step cost of correlated-noise streams vs independent noise, and banded utility.

Part 1 (time): for d = 1e6 (default), the cost of step t of nu-DP-FTRL grows linearly in t
(the noise of step t combines t + 1 rows). We time single steps at several t for the
"regenerate" (O(d) memory) and "buffered" modes and for independent noise (DP-SGD: one row per
step), fit cost(t) = a + b t, and extrapolate the mean per-step cost over T = 2000 steps
(a + b (T - 1) / 2). The FFT mode is timed end to end at a small T (it holds T x d floats).
An end-to-end run at T = 2000 and d = 1e6 is not feasible on a 2-core machine with 23 GB
(regenerate: ~2e12 normal draws; buffered/fft: a 16 GB noise buffer); the script says so.

Part 2 (utility): the banded (truncated) nu-DP-FTRL mechanism's objective
sens_{k,b}^2 x ||A B||_F^2 against exact nu-DP-FTRL at the CIFAR-10 geometry
(T = 2000, k = 20, b = 100) and nu = select_nu (spec §2.6-2.7).

Part 3 (--default): the default stream (``mode="auto"``) of nu-DP-FTRL against independent
noise, every step of a whole run, timed step by step and interleaved (one independent step,
then one default step), one BLAS thread: the ratio of median per-step costs overall and per
fifth of the run (flat in t), and the choice ``"auto"`` made with its error ratio.

Part 4 (--whole): whole runs, construction included, interleaved: the default stream
(``select_nu``, ``nu_dpftrl``, ``correlated_noise(mode="auto")`` with the per-process BLT
cache cleared first, so every run pays the BLT fit, then T steps) against an independent-noise
run (``dpsgd``, ``correlated_noise``, T steps); and the independent stream's step against the
bare NumPy draw ``value + sigma * gen.standard_normal(d)`` with a Philox generator (the bit
generator of dpfit's regenerable rows) and with NumPy's default PCG64. One BLAS thread;
medians of paired ratios over ``--repeats``.

Run:  python benchmarks/bench_ftrl_streams.py  [--dim 1000000] [--json out.json]
      python benchmarks/bench_ftrl_streams.py --default --dim 100000 --steps 1000 \
          --participations 10 --separation 100 --json out.json
      python benchmarks/bench_ftrl_streams.py --whole --dim 100000 --steps 1000 \
          --participations 10 --separation 100 --repeats 7 --json out.json
      python benchmarks/bench_ftrl_streams.py --modes regenerate --probes 1,64,512,1999
      (measures step t = 1999, the last step of T = 2000, directly in O(d) memory)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from dpfit.mechanisms import make_noise_source
from dpfit.noise import banded, correlated_noise, dpsgd, nu_dpftrl, select_nu
from dpfit.privacy import PrivacyLedger

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # this folder's helper

T_TARGET = 2000


def _stream(mech, dim, mode, seed=0, **pattern):
    return correlated_noise(
        mech,
        dim=dim,
        clip=1.0,
        batch_size=1,
        noise_std=1.0,
        ledger=PrivacyLedger(),
        rng=make_noise_source(seed),
        mode=mode,
        max_buffer_bytes=1 << 34,
        **pattern,
    )


def step_costs(mech_factory, dim: int, mode: str, probes: list[int]) -> dict[int, float]:
    """Seconds of step t for each t in ``probes`` (noise generation and release only)."""
    out = {}
    value = np.zeros(dim)
    for t in probes:
        stream = _stream(mech_factory(t + 1), dim, mode)
        for _ in range(t):  # advance without timing (rows before t are drawn or cached)
            stream._rows.release(value, value)  # benchmark-only: skip earlier steps
        if mode == "buffered":
            stream._rows.block(0, t)  # fill the cache as a real run would have
        start = time.perf_counter()
        stream.privatize(value)
        out[t] = time.perf_counter() - start
    return out


def fit_linear(costs: dict[int, float]) -> tuple[float, float]:
    t = np.array(list(costs), dtype=float)
    c = np.array(list(costs.values()))
    b, a = np.polyfit(t, c, 1)
    return float(a), float(b)


def fft_total(dim: int, steps: int) -> float:
    start = time.perf_counter()
    stream = _stream(nu_dpftrl(0.01, steps=steps), dim, "fft")
    value = np.zeros(dim)
    for _ in range(steps):
        stream.privatize(value)
    return time.perf_counter() - start


def banded_utility(steps=2000, k=20, b=100, bands=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)):
    nu = select_nu(steps, participations=k, separation=b).nu
    exact = nu_dpftrl(nu, steps=steps)
    j_exact = exact.sensitivity_squared(k, b) * exact.prefix_error()
    sgd = dpsgd(steps)
    rows = [
        {
            "bands": "dp-sgd",
            "sens2": float(sgd.sensitivity_squared(k, b)),
            "prefix_error": sgd.prefix_error(),
            "ratio": float(sgd.sensitivity_squared(k, b) * sgd.prefix_error() / j_exact),
        }
    ]
    for m in bands:
        mech = banded(exact, m)
        s2 = mech.sensitivity_squared(k, b)
        rows.append(
            {
                "bands": m,
                "monotone_inverse": mech.monotone,
                "sens2": float(s2),
                "prefix_error": mech.prefix_error(),
                "ratio": float(s2 * mech.prefix_error() / j_exact),
            }
        )
    return {
        "nu": nu,
        "J_exact": j_exact,
        "sens2_exact": exact.sensitivity_squared(k, b),
        "rows": rows,
    }


def default_stream(dim: int, steps: int, k: int, b: int | None) -> dict:
    """Every step of the default nu-DP-FTRL stream vs independent noise, interleaved."""
    from threadpoolctl import threadpool_limits

    pattern = dict(participations=k, separation=b)
    with threadpool_limits(limits=1):
        nu = select_nu(steps, **pattern).nu
        start = time.perf_counter()
        default = _stream(nu_dpftrl(nu, steps=steps), dim, "auto", **pattern)
        setup = time.perf_counter() - start
        indep = _stream(dpsgd(steps), dim, "auto", **pattern)
        value = np.zeros(dim)
        t_ind, t_def = np.empty(steps), np.empty(steps)
        for t in range(steps):
            s0 = time.perf_counter()
            indep.privatize(value)
            s1 = time.perf_counter()
            default.privatize(value)
            s2 = time.perf_counter()
            t_ind[t], t_def[t] = s1 - s0, s2 - s1
    fifths = np.array_split(np.arange(steps), 5)
    return {
        "dim": dim,
        "steps": steps,
        "participations": k,
        "separation": b,
        "nu": nu,
        "choice": str(default.choice),
        "error_ratio": default.choice.error_ratio,
        "setup_s": setup,
        "independent_median_s": float(np.median(t_ind)),
        "default_median_s": float(np.median(t_def)),
        "ratio_of_medians": float(np.median(t_def) / np.median(t_ind)),
        "median_of_paired_ratios": float(np.median(t_def / t_ind)),
        "ratio_by_fifth": [float(np.median(t_def[i]) / np.median(t_ind[i])) for i in fifths],
    }


def whole_runs(dim: int, steps: int, k: int, b: int | None, repeats: int) -> dict:
    """Part 4: whole default and independent runs, and steps against the bare draw."""
    import statistics

    from threadpoolctl import threadpool_limits

    blt = importlib.import_module("dpfit.noise.blt")  # the module (the package exports blt())

    pattern = dict(participations=k, separation=b)
    value = np.zeros(dim)

    def default_run() -> str:
        blt._optimal_parameters.cache_clear()  # every run pays the BLT fit
        nu = select_nu(steps, **pattern).nu
        stream = _stream(nu_dpftrl(nu, steps=steps), dim, "auto", **pattern)
        for _ in range(steps):
            stream.privatize(value)
        return str(stream.choice)

    def independent_run() -> None:
        stream = _stream(dpsgd(steps), dim, "auto", **pattern)
        for _ in range(steps):
            stream.privatize(value)

    def cpu(fn) -> float:
        start = time.thread_time()
        fn()
        return time.thread_time() - start

    philox = np.random.Generator(np.random.Philox(0))  # benchmark draws, not privacy noise
    pcg = np.random.default_rng(0)
    per_step = 200
    stepped = _stream(dpsgd(per_step * (repeats + 1)), dim, "auto")
    draws = {
        "independent_stream": lambda: [stepped.privatize(value) for _ in range(per_step)],
        "bare_philox": lambda: [value + 1.0 * philox.standard_normal(dim) for _ in range(per_step)],
        "bare_pcg64": lambda: [value + 1.0 * pcg.standard_normal(dim) for _ in range(per_step)],
    }
    times: dict[str, list[float]] = {name: [] for name in ("default", "independent", *draws)}
    with threadpool_limits(limits=1):
        choice = default_run()  # warm-up (imports, allocator)
        independent_run()
        for fn in draws.values():
            fn()
        for i in range(repeats):
            pair = [("default", default_run), ("independent", independent_run)]
            for name, fn in pair if i % 2 == 0 else pair[::-1]:
                times[name].append(cpu(fn))
            for name, fn in draws.items():
                times[name].append(cpu(fn) / per_step)

    def paired(a: str, c: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[c], strict=True))

    return {
        "dim": dim,
        "steps": steps,
        "participations": k,
        "separation": b,
        "repeats": repeats,
        "choice": choice,
        "cpu_seconds": times,
        "medians_s": {name: statistics.median(v) for name, v in times.items()},
        "whole_run_default_over_independent": paired("default", "independent"),
        "independent_step_over_bare_philox": paired("independent_stream", "bare_philox"),
        "independent_step_over_bare_pcg64": paired("independent_stream", "bare_pcg64"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=1_000_000)
    parser.add_argument("--probes", default="1,4,16,32,64")
    parser.add_argument("--fft-steps", type=int, default=32)
    parser.add_argument(
        "--modes",
        default="regenerate,buffered",
        help="stream modes to probe; buffered needs t x d floats of memory at probe t",
    )
    parser.add_argument("--json", default=None)
    parser.add_argument("--default", action="store_true", help="part 3 only")
    parser.add_argument("--whole", action="store_true", help="part 4 only")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--participations", type=int, default=10)
    parser.add_argument("--separation", type=int, default=100)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # seeded-source warnings: this is a benchmark
    if args.whole:
        start_load = os.getloadavg()
        report = whole_runs(
            args.dim, args.steps, args.participations, args.separation, args.repeats
        )
        report["command"] = command()
        report["machine"] = machine() | {"load_average_at_end": os.getloadavg()}
        report["machine"]["load_average_at_start"] = start_load
        print(json.dumps({k: v for k, v in report.items() if k != "cpu_seconds"}, indent=1))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=1)
        return
    if args.default:
        report = default_stream(args.dim, args.steps, args.participations, args.separation)
        report["machine"] = platform.processor() or platform.machine()
        print(json.dumps(report, indent=1))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=1)
        return
    probes = [int(p) for p in args.probes.split(",")]
    d = args.dim
    report = {"dim": d, "T_target": T_TARGET, "machine": platform.processor() or platform.machine()}
    indep = step_costs(lambda n: dpsgd(n), d, "regenerate", probes[:2])
    report["independent_per_step_s"] = float(np.mean(list(indep.values())))
    for mode in args.modes.split(","):
        costs = step_costs(lambda n: nu_dpftrl(0.01, steps=n), d, mode, probes)
        a, b = fit_linear(costs)
        report[mode] = {
            "probes_s": {str(k): v for k, v in costs.items()},
            "fit_a_s": a,
            "fit_b_s_per_row": b,
            "mean_per_step_T2000_s": a + b * (T_TARGET - 1) / 2,
            "total_T2000_hours": (a + b * (T_TARGET - 1) / 2) * T_TARGET / 3600,
        }
    report["fft"] = {
        "steps": args.fft_steps,
        "per_step_s": fft_total(d, args.fft_steps) / args.fft_steps,
    }
    report["buffer_GB_T2000"] = 8 * d * T_TARGET / 1e9
    report["banded"] = banded_utility()
    print(json.dumps(report, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
