"""Claims of the DP-AMBSSGD experiments (predictions P1-P7 of docs/varshney2022.md).

Each evaluator takes an experiment's results (one row per trial) and returns a verdict with
the numbers that decided it; medians over replicates are used throughout (DP-STAT makes the
error heavy tailed). The predictions' bands come from the theorems (Thm 3.7, Cor. 3.8) with
their polylog drift; a fitted value passes when it is not outside its band by more than 3
Monte Carlo standard errors, bootstrapped over the replicates of each cell
(:mod:`._stats`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._stats import Z, bootstrap, loglog_slope, point, series_slope
from .registry import ClaimResult

__all__ = [
    "BASELINES",
    "P1_BAND",
    "P5_MIN_N",
    "P45_BASELINES",
    "medians",
    "p1_band",
    "p1_slope",
    "p2_exponents",
    "p3_claim",
    "p4_claim",
    "p5_claim",
    "p7_claim",
    "sample_complexity",
]


def slope(x, y) -> float:
    """Least-squares slope of log(y) on log(x) (one point per x, no replicates)."""
    return series_slope(pd.Series(np.asarray(y, float), index=np.asarray(x, float))).value


def medians(results: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    return results.groupby(keys, as_index=False)[columns].median()


# -- P1 ----------------------------------------------------------------------------------------
#: P1: band of excess / (sigma^2 d / N) and of the log-log slope in N (docs/varshney2022.md).
P1_BAND, P1_SLOPE = (0.5, 3.0), (-1.2, -0.9)


def p1_band(results: pd.DataFrame) -> ClaimResult:
    ratios = results.assign(ratio=results["excess_practical"] / results["rate"])
    cells = {key: point(g, "ratio", "median") for key, g in ratios.groupby(["d", "n"])}
    ok = all(c.within(*P1_BAND) for c in cells.values())
    return ClaimResult(
        passed=bool(ok),
        numbers={
            "min ratio": min(c.value for c in cells.values()),
            "max ratio": max(c.value for c in cells.values()),
            "largest ratio se": max(c.se for c in cells.values()),
            "cells": float(len(cells)),
        },
        detail=f"median excess / (sigma^2 d / N) per (d, N); band [0.5, 3] within {Z:g} s.e.",
    )


def _pooled_slope(results: pd.DataFrame) -> float:
    """Common log-log slope in N of the median excess, with a free intercept per d."""
    cells = medians(results, ["d", "n"], ["excess_practical"])
    dummies = pd.get_dummies(cells["d"]).to_numpy(float)
    A = np.column_stack([dummies, np.log(cells["n"].to_numpy(float))])
    coef, *_ = np.linalg.lstsq(A, np.log(cells["excess_practical"].to_numpy(float)), rcond=None)
    return float(coef[-1])


def p1_slope(results: pd.DataFrame) -> ClaimResult:
    cells = medians(results, ["d", "n"], ["excess_practical"])
    numbers = {f"slope d={d}": slope(g["n"], g["excess_practical"]) for d, g in cells.groupby("d")}
    # one slope with a free intercept per d: the pooled fit halves the sampling error of a
    # per-d slope (each median of chi^2_d-like errors is ~20% noisy)
    (pooled,) = bootstrap(results, ["d", "n"], lambda r: [_pooled_slope(r)])
    numbers.update(pooled.numbers("pooled slope"))
    return ClaimResult(
        passed=pooled.within(*P1_SLOPE),
        numbers=numbers,
        detail=f"log-log slope of the median excess against N (common slope over d), within "
        f"{Z:g} s.e. of [-1.2, -0.9]",
    )


# -- P2 ----------------------------------------------------------------------------------------
_P2 = {"a_d": (1.65, 2.35), "a_N": (-2.1, -1.5), "a_eps": (-2.35, -1.65)}


def _p2_fit(results: pd.DataFrame, column: str) -> dict[str, float]:
    cells = medians(results, ["d", "n", "epsilon"], [column])
    cells = cells[(cells["epsilon"] <= 1.0) & (cells[column] > 0)]
    A = np.column_stack(
        [np.ones(len(cells)), np.log(cells["d"]), np.log(cells["n"]), np.log(cells["epsilon"])]
    )
    coef, *_ = np.linalg.lstsq(A, np.log(cells[column].to_numpy(float)), rcond=None)
    return {
        "a_d": float(coef[1]),
        "a_N": float(coef[2]),
        "a_eps": float(coef[3]),
        "cells": float(len(cells)),
    }


def p2_exponents(results: pd.DataFrame) -> ClaimResult:
    fit = _p2_fit(results, "privacy_excess_paper")
    diff = results.assign(diff=results["excess_paper"] - results["excess_nonprivate"])
    check = _p2_fit(diff, "diff")
    numbers: dict[str, float] = {"cells": fit["cells"]}
    passed = True
    estimates = bootstrap(
        results,
        ["d", "n", "epsilon"],
        lambda r: [_p2_fit(r, "privacy_excess_paper")[k] for k in _P2],
    )
    for (k, (lo, hi)), est in zip(_P2.items(), estimates, strict=True):
        numbers.update(est.numbers(k))
        passed &= est.within(lo, hi)
    numbers.update({f"{k} (difference estimator)": v for k, v in check.items() if k != "cells"})
    return ClaimResult(
        passed=bool(passed),
        numbers=numbers,
        detail=(
            "OLS of ln(median privacy error) on ln d, ln N, ln eps over eps <= 1, each exponent "
            f"within {Z:g} s.e. of its band; the privacy error is 0.5 ||w_DP - w_SGD||_H^2 "
            "against non-private SGD on the same records, order and schedule (same mean as "
            "excess(DP) - excess(SGD) up to a cross term of mean zero, but far less noisy); the "
            "plain difference's fit is shown too"
        ),
    )


# -- P3 ----------------------------------------------------------------------------------------
_P3_SLOPE, _P3_ZERO, _P3_FLOOR = (1.8, 2.2), 1e-8, 0.1
BASELINES = ("fixed_clip", "ssgd")


def p3_claim(results: pd.DataFrame) -> ClaimResult:
    cols = ["excess_paper", *(f"excess_{b}" for b in BASELINES)]
    cells = medians(results, ["sigma"], cols).set_index("sigma")
    sigma_slope = loglog_slope(results[results["sigma"] > 0], "sigma", "excess_paper", "median")
    zero = float(results.loc[results["sigma"] == 0, "excess_paper"].max())
    numbers = {**sigma_slope.numbers("slope in sigma"), "max excess at sigma=0": zero}
    floors = True
    for b in BASELINES:
        kept = float(cells.loc[1e-3, f"excess_{b}"] / cells.loc[1e-1, f"excess_{b}"])
        numbers[f"{b}: excess(1e-3)/excess(1e-1)"] = kept
        numbers[f"{b} / DP-AMBSSGD at sigma=1e-3"] = float(
            cells.loc[1e-3, f"excess_{b}"] / cells.loc[1e-3, "excess_paper"]
        )
        floors &= kept >= _P3_FLOOR
    return ClaimResult(
        passed=bool(sigma_slope.within(*_P3_SLOPE) and zero <= _P3_ZERO and floors),
        numbers=numbers,
        detail=(
            "DP-AMBSSGD (paper variant): slope of the median excess against sigma in [1e-3, 1] "
            f"within {Z:g} bootstrap s.e. of 2 +- 0.2 and excess <= 1e-8 ||w*||_H^2 at "
            "sigma = 0; fixed-clip DP-SGD and "
            "DP-SSGD keep >= 10% of their error from sigma = 0.1 to 1e-3 (a sigma^2 law keeps 1%)"
        ),
    )


# -- P4, P5 -----------------------------------------------------------------------------------
#: Baselines of P4/P5, with their excess column.
P45_BASELINES = ("fixed_clip", "ssp", "adassp")
_P4_SLOPE = 2.0
#: P5: band of DP-AMBSSGD's N*(d) slope (Cor. 3.8: linear in d, with polylog drift).
_P5_SLOPE = (0.7, 1.3)
#: P5: smallest N fitted. At eps = 1 DP-AMBSSGD is still starting up below it: its privacy
#: error over sigma^2 d / N rises from 2^15 to 2^16 at d = 4, 8 before it falls
#: (docs/varshney2022.md, P5).
P5_MIN_N = 2**17


def p4_claim(results: pd.DataFrame) -> ClaimResult:
    """P4: DP-AMBSSGD's privacy error grows like d^2 at sigma = 1, eps = 0.5 (slope 2 within
    3 s.e.); the baselines' slopes are reported, not asserted (the prediction of >= 2.5 is
    about their bounds, and tuned baselines may do better)."""
    fit = loglog_slope(results, "d", "privacy_excess_paper", "median")
    numbers = fit.numbers("DP-AMBSSGD privacy-error slope in d")
    for b in P45_BASELINES:
        numbers.update(loglog_slope(results, "d", f"excess_{b}", "median").numbers(f"{b} slope"))
    return ClaimResult(
        passed=fit.agrees(_P4_SLOPE),
        numbers=numbers,
        detail="medians per d; privacy error against non-private SGD on the same records",
    )


def _privacy_ratio_fit(results: pd.DataFrame, method: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Mean privacy error / (sigma^2 d / N) per cell with N >= P5_MIN_N; least squares of its
    log on an intercept per d and one slope in log N. Returns (d values, intercepts, slope).

    Means, not medians: at d = 2 the privacy error is chi^2_2-like, and the median of a
    chi^2_d / d variable rises with d (0.69 at d = 2, 0.92 at d = 8), which would bias the
    slope in d; the mean scales exactly.
    """
    rows = results[results["n"] >= P5_MIN_N]
    ratio = rows.assign(r=rows[f"privacy_excess_{method}"] / rows["rate"])
    cells = ratio.groupby(["d", "n"], as_index=False)["r"].mean()
    cells = cells[cells["r"] > 0]
    ds = np.sort(cells["d"].unique()).astype(float)
    dummies = (cells["d"].to_numpy(float)[:, None] == ds[None, :]).astype(float)
    A = np.column_stack([dummies, np.log(cells["n"].to_numpy(float))])
    coef, *_ = np.linalg.lstsq(A, np.log(cells["r"].to_numpy(float)), rcond=None)
    return ds, coef[:-1], float(coef[-1])


