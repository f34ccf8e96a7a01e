"""Coverage of the population parameter by DPLinearRegression's default intervals.

See docs/inference.md, "Measured coverage".

Each trial draws a **fresh dataset** from a design with known population coefficients
theta*, fits the default :class:`~dpfit.DPLinearRegression` (or :func:`dpfit.ols`) with
public bounds, and records whether each 95% population interval covers theta*, its width
relative to the non-private heteroscedasticity-robust (HC0) OLS interval on the same data,
and, side by side at the same rho, a noisy-sufficient-statistics (NSS) interval: OLS from
a noisy X'X and X'y with the sandwich from a noisy Omega and the NSS noise law added
(Sheffet 2017; Evans et al. 2024). Coverage is the mean over replicates and coefficients,
with Monte Carlo s.e. the standard deviation over the R replicates of each fit's pooled
coverage / sqrt(R) (it carries the correlation between the coefficients), floored at the
binomial s.e. of 0.95 over 4 independent coefficients a replicate. ``warned`` is the share
of fits that emitted a CoverageWarning: the library's own statement that a cell lies outside
the valid regime.

Designs (3 features plus an intercept unless stated):

``isotropic``        x ~ N(0, I), e ~ N(0, 1)
``anisotropic``      x ~ N(0, diag(1, 0.09, 9)), e ~ N(0, 1)
``heteroscedastic``  e ~ N(0, (0.5 + |x_1|)^2)
``t3``               e ~ t(3)
``formula``          ``lwage ~ educ + exper + female + union`` through :func:`dpfit.ols`:
                     integer educ in 8..18, exper in 0..40, binary female and union.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import CoverageWarning, IdentificationWarning, LargeBudgetWarning
from ..models import DPLinearRegression, ols
from ._coverage_table import grid, mc_se, per_cell
from ._nss_interval import nss_interval, robust_ols
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["EXPERIMENT", "REVIEW", "coverage_experiment", "coverage_table", "nss_interval"]

Z95 = 1.959963984540054
DESIGNS = ("isotropic", "anisotropic", "heteroscedastic", "t3", "formula")
THETA = np.array([1.0, 0.5, -0.3, 0.2])
FORMULA_THETA = np.array([1.0, 0.08, 0.01, -0.2, 0.15])
FORMULA = "lwage ~ educ + exper + female + union"
FORMULA_BOUNDS = {"educ": (0, 20), "exper": (0, 50), "female": (0, 1), "union": (0, 1)}


def _draw(design: str, n: int, rng: np.random.Generator) -> dict[str, Any]:
    """Data, public bounds and theta* of one design (module docstring)."""
    if design == "formula":
        df = pd.DataFrame(
            {
                "educ": rng.integers(8, 19, n).astype(float),
                "exper": rng.integers(0, 41, n).astype(float),
                "female": rng.integers(0, 2, n).astype(float),
                "union": (rng.random(n) < 0.2).astype(float),
            }
        )
        X = df.to_numpy()
        df["lwage"] = FORMULA_THETA[0] + X @ FORMULA_THETA[1:] + 0.4 * rng.standard_normal(n)
        return {
            "frame": df,
            "X": X,
            "y": df["lwage"].to_numpy(),
            "theta": FORMULA_THETA,
            "bounds": FORMULA_BOUNDS,
            "y_bounds": (-1.0, 4.0),
        }
    if design in REVIEW_DESIGNS:
        return _review_draw(design, n, rng)
    scales = np.array([1.0, 0.3, 3.0]) if design == "anisotropic" else np.ones(3)
    X = rng.standard_normal((n, 3)) * scales
    if design == "heteroscedastic":
        e = (0.5 + np.abs(X[:, 0])) * rng.standard_normal(n)
    elif design == "t3":
        e = rng.standard_t(3, n)
    else:
        e = rng.standard_normal(n)
    y = THETA[0] + X @ THETA[1:] + e
    spread = 4.0 * math.sqrt(float((THETA[1:] * scales) @ (THETA[1:] * scales)) + 2.0)
    return {
        "X": X,
        "y": y,
        "theta": THETA,
        "bounds": [(-4.0 * s, 4.0 * s) for s in scales],
        "y_bounds": (THETA[0] - spread, THETA[0] + spread),
    }


#: Designs of the independent review of the intervals (docs/inference.md, "The meat's
#: noise"): the residual s.d. is small against the public y range, so the private clip is
#: large against the residuals.
REVIEW_DESIGNS = ("intercept50", "high-r2", "wide-y")


def _review_draw(design: str, n: int, rng: np.random.Generator) -> dict[str, Any]:
    """``intercept50``: y = 50 + x (0.5, -0.3, 0.2) + N(0, 1) on a public 0..100 scale;
    ``high-r2``: slopes (2, -1.5, 1), error s.d. 0.3 (R^2 = 0.99), y bounds at 4 s.d. of y;
    ``wide-y``: the isotropic design with y bounds at 30 s.d. of y. x ~ N(0, I_3), bounds
    at 4 s.d."""
    theta = {"intercept50": [50.0, 0.5, -0.3, 0.2], "high-r2": [1.0, 2.0, -1.5, 1.0]}
    theta = np.array(theta.get(design, THETA))
    X = rng.standard_normal((n, 3))
    sd = 0.3 if design == "high-r2" else 1.0
    y = theta[0] + X @ theta[1:] + sd * rng.standard_normal(n)
    spread = {"high-r2": 4.0, "wide-y": 30.0}.get(design, 0.0) * math.sqrt(
        float(theta[1:] @ theta[1:]) + sd**2
    )
    y_bounds = (0.0, 100.0) if design == "intercept50" else (theta[0] - spread, theta[0] + spread)
    return {"X": X, "y": y, "theta": theta, "bounds": [(-4.0, 4.0)] * 3, "y_bounds": y_bounds}


def _trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    design, n, rho = str(params["design"]), int(params["n"]), float(params["rho"])
    data = _draw(design, n, np.random.default_rng([seed, 1]))
    theta = data["theta"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        warnings.simplefilter("always", IdentificationWarning)  # recorded, not raised
        warnings.simplefilter("ignore", LargeBudgetWarning)
        if design == "formula":
            res = ols(
                FORMULA,
                data["frame"],
                rho=rho,
                bounds=data["bounds"],
                y_bounds=data["y_bounds"],
                random_state=seed,
            )
        else:
            res = (
                DPLinearRegression(
                    rho=rho, bounds=data["bounds"], y_bounds=data["y_bounds"], random_state=seed
                )
                .fit(data["X"], data["y"])
                .result_
            )
    warned = any(issubclass(w.category, CoverageWarning) for w in caught)
    ci = res.conf_int(0.05).to_numpy()
    D = np.column_stack([np.ones(n), data["X"]])
    _, ols_se = robust_ols(D, data["y"])
    nss_est, nss_se = nss_interval(data, rho, seed + 7)
    width = ci[:, 1] - ci[:, 0]
    ref = 2 * Z95 * ols_se
    return {
        "covers": float(np.mean((ci[:, 0] <= theta) & (theta <= ci[:, 1]))),
        "covers_slopes_min": float(np.min((ci[1:, 0] <= theta[1:]) & (theta[1:] <= ci[1:, 1]))),
        "width_ratio": float(np.mean(width / ref)),
        "nss_covers": float(np.mean(np.abs(nss_est - theta) <= Z95 * nss_se)),
        "nss_width_ratio": float(np.mean(2 * Z95 * nss_se / ref)),
        "warned": float(warned),
        "error_ratio": float(
            np.sqrt(np.mean((res.estimate - theta) ** 2)) / np.sqrt(np.mean(ols_se**2))
        ),
    }


def coverage_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per cell: coverage (and its MC s.e.), width ratios, NSS side by side, warning share."""
    table, g = per_cell(
        results,
        reps="covers",
        coverage=("covers", "mean"),
        width_ratio=("width_ratio", "mean"),
        nss_coverage=("nss_covers", "mean"),
        nss_width_ratio=("nss_width_ratio", "mean"),
        warned=("warned", "mean"),
    )
    # the s.e. of the mean over replicates of each fit's pooled coverage (its spread across
    # replicates carries the correlation between coefficients), floored at the binomial s.e.
    # of 0.95 over 4 independent coefficients a replicate
    table["mc_se"] = mc_se(g["covers"].std(ddof=1).to_numpy(), table["reps"].to_numpy(), 4)
    return table.reset_index()


