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

from ._stats import Estimate, Z, bootstrap, loglog_slope, point, series_slope
from .registry import ClaimResult

__all__ = [
    "BASELINES",
    "P1_BAND",
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
    pos = cells[cells.index > 0]
    sigma_slope = slope(pos.index, pos["excess_paper"])
    zero = float(results.loc[results["sigma"] == 0, "excess_paper"].max())
    numbers = {"slope in sigma": sigma_slope, "max excess at sigma=0": zero}
    floors = True
    for b in BASELINES:
        kept = float(cells.loc[1e-3, f"excess_{b}"] / cells.loc[1e-1, f"excess_{b}"])
        numbers[f"{b}: excess(1e-3)/excess(1e-1)"] = kept
        numbers[f"{b} / DP-AMBSSGD at sigma=1e-3"] = float(
            cells.loc[1e-3, f"excess_{b}"] / cells.loc[1e-3, "excess_paper"]
        )
        floors &= kept >= _P3_FLOOR
    lo, hi = _P3_SLOPE
    return ClaimResult(
        passed=bool(lo <= sigma_slope <= hi and zero <= _P3_ZERO and floors),
        numbers=numbers,
        detail=(
            "DP-AMBSSGD (paper variant): slope of the median excess against sigma in [1e-3, 1] "
            "within 2 +- 0.2 and excess <= 1e-8 ||w*||_H^2 at sigma = 0; fixed-clip DP-SGD and "
            "DP-SSGD keep >= 10% of their error from sigma = 0.1 to 1e-3 (a sigma^2 law keeps 1%)"
        ),
    )


# -- P4, P5 -----------------------------------------------------------------------------------
#: Baselines of P4/P5, with their excess column.
P45_BASELINES = ("fixed_clip", "ssp", "adassp")
_P4_SLOPE = 2.0
_P5_SLOPE, _P5_BASELINE = (0.7, 1.3), 1.4
_P5_FACTOR = 2.0


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


def _crossing(log_n: np.ndarray, log_ratio: np.ndarray) -> float:
    """log N where log_ratio first falls to log 2, interpolated linearly (NaN if never)."""
    below = np.nonzero(log_ratio <= np.log(_P5_FACTOR))[0]
    if not len(below):
        return float("nan")
    k = below[0]
    if k == 0:
        return float(log_n[0])
    t = (log_ratio[k - 1] - np.log(_P5_FACTOR)) / (log_ratio[k - 1] - log_ratio[k])
    return float(log_n[k - 1] + t * (log_n[k] - log_n[k - 1]))


def _ratio_cells(results: pd.DataFrame, method: str):
    """{d: (log N grid, [excess / rate of each replicate, per N])}."""
    ratio = results.assign(r=results[f"excess_{method}"] / results["rate"])
    return {
        d: (
            np.log(np.sort(g["n"].unique()).astype(float)),
            [c["r"].to_numpy(float) for _, c in g.groupby("n", sort=True)],
        )
        for d, g in ratio.groupby("d", sort=True)
    }


def sample_complexity(results: pd.DataFrame, method: str) -> pd.Series:
    """N*(d): where the median excess / (sigma^2 d / N) falls to 2, log-interpolated in N
    between grid points (NaN when the grid never reaches it)."""
    cells = _ratio_cells(results, method)
    return pd.Series(
        {
            d: np.exp(_crossing(ln, np.log([np.median(c) for c in cs])))
            for d, (ln, cs) in cells.items()
        },
        dtype=float,
    )


def _n_star_slope(results: pd.DataFrame, method: str, draws: int = 200) -> Estimate:
    """Log-log slope of N*(d) in d, with its bootstrap s.e. (replicates resampled per cell)."""
    cells = _ratio_cells(results, method)
    log_d = np.log(np.array(list(cells), dtype=float))
    rng = np.random.default_rng(0)

    def stars(median):
        return np.array(
            [_crossing(ln, np.log([median(c) for c in cs])) for ln, cs in cells.values()]
        )

    def fit(log_star):
        if len(log_star) < 2 or not np.isfinite(log_star).all():
            return float("nan")
        return float(np.polyfit(log_d, log_star, 1)[0])

    value = fit(stars(np.median))
    boot = [fit(stars(lambda c: np.median(rng.choice(c, len(c))))) for _ in range(draws)]
    finite = np.isfinite(boot)
    se = float(np.std(np.asarray(boot)[finite], ddof=1)) if finite.all() else float("inf")
    return Estimate(value, se, len(log_d))


def p5_claim(results: pd.DataFrame) -> ClaimResult:
    """P5: N*(d), the smallest N with excess <= 2 sigma^2 d / N at eps = 1, grows like d for
    DP-AMBSSGD (slope within 3 s.e. of [0.7, 1.3]) and faster for the baselines (each slope
    above DP-AMBSSGD's by 3 s.e.)."""
    ours = _n_star_slope(results, "practical")
    numbers = ours.numbers("DP-AMBSSGD N* slope")
    numbers.update({f"N* d={d:g}": v for d, v in sample_complexity(results, "practical").items()})
    passed = ours.within(*_P5_SLOPE)
    for b in P45_BASELINES:
        theirs = _n_star_slope(results, b)
        numbers.update(theirs.numbers(f"{b} N* slope"))
        gap = Estimate(theirs.value - ours.value, float(np.hypot(theirs.se, ours.se)))
        passed &= gap.above(0.0)
    return ClaimResult(
        passed=bool(passed),
        numbers=numbers,
        detail="DP-AMBSSGD 'practical' variant; N* log-interpolated between grid points",
    )


# -- P7 ----------------------------------------------------------------------------------------
_P7_RATIO, _P7_MARGIN_OVERSHOOT, _P7_LITERAL_OVERSHOOT = 10.0, 2.0, 4.0


def p7_claim(results: pd.DataFrame) -> ClaimResult:
    cells = medians(results, ["n"], ["excess_paper", "excess_literal"])
    ratios = cells["excess_literal"] / cells["excess_paper"]
    margin_worst = float(results["overshoot_paper"].max())
    literal_worst = float(results["overshoot_literal"].max())
    numbers = {
        f"median literal/margin at N={n}": float(r) for n, r in zip(cells["n"], ratios, strict=True)
    }
    numbers.update(
        {
            "worst gamma/max residual, margin": margin_worst,
            "worst gamma/max residual, literal": literal_worst,
        }
    )
    return ClaimResult(
        passed=bool(
            (ratios >= _P7_RATIO).all()
            and margin_worst <= _P7_MARGIN_OVERSHOOT
            and literal_worst >= _P7_LITERAL_OVERSHOOT
        ),
        numbers=numbers,
        detail=(
            "median excess with theta = s over median with theta = s - Gamma' >= 10 at every N; "
            "DP-STAT's level over the true largest residual (non-private diagnostic) stays <= 2 "
            "with the margin (fix D3) and reaches >= 4 with the literal threshold"
        ),
    )