def _log_n_star(results: pd.DataFrame, method: str) -> pd.Series:
    """ln N*(d), indexed by d: -intercept(d) / slope in ln N (NaN when the fitted ratio does
    not fall in N)."""
    ds, intercepts, n_slope = _privacy_ratio_fit(results, method)
    log_star = -intercepts / n_slope if n_slope < 0 else np.full(len(ds), np.nan)
    return pd.Series(log_star, index=ds, dtype=float)


def sample_complexity(results: pd.DataFrame, method: str) -> pd.Series:
    """N*(d): the N where the fitted privacy error of ``method`` equals sigma^2 d / N, i.e.
    where privacy doubles the non-private rate (NaN when the fitted ratio does not fall in N)."""
    with np.errstate(over="ignore"):
        return np.exp(_log_n_star(results, method))


def _n_star_slope(results: pd.DataFrame, method: str) -> float:
    """Log-log slope of N*(d) in d."""
    log_star = _log_n_star(results, method)
    if len(log_star) < 2 or not np.isfinite(log_star).all():
        return float("nan")
    return float(np.polyfit(np.log(log_star.index.to_numpy(float)), log_star.to_numpy(), 1)[0])


def p5_claim(results: pd.DataFrame) -> ClaimResult:
    """P5: N*(d), the N at which privacy doubles the non-private rate sigma^2 d / N at eps = 1,
    grows like d for DP-AMBSSGD (Cor. 3.8; slope within 3 s.e. of [0.7, 1.3]) and faster for
    fixed-clip DP-SGD, SSP and AdaSSP (each slope above DP-AMBSSGD's by 3 s.e.).

    The privacy error is measured against each method's non-private twin on the same records
    (one-pass SGD with the same schedule; least squares for the baselines), and N* is read off
    a line through every cell (a common slope in ln N, an intercept per d). The total excess's
    crossing of 2 sigma^2 d / N is ill-conditioned (its non-private part is itself a noisy
    multiple of sigma^2 d / N, chi^2_2-like at d = 2) and censored when the grid misses it.
    The claim fails unless DP-AMBSSGD's N*(d) lies inside the grid's range of N for every d
    (an extrapolated N* is not a measurement) and its slope has a finite s.e.
    """

    def slopes(r: pd.DataFrame) -> list[float]:
        ours = _n_star_slope(r, "practical")
        theirs = [_n_star_slope(r, b) for b in P45_BASELINES]
        return [ours, *theirs, *(t - ours for t in theirs)]  # gaps: same records, correlated

    ours, *rest = bootstrap(results, ["d", "n"], slopes)
    k = len(P45_BASELINES)
    star = sample_complexity(results, "practical")
    fitted = results.loc[results["n"] >= P5_MIN_N, "n"]
    resolved = bool(len(fitted) and star.between(fitted.min(), fitted.max()).all())
    numbers = ours.numbers("DP-AMBSSGD N* slope")
    numbers["DP-AMBSSGD privacy/rate slope in N"] = _privacy_ratio_fit(results, "practical")[2]
    numbers.update({f"N* d={d:g}": v for d, v in star.items()})
    numbers["N* inside the grid"] = float(resolved)
    passed = resolved and np.isfinite(ours.se) and ours.within(*_P5_SLOPE)
    for b, theirs, gap in zip(P45_BASELINES, rest[:k], rest[k:], strict=True):
        numbers.update(theirs.numbers(f"{b} N* slope"))
        numbers.update(gap.numbers(f"{b} minus DP-AMBSSGD"))
        passed &= gap.above(0.0)
    return ClaimResult(
        passed=bool(passed),
        numbers=numbers,
        detail=(
            "DP-AMBSSGD 'practical' variant; N*(d) where the mean privacy error (against the "
            "non-private twin on the same records) meets sigma^2 d / N on a line fitted over "
            "every cell, required inside the grid's N; slopes' s.e. bootstrapped over "
            f"replicates, tolerance {Z:g} s.e."
        ),
    )


