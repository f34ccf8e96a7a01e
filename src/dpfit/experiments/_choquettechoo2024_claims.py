"""Claims and plots of the Choquette-Choo et al. (2024) reproductions (docs/choquettechoo2024.md).

Tolerances are stated in each docstring. Simulation tolerances come from sampling error: the
stationary averages use >= 64 x (T/2) correlated draws per replicate, whose relative standard
error is about 1-2 %, so 5 % is > 2.5 SE.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..theory.ftrl import figure1_ratio
from ._stats import Estimate, Z, loglog_slope, point, series_slope
from .registry import ClaimResult

__all__: list[str] = []

# ---------------------------------------------------------------- Figure 1


def fig1_closed_forms(results: pd.DataFrame) -> ClaimResult:
    """Simulated stationary variance of DP-SGD and of beta* is within 5 % of the closed forms
    at every learning rate (Thm. 2.1)."""
    r = results.assign(rel=results["simulated"] / results["theory"])
    table = r.groupby(["mechanism", "eta"])["rel"].mean()
    worst = float((table - 1).abs().max())
    numbers = {f"{m} eta={e:g}": float(v) for (m, e), v in table.items()}
    numbers["max |sim/theory - 1|"] = worst
    return ClaimResult(passed=worst < 0.05, numbers=numbers)


def fig1_ratio(results: pd.DataFrame) -> ClaimResult:
    """The exact ratio 4 eta (2-eta) K(1-eta)^2 / pi^2 reproduces the documented values (1e-5),
    is <= 1, equals 1 at eta = 1 (the caption's "eta -> 1" gain does not exist; see
    docs/choquettechoo2024.md), and the simulated ratio beta*/DP-SGD is within 7 % of it."""
    golden = {1e-4: 0.0025830, 1e-3: 0.016374, 1e-2: 0.090868, 0.1: 0.40049, 0.5: 0.86379}
    ok = all(abs(figure1_ratio(e) - v) < 1e-5 for e, v in golden.items())
    ok &= figure1_ratio(1.0) == 1.0 and all(figure1_ratio(e) <= 1 for e in np.linspace(0.01, 1.99))
    sim = results.groupby(["eta", "mechanism"])["simulated"].mean().unstack()
    numbers = {"ratio(eta=1)": figure1_ratio(1.0)}
    for eta, row in sim.iterrows():
        got, want = row["optimal"] / row["dp-sgd"], figure1_ratio(float(eta))
        numbers[f"eta={eta:g} simulated"], numbers[f"eta={eta:g} exact"] = got, want
        ok &= abs(got / want - 1) < 0.07
    return ClaimResult(passed=bool(ok), numbers=numbers)


# ---------------------------------------------------------------- Figure 2

_BASE = {"d": 128, "alpha": 1.0, "eta": 0.02}
_GOLDEN = {"dp-sgd": 0.640, "nu-dpftrl": 0.00904}


def _base(results: pd.DataFrame, kind: str) -> pd.DataFrame:
    mask = results["kind"] == kind
    for key, value in _BASE.items():
        mask &= np.isclose(results[key], value)
    return results[mask]


def fig2_lti_values(results: pd.DataFrame) -> ClaimResult:
    """At d = 128, lambda_k = 1/k, eta = 0.02, rho = 1/2: the LTI formula is within 0.1 % of
    0.640 (Noisy-SGD) and 0.00904 (nu-Noisy-FTRL, nu = eta mu), and the LTI simulation's mean
    there is within 3 Monte Carlo s.e. of the formula."""
    form, sim = _base(results, "formula"), _base(results, "sim")
    ok, numbers = True, {}
    for mech, ref in _GOLDEN.items():
        f = float(form.loc[form["mechanism"] == mech, "lti_formula"].mean())
        rows = sim[sim["mechanism"] == mech]
        s = _unbiased(point(rows, "lti_simulated"), rows, "mechanism")
        numbers[f"{mech} formula"] = f
        numbers.update(s.numbers(f"{mech} LTI simulation"))
        ok &= abs(f / ref - 1) < 1e-3 and s.agrees(f)
    numbers["SGD / FTRL gap"] = numbers["dp-sgd formula"] / numbers["nu-dpftrl formula"]
    return ClaimResult(passed=bool(ok), numbers=numbers)


def fig2_random_design(results: pd.DataFrame) -> ClaimResult:
    """At every simulated point where the Thm. C.15 upper bound applies (eta 3 Tr H < 1), the
    random-design stationary risk is not significantly (3 Monte Carlo s.e.) below the LTI
    lower bound (Thm. C.18) nor above the upper bound, for both mechanisms."""
    sims = results[(results["kind"] == "sim") & results["upper_bound"].notna()]
    ok, numbers, worst = True, {}, {}
    for (mech, d, alpha, eta), rows in sims.groupby(["mechanism", "d", "alpha", "eta"]):
        est = _unbiased(point(rows, "random_simulated"), rows, "mechanism")
        low, up = float(rows["lti_formula"].mean()), float(rows["upper_bound"].mean())
        ok &= not est.below(low) and not est.above(up)
        worst[mech] = min(worst.get(mech, math.inf), est.value / low)
        if (d, alpha, eta) == tuple(_BASE.values()):
            numbers.update(est.numbers(f"{mech} random design (base)"))
            numbers[f"{mech} upper bound (base)"] = up
    for mech, ratio in worst.items():
        numbers[f"{mech} min random / LTI formula"] = ratio
    return ClaimResult(passed=bool(ok), numbers=numbers)


def _slope(x, y) -> float:
    """Log-log least-squares slope (the shared helper of :mod:`._stats`)."""
    return series_slope(pd.Series(np.asarray(y, float), index=np.asarray(x, float))).value


_BANDS = {
    ("d", "dp-sgd"): (0.9, 1.1),
    ("alpha", "dp-sgd"): (-math.inf, 0.3),
    ("alpha", "nu-dpftrl"): (0.6, 1.1),
    ("eta", "nu-dpftrl"): (1.6, 2.2),
    ("eta", "dp-sgd"): (0.9, 1.4),
}


def fig2_slopes(results: pd.DataFrame) -> ClaimResult:
    """A check of the exact LTI formula (eq. 3.2 with x x^T replaced by H), not agreement with
    Figure 2: its log-log slopes lie in loose bands, SGD vs d in [0.9, 1.1], vs d_eff below
    0.3, vs eta in [0.9, 1.4]; FTRL vs d_eff in [0.6, 1.1], vs eta in [1.6, 2.2]. The formula
    gives 1.00, 0.00, 1.00, 0.77, 1.78; the paper's random-design slopes are 1.00, 0.18,
    1.27, 0.94, 2.03. Except vs d the formula deviates from the paper, and every band holds
    both values, so this claim cannot tell them apart (docs/choquettechoo2024.md)."""
    form = results[results["kind"] == "formula"].groupby(
        ["sweep", "mechanism", "d", "alpha", "eta"]
    )
    table = form[["lti_formula", "d_eff"]].mean().reset_index()
    ok, numbers = True, {}
    for (sweep, mech), (lo, hi) in _BANDS.items():
        rows = table[(table["sweep"] == sweep) & (table["mechanism"] == mech)]
        x = rows["d_eff"] if sweep == "alpha" else rows[sweep]
        slope = _slope(x, rows["lti_formula"])
        numbers[f"{mech} vs {'d_eff' if sweep == 'alpha' else sweep}"] = slope
        ok &= lo <= slope <= hi
    return ClaimResult(passed=bool(ok), numbers=numbers)


#: Figure 2's fitted slopes (caption): (sweep, mechanism) -> slope. The sweep over alpha is
#: plotted against d_eff.
PAPER_SLOPES = {
    ("d", "dp-sgd"): 1.00,
    ("alpha", "dp-sgd"): 0.18,
    ("alpha", "nu-dpftrl"): 0.94,
    ("eta", "nu-dpftrl"): 2.03,
    ("eta", "dp-sgd"): 1.27,
}
#: Half the last digit the paper prints: its slopes are rounded to 0.01.
_PRINTED = 0.005


def _unbiased(est: Estimate, rows: pd.DataFrame, by: str | list[str]) -> Estimate:
    """``est`` with its bootstrap s.e. times sqrt(n / (n - 1)), n the fewest replicates of a point.

    The bootstrap variance of a mean of n replicates is (n - 1) / n times the usual unbiased
    estimate; with n = 3 that is an s.e. 18 % too small, which would turn a 3 s.e. tolerance
    into 2.45 s.e.
    """
    n = int(rows.groupby(by).size().min())
    return Estimate(est.value, est.se * math.sqrt(n / (n - 1)), est.points, est.method)


def simulated_slopes(results: pd.DataFrame) -> dict[tuple[str, str], dict[str, Estimate]]:
    """Log-log slopes per (sweep, mechanism) of the simulated points: the LTI formula's on the
    same points (exact, s.e. 0) and the LTI and random-design simulations' (bootstrap s.e. over
    the replicates of each point, :func:`_unbiased`). x is d_eff for the alpha sweep."""
    sims = results[results["kind"] == "sim"]
    out = {}
    for (sweep, mech), rows in sims.groupby(["sweep", "mechanism"]):
        x = "d_eff" if sweep == "alpha" else sweep
        formula = rows.groupby(x)["lti_formula"].mean()
        out[(sweep, mech)] = {
            "formula": Estimate(series_slope(formula).value, 0.0, len(formula), "exact"),
            **{
                column: _unbiased(loglog_slope(rows, x, f"{column}_simulated"), rows, x)
                for column in ("lti", "random")
            },
        }
    return out


def fig2_simulated_slopes(results: pd.DataFrame) -> ClaimResult:
    """Random-design simulations (x ~ N(0, H), as the paper's) agree with Figure 2's fitted
    slopes against d and d_eff only: Noisy-SGD vs d 1.00, vs d_eff 0.18, nu-Noisy-FTRL vs
    d_eff 0.94, each within 3 Monte Carlo s.e. plus 0.005 (the paper's rounding). Against eta
    it asserts a deviation: the paper's slopes (FTRL 2.03, SGD 1.27) are not reproduced on
    eta <= 0.1 (1.90 and 1.13 at quick scale). It checks only that the random-design slope is
    above the LTI formula's on the same points (1.77, 1.00) by 3 s.e. and not above the
    paper's by 3 s.e. + 0.005, which any slope in between passes: the multiplicative noise
    x x^T steepens it toward the paper's value; the paper's unstated eta grid is the likely
    rest (docs/choquettechoo2024.md)."""
    slopes = simulated_slopes(results)
    ok, numbers = True, {}
    for (sweep, mech), paper in PAPER_SLOPES.items():
        got = slopes[(sweep, mech)]
        label = f"{mech} vs {'d_eff' if sweep == 'alpha' else sweep}"
        numbers[f"{label} paper"] = paper
        numbers[f"{label} formula"] = got["formula"].value
        numbers.update(got["lti"].numbers(f"{label} LTI sim"))
        numbers.update(got["random"].numbers(f"{label} random sim"))
        rand = got["random"]
        if sweep == "eta":
            ok &= rand.above(got["formula"].value) and not rand.above(paper + _PRINTED)
        else:
            ok &= abs(rand.value - paper) <= Z * rand.se + _PRINTED
    return ClaimResult(passed=bool(ok), numbers=numbers)


# ---------------------------------------------------------------- Figure 4 substitutes


def _best(results: pd.DataFrame, metric: str, higher: bool) -> pd.DataFrame:
    """Per (epsilon, mechanism): the learning rate with the best mean metric, mean and SE."""
    stats = results.groupby(["epsilon", "mechanism", "lr"])[metric].agg(["mean", "std", "count"])
    stats["se"] = stats["std"] / np.sqrt(stats["count"])
    rows = []
    for (eps, mech), grp in stats.groupby(level=[0, 1]):
        key = grp["mean"].idxmax() if higher else grp["mean"].idxmin()
        lrs = grp.index.get_level_values("lr")
        rows.append(
            {
                "epsilon": eps,
                "mechanism": mech,
                "lr": key[2],
                "mean": grp.loc[key, "mean"],
                "se": grp.loc[key, "se"],
                "edge": key[2] in (lrs.min(), lrs.max()),
            }
        )
    return pd.DataFrame(rows).set_index(["epsilon", "mechanism"])


def _metric(results: pd.DataFrame) -> tuple[str, bool]:
    return ("accuracy", True) if "accuracy" in results else ("excess_risk", False)


def _beats(
    results: pd.DataFrame, winner: str, loser: str, label: str
) -> tuple[bool, dict[str, float]]:
    """Does ``winner`` at its best learning rate beat ``loser`` at its best by more than 2
    standard errors of the difference, at epsilon = 2 and at 8? The s.e. of each mean is the
    seeds' sample std / sqrt(seeds); the two mechanisms' seeds are independent runs."""
    metric, higher = _metric(results)
    best = _best(results, metric, higher)
    ok, numbers = True, {}
    for eps in (2.0, 8.0):
        win, lose = best.loc[(eps, winner)], best.loc[(eps, loser)]
        gain = (win["mean"] - lose["mean"]) * (1 if higher else -1)
        se = math.hypot(win["se"], lose["se"])
        numbers[f"eps={eps:g} {label} gain"] = float(gain)
        numbers[f"eps={eps:g} {label} gain se"] = float(se)
        ok &= bool(gain > 2 * se)
    return ok, numbers


def _means(results: pd.DataFrame) -> dict[str, float]:
    """Best-learning-rate mean of every mechanism at epsilon = 2 and 8."""
    metric, higher = _metric(results)
    best = _best(results, metric, higher)
    return {
        f"eps={eps:g} {mech} {metric}": float(best.loc[(eps, mech), "mean"])
        for eps in (2.0, 8.0)
        for mech in ("dp-sgd", "nu=0", "nu-dpftrl")
    }


def nu_beats_dpsgd(results: pd.DataFrame) -> ClaimResult:
    """At epsilon = 2 and 8 (delta = 1e-5, same participation, noise calibrated per mechanism),
    nu-DP-FTRL at its best learning rate beats DP-SGD at its best by more than 2 standard
    errors of the difference (3 seeds each at quick scale, 5 at paper scale)."""
    ok, numbers = _beats(results, "nu-dpftrl", "dp-sgd", "nu-DP-FTRL over DP-SGD")
    return ClaimResult(passed=ok, numbers=_means(results) | numbers, detail="best learning rate")


def damping_helps(results: pd.DataFrame) -> ClaimResult:
    """nu-DP-FTRL (nu from the prefix-error rule) beats nu = 0 (Optimal CC) at its best
    learning rate at epsilon = 2 and 8 by more than 2 standard errors of the difference (3
    seeds each at quick scale, 5 at paper scale): damping matters (Section 4.3)."""
    ok, numbers = _beats(results, "nu-dpftrl", "nu=0", "nu-DP-FTRL over nu=0")
    return ClaimResult(passed=ok, numbers=_means(results) | numbers, detail="best learning rate")


def no_edge_optimum(results: pd.DataFrame) -> ClaimResult:
    """No mechanism's best learning rate sits on the edge of the grid."""
    metric, higher = _metric(results)
    best = _best(results, metric, higher)
    numbers = {f"eps={e:g} {m} best lr": float(r["lr"]) for (e, m), r in best.iterrows()}
    return ClaimResult(passed=not bool(best["edge"].any()), numbers=numbers)
