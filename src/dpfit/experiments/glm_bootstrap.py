"""The private GLM's sandwich interval side by side with the parametric bootstrap.

Each trial draws n records with replacement from a ``glm-coverage`` population
(:mod:`dpfit.experiments._glm_populations`), rescales the design into [-1, 1] from the public
bounds, and makes one default private fit (:func:`dpfit.algorithms.glm.dp_glm`, with the
margins release of the binomial default). From that one fit's releases it forms two 95%
intervals for theta* (the population maximum-likelihood coefficient, here in the rescaled
design's coordinates):

* ``sandwich``: the library's default, the released sandwich plus the iterates' spread
  (:func:`dpfit.inference.population_glm.glm_population`);
* ``bootstrap``: the bias-corrected parametric bootstrap (Ferrando, Wang & Sheldon 2022) of
  :mod:`dpfit.experiments._glm_bootstrap`, B private refits on data simulated from the
  released estimate and the released X'X/n (post-processing: no extra privacy cost).

It records per coefficient whether each interval covers theta*, each width over
statsmodels' robust (HC0) interval on the same sample, and whether the fit warned
(a reason of :func:`~dpfit.inference.population_glm.glm_doubts` shown as a
``CoverageWarning``; its notes do not count). Designs with an exposure are left out:
their offsets are private and not released, so the bootstrap cannot simulate them.

The claims (negative controls in tests/experiments/test_glm_bootstrap.py):

* ``sandwich-coverage``: pooled over the silent fits, the sandwich covers within
  [0.93, 0.97] +/- 2 Monte Carlo s.e.;
* ``bootstrap-misses-overdispersion``: over every fit of the overdispersed Poisson design,
  the bootstrap's pooled coverage lies more than 2 s.e. below 0.93 while the sandwich's lies
  in the band: a parametric bootstrap simulates the model's variance (Poisson: the mean),
  the sandwich estimates the records' own (one reason the sandwich is the default; stated
  after the quick run, where the claim first made for the misspecified link did not hold:
  docs/glm-coverage.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..algorithms.glm import dp_glm
from ..baselines import glm_mle
from ..inference import t_interval_from_stderr
from ..inference.doubts import COVERAGE
from ..inference.population_glm import glm_doubts, glm_population
from ._glm_bootstrap import parametric_bootstrap
from ._glm_plots import bootstrap_figure
from ._glm_populations import glm_population as population
from ._silent_coverage import BAND, clustered_coverage, coefficient_rows, in_band
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["EXPERIMENT", "comparison_table"]

Z95 = 1.959963984540054
#: Designs of the quick scale (every glm-coverage design without an exposure could run).
DESIGNS = ("logit-balanced", "logit-misspecified", "probit", "poisson-overdispersed")


def _design(name: str, frame: pd.DataFrame) -> np.ndarray:
    """[1, x rescaled into [-1, 1] by the population's public bounds]."""
    pop = population(name)
    lows, highs = np.array([pop.bounds[c] for c in pop.x]).T
    x = frame[list(pop.x)].to_numpy()
    return np.column_stack([np.ones(len(frame)), (2 * x - lows - highs) / (highs - lows)])


@functools.cache
def _theta_star(name: str) -> np.ndarray:
    """theta* in the rescaled design's coordinates (the full table's MLE there)."""
    pop = population(name)
    D, y = _design(name, pop.frame), pop.frame[pop.response].to_numpy()
    return glm_mle(D, y, pop.family, None, pop.link)[0]


def _trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    name, n, rho = str(params["design"]), int(params["n"]), float(params["rho"])
    pop = population(name)
    rows = np.random.default_rng([seed, 28]).integers(0, len(pop.frame), n)
    sample = pop.frame.iloc[rows].reset_index(drop=True)
    D, y = _design(name, sample), sample[pop.response].to_numpy()
    extra = {"margins": pop.family == "binomial"}  # the defaults of the estimators
    traj = dp_glm(
        D, y, rho=rho, family=pop.family, link=pop.link, count_bound=pop.K, rng=seed,
        warn_large_rho=False, **extra,
    )  # fmt: skip
    inference = glm_population(traj)
    cov = inference.population
    _, lower, upper = t_interval_from_stderr(
        traj.estimate, np.sqrt(np.diag(cov.cov)), dof=cov.dof, alpha=0.05
    )
    boot = parametric_bootstrap(traj, replicates=int(params["B"]), seed=seed, params=extra)
    b_lower, b_upper = boot.interval(0.05)
    with np.errstate(all="ignore"):
        ref = 2 * Z95 * glm_mle(D, y, pop.family, None, pop.link)[1]
    theta = _theta_star(name)
    warned = any(d.shown == COVERAGE for d in glm_doubts(inference, traj))
    out = {"warned": float(warned), "k": float(theta.size)}
    for j, target in enumerate(theta):
        out[f"covers_{j}"] = float(lower[j] <= target <= upper[j])
        out[f"width_{j}"] = float((upper[j] - lower[j]) / ref[j])
        out[f"bs_covers_{j}"] = float(b_lower[j] <= target <= b_upper[j])
        out[f"bs_width_{j}"] = float((b_upper[j] - b_lower[j]) / ref[j])
        out[f"bs_bias_{j}"] = float(boot.estimate[j] - traj.estimate[j])
    return out


def comparison_table(results: pd.DataFrame, silent_only: bool = True) -> pd.DataFrame:
    """Per cell: fits, share warned, and for each method its pooled coverage (over the silent
    fits when ``silent_only``), MC s.e. and median width over HC0."""
    rows = []
    for (design, n, rho), cell in results.groupby(["design", "n", "rho"]):
        row: dict[str, Any] = {"design": design, "n": n, "rho": rho, "fits": len(cell),
                               "warned": float(cell["warned"].mean())}  # fmt: skip
        kept = cell[cell["warned"] == 0] if silent_only else cell
        for method, prefix in (("sandwich", "covers_"), ("bootstrap", "bs_covers_")):
            long = coefficient_rows(kept, prefix) if len(kept) else pd.DataFrame()
            coverage, se, _ = clustered_coverage(long) if len(long) else (math.nan,) * 3
            row[f"{method}_coverage"], row[f"{method}_mc_se"] = coverage, se
            row[f"{method}_width"] = float(long["width"].median()) if len(long) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _sandwich_coverage(results: pd.DataFrame) -> ClaimResult:
    fits = results[results["warned"] == 0]
    if fits.empty:
        return ClaimResult(passed=False, numbers={}, detail="no silent fit")
    silent = coefficient_rows(fits)
    coverage, se, fits = clustered_coverage(silent)
    return ClaimResult(
        passed=in_band(coverage, se),
        numbers={"coverage": coverage, "mc_se": se, "silent fits": float(fits)},
        detail=f"sandwich {coverage:.3f} +/- {se:.3f} over {fits} silent fits",
    )


def _bootstrap_misses(results: pd.DataFrame) -> ClaimResult:
    cell = results[results["design"] == "poisson-overdispersed"]
    if cell.empty:
        return ClaimResult(passed=False, numbers={}, detail="no overdispersed fit")
    sandwich = clustered_coverage(coefficient_rows(cell))
    boot = clustered_coverage(coefficient_rows(cell, "bs_covers_"))
    numbers = {"sandwich": sandwich[0], "sandwich_se": sandwich[1],
               "bootstrap": boot[0], "bootstrap_se": boot[1]}  # fmt: skip
    return ClaimResult(
        passed=in_band(*sandwich[:2]) and boot[0] + 2 * boot[1] < BAND[0],
        numbers=numbers,
        detail=f"overdispersed counts: sandwich {sandwich[0]:.3f} +/- {sandwich[1]:.3f}, "
        f"bootstrap {boot[0]:.3f} +/- {boot[1]:.3f}",
    )


CLAIMS = [
    Claim(
        name="sandwich-coverage",
        statement=(
            "Pooled over every silent fit and coefficient, the sandwich interval (the "
            "default) covers theta* within [0.93, 0.97] +/- 2 Monte Carlo s.e."
        ),
        evaluate=_sandwich_coverage,
    ),
    Claim(
        name="bootstrap-misses-overdispersion",
        statement=(
            "Over every fit of the overdispersed Poisson design, the bias-corrected parametric "
            "bootstrap covers theta* more than 2 s.e. below 0.93, while the sandwich covers "
            "it within [0.93, 0.97] +/- 2 s.e."
        ),
        evaluate=_bootstrap_misses,
    ),
]


def _grid(designs: tuple[str, ...], ns: list[int], rhos: list[float], B: int) -> list[dict]:
    return [{"design": d, "n": n, "rho": r, "B": B} for d in designs for n in ns for r in rhos]


EXPERIMENT = register(
    Experiment(
        name="glm-bootstrap",
        paper="Ferrando, Wang & Sheldon (2022), AISTATS: parametric bootstrap for DP intervals",
        figure="Sandwich against bias-corrected parametric bootstrap (docs/glm-coverage.md)",
        description=(
            "One default private GLM fit per trial, two 95% intervals from its releases: the "
            "sandwich (the default) and the bias-corrected parametric bootstrap (B private "
            "refits on data simulated from the released estimate and X'X/n). Coverage of "
            "theta* and width over statsmodels' HC0 interval, per design."
        ),
        grid={
            "smoke": _grid(("logit-balanced",), [2000], [0.5], 4),
            "quick": _grid(DESIGNS, [2000], [0.5], 25),
            "paper": _grid(DESIGNS, [2000, 20_000], [0.1, 0.5, 2.0], 200),
        },
        replicates={"smoke": 2, "quick": 25, "paper": 200},
        trial=_trial,
        plot=lambda results: [bootstrap_figure(comparison_table(results, silent_only=False))],
        privacy="Each trial is one fit at rho (replace-one, public n); the bootstrap's refits "
        "are on simulated data (post-processing of the fit's releases).",
        claims=CLAIMS,
    )
)
