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


def _simulated_ratios(results: pd.DataFrame) -> dict[float, Estimate]:
    """Per eta: the simulated ratio beta* / DP-SGD of mean stationary variances, with its
    delta-method s.e. from each mechanism's s.e. over replicates (independent runs)."""
    stats = results.groupby(["eta", "mechanism"])["simulated"].agg(["mean", "std", "count"])
    out = {}
    for eta in sorted(results["eta"].unique()):
        opt, sgd = stats.loc[(eta, "optimal")], stats.loc[(eta, "dp-sgd")]
        ratio = float(opt["mean"] / sgd["mean"])
        rel = [row["std"] / np.sqrt(row["count"]) / row["mean"] for row in (opt, sgd)]
        out[float(eta)] = Estimate(ratio, ratio * float(np.hypot(*rel)))
    return out


def fig1_ratio(results: pd.DataFrame) -> ClaimResult:
    """Figure 1 (left), at the simulated learning rates: the simulated ratio of beta*'s
    stationary variance to DP-SGD's is not above 1 by 3 s.e. at any eta ("never worse"), is
    below 0.1 by 3 s.e. at the smallest eta ("orders of magnitude better at eta -> 0") and
    below 1 by 3 s.e. at the largest (towards eta -> 2, where the exact ratio is symmetric);
    at every eta it is within 7% of the exact 4 eta (2 - eta) K(1 - eta)^2 / pi^2."""
    ratios = _simulated_ratios(results)
    numbers: dict[str, float] = {}
    ok = True
    for eta, est in ratios.items():
        want = figure1_ratio(eta)
        numbers.update(est.numbers(f"eta={eta:g} simulated"))
        numbers[f"eta={eta:g} exact"] = want
        ok &= not est.above(1.0) and abs(est.value / want - 1) < 0.07
    etas = sorted(ratios)
    ok &= ratios[etas[0]].below(0.1) and ratios[etas[-1]].below(1.0)
    return ClaimResult(passed=bool(ok), numbers=numbers)


def fig1_no_gain_near_one(results: pd.DataFrame) -> ClaimResult:
    """Deviation from the caption's "orders of magnitude better at eta -> 1": at the grid eta
    nearest 1 the simulated ratio is above 0.9 by 3 s.e. (the exact ratio is 0.995 at
    eta = 0.9 and 1 at eta = 1, where beta* is the identity)."""
    ratios = _simulated_ratios(results)
    eta = min(ratios, key=lambda e: abs(e - 1.0))
    est = ratios[eta]
    numbers = {**est.numbers(f"eta={eta:g} simulated"), f"eta={eta:g} exact": figure1_ratio(eta)}
    numbers["exact at eta=1"] = figure1_ratio(1.0)
    return ClaimResult(passed=bool(est.above(0.9)), numbers=numbers)


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


def fig2_formula_slopes(results: pd.DataFrame) -> ClaimResult:
    """Deviation of the LTI formula (eq. 3.2 with x x^T replaced by H, Thm. C.18's lower
    bound) from Figure 2: its exact log-log slopes agree with the paper's fitted slope vs d
    (1.00, within 0.02) but lie below the paper's vs d_eff and vs eta by more than 0.1
    (formula 0.00 and 0.77 vs d_eff, 1.00 and 1.78 vs eta; paper 0.18, 0.94, 1.27, 2.03):
    the paper plots random-design simulations, whose multiplicative noise x x^T the formula
    drops (the claim simulated-slopes checks those)."""
    form = results[results["kind"] == "formula"].groupby(
        ["sweep", "mechanism", "d", "alpha", "eta"]
    )
    table = form[["lti_formula", "d_eff"]].mean().reset_index()
    ok, numbers = True, {}
    for (sweep, mech), paper in PAPER_SLOPES.items():
        rows = table[(table["sweep"] == sweep) & (table["mechanism"] == mech)]
        x = rows["d_eff"] if sweep == "alpha" else rows[sweep]
        slope = _slope(x, rows["lti_formula"])
        label = f"{mech} vs {'d_eff' if sweep == 'alpha' else sweep}"
        numbers[f"{label}: formula"], numbers[f"{label}: paper"] = slope, paper
        ok &= abs(slope - paper) <= 0.02 if sweep == "d" else slope < paper - 0.1
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


def _slope_numbers(results: pd.DataFrame, sweeps: tuple[str, ...]):
    slopes = simulated_slopes(results)
    for (sweep, mech), paper in PAPER_SLOPES.items():
        if sweep in sweeps:
            yield (
                f"{mech} vs {'d_eff' if sweep == 'alpha' else sweep}",
                paper,
                slopes[(sweep, mech)],
            )


def _label_numbers(label: str, paper: float, got: dict[str, Estimate]) -> dict[str, float]:
    numbers = {f"{label}: paper": paper, f"{label}: formula": got["formula"].value}
    numbers.update(got["lti"].numbers(f"{label}: LTI sim"))
    numbers.update(got["random"].numbers(f"{label}: random sim"))
    return numbers


def fig2_simulated_slopes(results: pd.DataFrame) -> ClaimResult:
    """Random-design simulations (x ~ N(0, H), as the paper's) agree with Figure 2's fitted
    slopes against d and d_eff: Noisy-SGD vs d 1.00, vs d_eff 0.18, nu-Noisy-FTRL vs d_eff
    0.94, each within 3 Monte Carlo s.e. plus 0.005 (the paper's rounding)."""
    ok, numbers = True, {}
    for label, paper, got in _slope_numbers(results, ("d", "alpha")):
        numbers |= _label_numbers(label, paper, got)
        ok &= abs(got["random"].value - paper) <= Z * got["random"].se + _PRINTED
    return ClaimResult(passed=bool(ok), numbers=numbers)


def fig2_eta_slopes_below_paper(results: pd.DataFrame) -> ClaimResult:
    """Deviation against eta: the random-design slopes are below the paper's fitted ones
    (nu-Noisy-FTRL 2.03, Noisy-SGD 1.27) by more than 3 Monte Carlo s.e. + 0.005 (1.90 and
    1.13 at quick scale, on eta <= 0.1), and above the LTI formula's on the same points
    (1.77, 1.00) by 3 s.e.: the multiplicative noise x x^T steepens the formula's slope but
    not to the paper's value; the paper's eta grid is not stated, and the slope depends on it
    (docs/choquettechoo2024.md)."""
    ok, numbers = True, {}
    for label, paper, got in _slope_numbers(results, ("eta",)):
        numbers |= _label_numbers(label, paper, got)
        rand = got["random"]
        ok &= rand.below(paper - _PRINTED) and rand.above(got["formula"].value)
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