def _claim(results: pd.DataFrame, min_judged: int = 1) -> ClaimResult:
    """Coverage in [0.93, 0.97] within 2 MC s.e. in every cell where the library warns in
    fewer than half the fits (the judged cells), and at least ``min_judged`` such cells:
    without that floor a study whose every cell warns would pass having judged nothing."""
    table = coverage_table(results)
    numbers, failed, judged = {}, [], 0
    for _, r in table.iterrows():
        cell = f"{r['design']} n={int(r['n'])} rho={r['rho']:g}"
        numbers[f"{cell} coverage"] = float(r["coverage"])
        numbers[f"{cell} mc_se"] = float(r["mc_se"])
        if r["warned"] >= 0.5:
            continue
        judged += 1
        if not 0.93 - 2 * r["mc_se"] <= r["coverage"] <= 0.97 + 2 * r["mc_se"]:
            failed.append(cell)
    numbers["judged cells"] = float(judged)
    return ClaimResult(
        passed=judged >= min_judged and not failed,
        numbers=numbers,
        detail=f"{judged} cells judged (without warnings; at least {min_judged} required); "
        "outside [0.93, 0.97] +/- 2 s.e.: " + (", ".join(failed) or "none"),
    )


def _width_target(n: int) -> float | None:
    """Issue 14's width target at rho = 0.5: 1.6 x HC0 OLS at n = 2000-5000, 1.3 x at n >= 2e5.

    None elsewhere: n = 300 lies outside the valid regime (the library warns there).
    """
    return 1.6 if 2000 <= n <= 5000 else 1.3 if n >= 200_000 else None