# -- P7 ----------------------------------------------------------------------------------------
_P7_RATIO, _P7_MARGIN_OVERSHOOT, _P7_LITERAL_OVERSHOOT = 10.0, 2.0, 4.0
#: P7: the "small N" at which the literal threshold blows the error up (larger N: reported).
_P7_SMALL_N = 2**17


def _log_median_ratio(a: np.ndarray) -> np.ndarray:
    """log(median of column 0 / median of column 1) over the replicate axis."""
    return np.log(np.median(a[..., 0], axis=-1) / np.median(a[..., 1], axis=-1))


def p7_claim(results: pd.DataFrame) -> ClaimResult:
    """P7: at small N (<= 2^17) the literal threshold's median excess is >= 10x the margin's,
    the log ratio above log 10 by 3 bootstrap s.e. (at larger N the blow-up fades: reported,
    not asserted); the worst overshoots (extremes over every run, non-private diagnostics)
    are compared with fixed levels."""
    cols = ["excess_literal", "excess_paper"]
    logs = {n: point(g, cols, _log_median_ratio) for n, g in results.groupby("n", sort=True)}
    margin_worst = float(results["overshoot_paper"].max())
    literal_worst = float(results["overshoot_literal"].max())
    numbers = {}
    for n, est in logs.items():
        numbers[f"median literal/margin at N={n}"] = float(np.exp(est.value))
        numbers[f"log ratio se at N={n}"] = est.se
    numbers.update(
        {
            "worst gamma/max residual, margin": margin_worst,
            "worst gamma/max residual, literal": literal_worst,
        }
    )
    small = [e for n, e in logs.items() if n <= _P7_SMALL_N]
    blow_up = bool(small) and all(np.isfinite(e.se) and e.above(np.log(_P7_RATIO)) for e in small)
    return ClaimResult(
        passed=bool(
            blow_up
            and margin_worst <= _P7_MARGIN_OVERSHOOT
            and literal_worst >= _P7_LITERAL_OVERSHOOT
        ),
        numbers=numbers,
        detail=(
            "median excess with theta = s over median with theta = s - Gamma' >= 10 at every "
            f"N <= 2^17 (log ratio above log 10 by {Z:g} bootstrap s.e.); DP-STAT's level over "
            "the true largest residual (non-private diagnostic) stays <= 2 with the margin "
            "(fix D3) and reaches >= 4 with the literal threshold"
        ),
    )
