"""Small experiments that exercise the harness (not registered: tests pass them as objects).

Importable as ``harness_experiments`` when this folder is on ``sys.path`` (subprocess tests set
PYTHONPATH), so their trials pickle by reference for parallel runs.
"""

from __future__ import annotations

import os
import time

import pandas as pd

from dpfit.experiments import Claim, ClaimResult, Experiment
from dpfit.mechanisms import make_noise_source

#: Calls of ``_counting_trial`` in this process, and the call count at which it is
#: "interrupted" (raises KeyboardInterrupt, as Ctrl-C would), or None.
CALLS: list[int] = []
STOP_AFTER: list[int | None] = [None]


def _draw(seed: int) -> float:
    # Seeded on purpose: warns InsecureRandomnessWarning, which the runner must silence.
    return float(make_noise_source(seed).generator.standard_normal())


def _counting_trial(params, seed):
    if STOP_AFTER[0] is not None and len(CALLS) >= STOP_AFTER[0]:
        raise KeyboardInterrupt
    CALLS.append(seed)
    return {"draw": _draw(seed), "double": 2.0 * params["x"]}


def _plain_trial(params, seed):
    return {"draw": _draw(seed), "double": 2.0 * params["x"]}


#: Set in a run's environment to make trials with k >= its value wait until the run is
#: killed: a run to be interrupted part-way then cannot finish first, however slow the
#: machine that polls it (a rerun without it completes).
HOLD_ENV = "DPFIT_HARNESS_HOLD_FROM"


def _slow_trial(params, seed):
    time.sleep(float(params["sleep"]))
    hold = os.environ.get(HOLD_ENV)
    if hold is not None and params.get("k", 0) >= int(hold):
        time.sleep(3600)  # interrupted by the kill (SIGINT or SIGKILL) the test sends
    return {"draw": _draw(seed)}


def _grid(points: list[dict]) -> dict[str, list[dict]]:
    return {"smoke": points, "quick": points, "paper": points}


COUNTING = Experiment(
    name="harness-counting",
    paper="none",
    figure="none",
    description="Counts its trial calls; can be interrupted after k calls.",
    grid=_grid([{"x": 1.0}, {"x": 2.0}, {"x": 3.0}]),
    replicates={"smoke": 3, "quick": 3, "paper": 3},
    trial=_counting_trial,
)

SLOW = Experiment(
    name="harness-slow",
    paper="none",
    figure="none",
    description="Sleeps in each trial, so that a run can be killed part-way.",
    grid=_grid([{"sleep": 0.15, "k": k} for k in range(10)]),
    replicates={"smoke": 2, "quick": 2, "paper": 2},
    trial=_slow_trial,
)


def _mean_positive(results: pd.DataFrame) -> ClaimResult:
    mean = float(results["double"].mean())
    return ClaimResult(passed=mean > 0, numbers={"mean of double": mean})


def _impossible(results: pd.DataFrame) -> ClaimResult:
    mean = float(results["double"].mean())
    return ClaimResult(
        passed=mean > 1e6, numbers={"mean of double": mean, "threshold": 1e6}, detail="by design"
    )


def _raises(results: pd.DataFrame) -> ClaimResult:
    raise RuntimeError("this claim is broken on purpose")


def _plot(results: pd.DataFrame) -> list:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(results["x"], results["double"], "o")
    return [fig]


FAILING = Experiment(
    name="harness-failing",
    paper="none",
    figure="none",
    description=(
        "One claim passes, one asserts a deviation from the paper and holds, one fails, one "
        "raises, one is for the paper scale only."
    ),
    grid=_grid([{"x": 1.0}, {"x": 2.0}]),
    replicates={"smoke": 2, "quick": 2, "paper": 2},
    trial=_plain_trial,
    claims=[
        Claim(name="positive", statement="mean > 0", evaluate=_mean_positive, scales=("smoke",)),
        Claim(
            name="asserted-deviation",
            statement="Deviation: the mean is positive, not negative as the paper says.",
            paper="Fig. 0: the mean is negative (-1).",
            evaluate=_mean_positive,
            scales=("smoke",),
            deviation=True,
        ),
        Claim(name="impossible", statement="mean > 1e6", evaluate=_impossible, scales=("smoke",)),
        Claim(name="broken", statement="raises", evaluate=_raises, scales=("smoke",)),
        Claim(name="paper-only", statement="mean > 0", evaluate=_mean_positive, scales=("paper",)),
    ],
    plot=_plot,
    privacy="none (a harness test)",
)