#: The default may be wider than NSS by the share of privacy variance its growing clip spends
#: on a smaller clipping bias: at most sqrt(1 + r) with r = 0.25 (docs/inference.md,
#: "Clipping bias"), where NSS's own privacy error is small.
NSS_ALLOWANCE = 1.12


def _width_claim(results: pd.DataFrame, min_judged: int = 1) -> ClaimResult:
    """Widths at rho = 0.5 within the targets, and not wider than NSS wherever not warned.

    The target applies to the mean width ratio of a cell: 1.6 for n = 2000-5000, 1.3
    for n >= 2e5 (none elsewhere). Its Monte Carlo s.e. (the ratio's s.d. over replicates / sqrt R)
    is added before comparing, so a cell fails only when its mean is above the target by more
    than 2 s.e. NSS (same rho) must be wider in every cell where the library does not warn
    (up to :data:`NSS_ALLOWANCE`, the share of privacy variance the default spends on a
    smaller clipping bias), and there must be at least ``min_judged`` such cells (else the
    comparison judged nothing).
    """
    spread = results.groupby(["design", "n", "rho"])["width_ratio"].agg(["mean", "std", "size"])
    numbers, failed = {}, []
    for (design, n, rho), r in spread.iterrows():
        cell = f"{design} n={int(n)} rho={rho:g}"
        target = _width_target(int(n))
        if rho == 0.5 and target is not None:
            numbers[f"{cell} width"] = float(r["mean"])
            if r["mean"] - 2 * r["std"] / math.sqrt(r["size"]) > target:
                failed.append(f"{cell} width {r['mean']:.2f} > {target}")
    unwarned = coverage_table(results).query("warned < 0.5")
    for _, r in unwarned.iterrows():
        if r["width_ratio"] >= NSS_ALLOWANCE * r["nss_width_ratio"]:
            failed.append(f"{r['design']} n={int(r['n'])} rho={r['rho']:g} wider than NSS")
    numbers["judged cells"] = float(len(unwarned))
    return ClaimResult(
        passed=len(unwarned) >= min_judged and not failed,
        numbers=numbers,
        detail=f"{len(unwarned)} cells judged against NSS (without warnings; at least "
        f"{min_judged} required); cells failing: " + ("; ".join(failed) or "none"),
    )


