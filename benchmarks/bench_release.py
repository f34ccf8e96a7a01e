"""Benchmarks of one charged Gaussian release and of one ledger charge, against their floors.

Two measurements, each interleaved over ``--repeats`` rounds in one process (single-threaded
BLAS), timed by the wall clock and by the thread's CPU time (which leaves out waiting for a
core on a shared machine), written as JSON to ``benchmarks/results/release_<what>.json``
with the machine, the load average and the command:

``release``  cost per step of the noisy release of a d = 1 query over a T-step run
             (``--steps``, default 1000), against a bare draw ``value + sigma * z`` from the
             same numpy generator. Routes: ``gaussian`` (one :func:`dpfit.mechanisms.gaussian`
             call per step, each charged to a ledger with a budget) and, where this dpfit has
             it, ``releases`` (:func:`dpfit.mechanisms.gaussian_releases`: the T releases
             charged once as one entry, then released step by step). Target: <= 2x the bare
             draw.
``charge``   cost of one zCDP charge ``ledger.charge(GaussianEntry(...))`` in a ledger with a
             :class:`~dpfit.privacy.Budget` (``--charges`` in a row, default 10,000), against
             dp_accounting's RDP accountant ``compose(GaussianDpEvent(...))``, with its default
             orders and with a single order (its smallest per-event work). Target: <= 2x the
             RDP accountant.

Run (from the repository root; dp_accounting comes with the ``test`` extra):
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_release.py release
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_release.py charge
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import dpfit
from dpfit import mechanisms
from dpfit.privacy import Budget, GaussianEntry, PrivacyLedger

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # this folder's helper

RESULTS = Path(__file__).resolve().parent / "results"
SENSITIVITY, NOISE_STD = 1.0, 1000.0


def _release_routes(steps: int) -> dict:
    value = np.zeros(1)

    def bare() -> None:
        gen = np.random.default_rng(1)
        for _ in range(steps):
            value + NOISE_STD * gen.standard_normal(value.shape)

    def per_step() -> None:
        source = mechanisms.make_noise_source(1)
        ledger = PrivacyLedger(budget=Budget(rho=1.0))
        for _ in range(steps):
            mechanisms.gaussian(
                value,
                sensitivity=SENSITIVITY,
                noise_std=NOISE_STD,
                ledger=ledger,
                rng=source,
                label="bench/gradient",
            )

    routes = {"bare": bare, "gaussian": per_step}
    if hasattr(mechanisms, "gaussian_releases"):

        def charged_once() -> None:
            source = mechanisms.make_noise_source(1)
            ledger = PrivacyLedger(budget=Budget(rho=1.0))
            releases = mechanisms.gaussian_releases(
                count=steps,
                sensitivity=SENSITIVITY,
                noise_std=NOISE_STD,
                ledger=ledger,
                rng=source,
                label="bench/gradient",
            )
            for _ in range(steps):
                releases.release(value)

        routes["releases"] = charged_once
    return routes


def _charge_routes(charges: int) -> dict:
    def dpfit_charge() -> None:
        ledger = PrivacyLedger(budget=Budget(rho=1.0))
        for _ in range(charges):
            ledger.charge(
                GaussianEntry(label="bench/query", sensitivity=SENSITIVITY, noise_std=NOISE_STD)
            )

    routes = {"dpfit": dpfit_charge}
    try:
        from dp_accounting import dp_event
        from dp_accounting.rdp import rdp_privacy_accountant as rdp
    except ImportError:  # pragma: no cover - the test extra is not installed
        return routes

    def rdp_route(orders):
        def run() -> None:
            acc = rdp.RdpAccountant() if orders is None else rdp.RdpAccountant(orders)
            for _ in range(charges):
                acc.compose(dp_event.GaussianDpEvent(NOISE_STD / SENSITIVITY))

        return run

    routes["rdp_default_orders"] = rdp_route(None)
    routes["rdp_one_order"] = rdp_route([2.0])
    return routes


def _interleaved(routes: dict, repeats: int, per: int) -> dict[str, dict[str, list[float]]]:
    """Seconds per call of every route, by the wall clock and by this thread's CPU time
    (which leaves out the time spent waiting for a core on a shared machine)."""
    for fn in routes.values():
        fn()  # warm-up
    times: dict[str, dict[str, list[float]]] = {"wall": {}, "cpu": {}}
    for _ in range(repeats):
        for name, fn in routes.items():
            wall, cpu = time.perf_counter(), time.thread_time()
            fn()
            times["cpu"].setdefault(name, []).append((time.thread_time() - cpu) / per)
            times["wall"].setdefault(name, []).append((time.perf_counter() - wall) / per)
    return times


def _ratios(times: dict, pairs: list[tuple[str, str]]) -> dict:
    """Per-call seconds and, for each (route, floor) pair, route / floor, for both clocks."""
    out = {}
    for clock, t in times.items():
        med = {k: statistics.median(v) for k, v in t.items()}
        out[clock] = {
            "seconds_each": {k: {"median": med[k], "min": min(v)} for k, v in t.items()},
            "ratio_of_medians": {f"{a}/{b}": med[a] / med[b] for a, b in pairs},
            "ratio_of_minima": {f"{a}/{b}": min(t[a]) / min(t[b]) for a, b in pairs},
            "median_of_paired_ratios": {
                f"{a}/{b}": statistics.median(x / z for x, z in zip(t[a], t[b], strict=True))
                for a, b in pairs
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["release", "charge"])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--charges", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    host = machine() | {"dpfit": dpfit.__file__}  # which checkout ran (before/after)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")  # seeded sources: InsecureRandomnessWarning
        if args.what == "release":
            times = _interleaved(_release_routes(args.steps), args.repeats, args.steps)
            pairs = [(k, "bare") for k in times["cpu"] if k != "bare"]
            result = {**_ratios(times, pairs), "target": 2.0}
        else:
            times = _interleaved(_charge_routes(args.charges), args.repeats, args.charges)
            pairs = [("dpfit", k) for k in times["cpu"] if k != "dpfit"]
            result = {**_ratios(times, pairs), "target": 2.0}
    host["load_average_at_end"] = os.getloadavg()
    record = {
        "command": command(),
        "machine": host,
        "parameters": vars(args) | {"json": str(args.json) if args.json else None},
        "result": result,
    }
    path = args.json or RESULTS / f"release_{args.what}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(record, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