WIDTH_CLAIM = Claim(
    name="population-width",
    statement=(
        "At rho = 0.5 the mean interval width is within 1.6 x the non-private HC0 OLS "
        "interval's at n = 2000-5000 and within 1.3 x at n >= 2e5 (2 MC s.e.), and narrower than "
        "1.12 x noisy-sufficient-statistics OLS at the same rho (the default's allowance for "
        "its smaller clipping bias) in every cell where the library does not warn, of which "
        "there is at least one."
    ),
    evaluate=_width_claim,
)


def _grid(ns: list[int], rhos: list[float], designs: tuple[str, ...] = DESIGNS) -> list[dict]:
    return grid(designs, ns, rhos)


def _plot(results: pd.DataFrame) -> list:
    from ._inference_coverage_plot import coverage_figure

    return [coverage_figure(coverage_table(results))]


COVERAGE_STATEMENT = (
    "In every cell where the library does not warn (CoverageWarning in fewer than half the "
    "fits), coverage of theta* lies in [0.93, 0.97] within 2 Monte Carlo s.e.; cells "
    "without warnings number at least {min_judged}."
)


def coverage_experiment(
    name: str,
    *,
    figure: str,
    description: str,
    grid: dict[str, list[dict]],
    claim: str,
    width: bool = True,
    min_judged: int = 1,
    statement: str = COVERAGE_STATEMENT,
) -> Experiment:
    """Register a study of this module's trial: 100 replicates a cell at quick scale, 400 at
    paper scale, the coverage claim named ``claim`` (judging at least ``min_judged`` cells
    without warnings) and (``width``) the width claim."""
    evaluate = functools.partial(_claim, min_judged=min_judged)
    statement = statement.format(min_judged=min_judged)
    claims = [Claim(name=claim, statement=statement, evaluate=evaluate)]
    return register(
        Experiment(
            name=name,
            paper="dpfit, beyond the papers: population intervals (docs/inference.md)",
            figure=figure,
            description=description,
            grid=grid,
            replicates={"smoke": 2, "quick": 100, "paper": 400},
            trial=_trial,
            privacy="Each trial is one fit at rho (replace-one, public n); seeded noise.",
            plot=_plot,
            claims=[*claims, WIDTH_CLAIM] if width else claims,
        )
    )


EXPERIMENT = coverage_experiment(
    "inference-coverage",
    figure="coverage table (docs/inference.md)",
    description=(
        "Coverage of the population coefficients by DPLinearRegression's default 95% "
        "intervals on fresh data per replicate, five designs, n and rho grids; widths "
        "relative to non-private HC0 OLS, and a noisy-sufficient-statistics interval "
        "at the same rho side by side."
    ),
    grid={
        "smoke": _grid([2000], [0.5], ("isotropic",)),
        "quick": _grid([2000, 20000], [0.05, 0.5, 5.0]),
        "paper": _grid([300, 2000, 20000, 200000], [0.05, 0.5, 5.0]),
    },
    claim="population-coverage",
)

REVIEW_CELLS = [
    {"design": "intercept50", "n": 5000, "rho": 0.1},
    {"design": "high-r2", "n": 2000, "rho": 0.5},
    {"design": "wide-y", "n": 2000, "rho": 0.5},
]
REVIEW = coverage_experiment(
    "inference-coverage-review",
    figure="the review's designs (docs/inference.md, 'The meat's noise')",
    description=(
        "The inference-coverage trial on the designs an independent review found "
        "over-covering without a warning: a strong intercept on a 0-100 scale, R^2 = 0.99, "
        "and y bounds at 30 s.d. of y."
    ),
    grid={"smoke": REVIEW_CELLS[:1], "quick": REVIEW_CELLS, "paper": REVIEW_CELLS},
    claim="population-coverage-review",
    width=False,
    min_judged=0,
    statement=(
        "Every cell either warns (CoverageWarning in at least half the fits) or has coverage of "
        "theta* in [0.93, 0.97] within 2 Monte Carlo s.e. No cell without warnings is required: "
        "these designs make the intervals over-cover, and the point is that the library "
        "says so, never silently (at quick scale every fit warns)."
    ),
)
