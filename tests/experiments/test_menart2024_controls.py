"""Negative controls for the claims of the Menart et al. (2024) experiments (B0-B7, grid search).

Each test feeds the *registered* claim (``get(experiment)`` and the claim's ``evaluate``) a
synthetic results table laid out on the experiment's own quick grid, once with the property
the claim states and once (or more) with exactly that property broken: a slope outside its
reference interval on each side, a comparison reversed at one grid point, a bound violated
by more than 5% of the runs, a budget overspent by 1e-9. The tables carry a 5% log-normal
run-to-run spread (5 runs per point), far below the real runs' (docs/menart2024.md), so a
verdict turns on the broken property and not on noise; each slope test checks that the
margin is at least 6 Monte Carlo s.e. of the claim's own estimate.
"""

import math

import numpy as np
import pandas as pd
import pytest

from dpfit.experiments import get
from dpfit.experiments._menart2024_common import AD, AM, GD, PP, SP, TH
from dpfit.experiments.menart2024_grid_search import GS

#: Run-to-run spread of the synthetic excess (sd of its log) and runs per grid point.
SPREAD, REPS = 0.05, 5
#: How far outside a slope's reference interval the controls put the slope.
MARGIN = 0.25
#: The column a sweep varies (B4's lam is the benchmark parameter ``extra``).
_X = {"n": "n", "d": "d", "lam": "extra"}


def _x(row: dict) -> float:
    return float(row[_X.get(row["sweep"], "rho")])


def _claim(experiment: str, name: str):
    return next(c for c in get(experiment).claims if c.name == name).evaluate


def _table(experiment, excess, *, bound=None, nontrivial=None, spent=None, initial=1.0):
    """The quick grid of ``experiment`` with REPS runs per point; ``excess(row)`` is the
    median excess, ``bound(row)`` the run's bound (NaN when None), ``nontrivial(row)`` a bool
    (True when None) and ``spent(row)`` the rho it spent (its rho when None)."""
    rng = np.random.default_rng(17)
    rows = []
    for params in get(experiment).grid["quick"]:
        for r in range(REPS):
            row = {**params, "replicate": r}
            row["excess"] = excess(row) * math.exp(SPREAD * rng.standard_normal())
            row["bound"] = math.nan if bound is None else bound(row)
            row["nontrivial"] = 1.0 if nontrivial is None else float(nontrivial(row))
            row["rho_spent"] = row["rho"] if spent is None else spent(row)
            row["initial_excess"] = initial
            rows.append(row)
    return pd.DataFrame(rows)


# -- slopes within a reference interval ----------------------------------------------------

#: (experiment, claim) -> (method, sweep, reference interval, slope of the synthetic bound).
#: Where the claim's interval runs from the nominal exponent to the bound's slope, the bound
#: slope is the one the quick run measured (docs/menart2024.md); fixed bands are the claims'.
SLOPES = {
    ("menart2024-b0", "adaptive n-slope"): (AD, "n", (-2.0, -1.0), None),
    ("menart2024-b0", "spider d-slope"): (SP, "d", (0.46, 1.0), 0.46),
    ("menart2024-b1", "spider rho-slope"): (SP, "rho", (-1.0, -0.94), -0.94),
    ("menart2024-b1", "adaptive rho-slope"): (AD, "rho", (-1.0, -0.5), None),
    ("menart2024-b2", "spider rho-slope"): (SP, "rho", (-1.0, -0.94), -0.94),
    ("menart2024-b2", "adaptive rho-slope"): (AD, "rho", (-1.0, -0.5), None),
    ("menart2024-b4", "spider n-slope"): (SP, "n", (-2.0, -1.89), -1.89),
    ("menart2024-b4", "spider d-slope"): (SP, "d", (0.39, 1.0), 0.39),
    ("menart2024-b4", "spider lam-slope"): (SP, "lam", (-2.0, -1.0), None),
    ("menart2024-b5", "spider rho-slope p=3"): (SP, "rho-p3", (-0.75, -0.706), -0.706),
    ("menart2024-b5", "spider rho-slope p=4"): (SP, "rho-p4", (-2 / 3, -0.6245), -0.6245),
    ("menart2024-b5", "adaptive rho-slope p=3"): (AD, "rho-p3", (-0.6, -0.375), None),
    ("menart2024-b5", "adaptive rho-slope p=4"): (AD, "rho-p4", (-0.5, -1 / 3), None),
    ("menart2024-b7", "gradient-norm rho-slope"): (AM, "rho", (-0.5, -0.25), None),
}


def _power_law(method, sweep, slope, bound_slope=None):
    """excess = x^slope for ``method`` on ``sweep`` (1 elsewhere); bound 10 x^bound_slope."""

    def excess(row):
        return _x(row) ** slope if (row["method"], row["sweep"]) == (method, sweep) else 1.0

    def bound(row):
        return 10 * _x(row) ** bound_slope if bound_slope is not None else math.nan

    return excess, bound


@pytest.mark.negative_control("menart2024-b0", "adaptive n-slope", "spider d-slope")
@pytest.mark.negative_control("menart2024-b1", "spider rho-slope", "adaptive rho-slope")
@pytest.mark.negative_control("menart2024-b2", "spider rho-slope", "adaptive rho-slope")
@pytest.mark.negative_control(
    "menart2024-b4", "spider n-slope", "spider d-slope", "spider lam-slope"
)
@pytest.mark.negative_control(
    "menart2024-b5",
    "spider rho-slope p=3",
    "spider rho-slope p=4",
    "adaptive rho-slope p=3",
    "adaptive rho-slope p=4",
)
@pytest.mark.negative_control("menart2024-b7", "gradient-norm rho-slope")
@pytest.mark.parametrize("case", sorted(SLOPES), ids=":".join)
def test_slope_claim_fails_steeper_or_shallower_than_its_interval(case):
    """Passes at the interval's midpoint; fails MARGIN below its low end and MARGIN above its
    high end: in n, rho and lam a rate faster than the theorem allows and one it does not
    reach; in d, growth slower than the floor's and faster than d."""
    method, sweep, (low, high), bound_slope = SLOPES[case]
    claim = _claim(*case)
    for slope, expected in (
        (0.5 * (low + high), True),
        (low - MARGIN, False),
        (high + MARGIN, False),
    ):
        excess, bound = _power_law(method, sweep, slope, bound_slope)
        verdict = claim(_table(case[0], excess, bound=bound))
        assert verdict.passed is expected, (slope, verdict.numbers)
        numbers = verdict.numbers
        assert numbers["observed slope"] == pytest.approx(slope, abs=0.03)
        assert (numbers["reference low"], numbers["reference high"]) == pytest.approx(
            (low, high), abs=1e-3
        )
        assert 3 * numbers["observed slope se"] < MARGIN / 2  # the margin is >= 6 s.e.


@pytest.mark.negative_control("menart2024-b0", "spider d-slope")
@pytest.mark.negative_control("menart2024-b4", "spider d-slope")
@pytest.mark.parametrize("experiment", ["menart2024-b0", "menart2024-b4"])
def test_d_slope_deviation_fails_when_the_excess_grows_like_d(experiment):
    """The claim asserts that KL-Spider's excess grows more slowly than d on this grid (a
    deviation from Thm 1's d/(n^2 rho)). Negative control: an excess proportional to d, the
    paper's statement, with the quick run's floor slope; it must fail."""
    method, sweep, _, bound_slope = SLOPES[(experiment, "spider d-slope")]
    excess, bound = _power_law(method, sweep, 1.0, bound_slope)
    verdict = _claim(experiment, "spider d-slope")(_table(experiment, excess, bound=bound))
    assert not verdict.passed, verdict.numbers
    assert verdict.numbers["observed slope"] == pytest.approx(1.0, abs=0.03)


# -- deviations asserted: shallower than both the nominal rate and the bound ----------------

#: (experiment, claim) -> (method, sweep, nominal exponent, the quick run's bound slope).
SHALLOWER = {
    ("menart2024-b0", "spider n-slope"): (SP, "n", -2.0, -1.855),
    ("menart2024-b0", "spider rho-slope (theory preset)"): (TH, "rho", -1.0, -0.944),
    ("menart2024-b4", "spider rho-slope"): (SP, "rho", -1.0, -0.942),
    ("menart2024-b6", "proximal rho-slope p=1.5"): (PP, "rho", -1.5, -1.27),
    ("menart2024-b6", "proximal rho-slope p=1.25"): (PP, "rho-p1.25", -2.5, -2.06),
}


@pytest.mark.negative_control("menart2024-b0", "spider n-slope", "spider rho-slope (theory preset)")
@pytest.mark.negative_control("menart2024-b4", "spider rho-slope")
@pytest.mark.negative_control(
    "menart2024-b6", "proximal rho-slope p=1.5", "proximal rho-slope p=1.25"
)
@pytest.mark.parametrize("case", sorted(SHALLOWER), ids=":".join)
def test_deviation_claim_fails_when_the_rate_or_the_bound_slope_is_reached(case):
    """These claims assert the documented deviation (the excess approaches the bound from
    below, or the capped inner solver floors it): a slope shallower than both references
    passes; one that reaches the nominal rate, or only keeps pace with the bound, fails."""
    method, sweep, nominal, bound_slope = SHALLOWER[case]
    claim = _claim(*case)
    shallowest = max(nominal, bound_slope)
    for slope, expected in ((shallowest + MARGIN, True), (nominal, False), (bound_slope, False)):
        excess, bound = _power_law(method, sweep, slope, bound_slope)
        verdict = claim(_table(case[0], excess, bound=bound))
        assert verdict.passed is expected, (slope, verdict.numbers)
        assert verdict.numbers["bound slope"] == pytest.approx(bound_slope, abs=1e-6)


# -- comparisons: "A beats B" at every (or the last) point of a sweep -----------------------

#: (experiment, claim) -> (winner, ((sweep, loser), ...), points compared).
BEATS = {
    ("menart2024-b0", "adaptive beats spider"): (AD, (("n", SP), ("rho", TH)), "all"),
    ("menart2024-b1", "adaptive beats spider"): (AD, (("rho", SP),), "all"),
    ("menart2024-b2", "adaptive beats spider"): (AD, (("rho", SP),), "all"),
    ("menart2024-b2", "oracle noisy GD gap"): (GD, (("rho", AD), ("rho", SP)), "all"),
    ("menart2024-b3", "adaptive beats fixed schedule"): (AD, (("d", GD), ("rho", GD)), "all"),
    ("menart2024-b4", "adaptive beats spider"): (AD, (("rho", SP), ("n", SP)), "all"),
    ("menart2024-b5", "spider beats adaptive at large rho"): (
        SP,
        (("rho-p3", AD), ("rho-p4", AD)),
        "last",
    ),
}


def _ordered(winner, reversed_at=None, factor=0.3):
    """Median excess ``factor`` for the winner, 1 for every other method, x^-1 throughout;
    at ``reversed_at = (sweep, loser, x)`` the winner is 1.5x that loser instead."""

    def excess(row):
        scale = _x(row) ** -1.0
        if row["method"] != winner:
            return scale
        if reversed_at and (row["sweep"], _x(row)) == reversed_at[::2]:
            return 1.5 * scale
        return factor * scale

    return excess


def _sweep_xs(experiment, sweep, method):
    grid = get(experiment).grid["quick"]
    return sorted({_x(p) for p in grid if p["sweep"] == sweep and p["method"] == method})


@pytest.mark.negative_control("menart2024-b0", "adaptive beats spider")
@pytest.mark.negative_control("menart2024-b1", "adaptive beats spider")
@pytest.mark.negative_control("menart2024-b2", "adaptive beats spider", "oracle noisy GD gap")
@pytest.mark.negative_control("menart2024-b3", "adaptive beats fixed schedule")
@pytest.mark.negative_control("menart2024-b4", "adaptive beats spider")
@pytest.mark.negative_control("menart2024-b5", "spider beats adaptive at large rho")
@pytest.mark.parametrize("case", sorted(BEATS), ids=":".join)
def test_comparison_claim_fails_when_reversed_at_one_point_of_any_sweep(case):
    """The winner at 0.3x every loser passes. Reversing the order at a single point (the
    winner 1.5x the loser there, 5x the others' spread) fails the claim, for each sweep and
    loser it names: at an interior point where every point counts, at the largest x where
    only the last does (and a reversal at the smallest x then still passes)."""
    winner, pairs, points = BEATS[case]
    claim = _claim(*case)
    assert claim(_table(case[0], _ordered(winner))).passed
    for sweep, loser in pairs:
        xs = _sweep_xs(case[0], sweep, loser)
        at = xs[-1] if points == "last" else xs[len(xs) // 2]
        reversed_table = _table(case[0], _ordered(winner, (sweep, loser, at)))
        assert not claim(reversed_table).passed, (sweep, loser, at)
        if points == "last":
            early = _table(case[0], _ordered(winner, (sweep, loser, xs[0])))
            assert claim(early).passed, (sweep, loser)


# -- bounds that must hold for >= 95% of the runs -----------------------------------------

#: (experiment, claim) -> the methods whose runs the bound covers.
BOUNDS = {
    ("menart2024-b0", "bound validity"): (SP, TH),
    ("menart2024-b4", "bound validity"): (SP,),
    ("menart2024-b5", "bound validity"): (SP,),
    ("menart2024-b7", "stationarity bound"): (AM,),
}


@pytest.mark.negative_control("menart2024-b0", "bound validity")
@pytest.mark.negative_control("menart2024-b4", "bound validity")
@pytest.mark.negative_control("menart2024-b5", "bound validity")
@pytest.mark.negative_control("menart2024-b7", "stationarity bound")
@pytest.mark.parametrize("case", sorted(BOUNDS), ids=":".join)
def test_bound_claim_fails_when_a_covered_method_exceeds_its_bound_too_often(case):
    """Every covered run at half its bound passes (methods without a bound, NaN, are not
    counted); two of the five runs at each point of one covered method at twice the bound
    (over 10% of the covered runs, twice the 5% allowed) fails. Trivial runs, which
    release nothing, do not count: the same violations on trivial runs pass."""
    claim = _claim(*case)

    def bound(row):
        return 1.0 if row["method"] in BOUNDS[case] else math.nan

    assert claim(_table(case[0], lambda row: 0.5, bound=bound)).passed
    for method in BOUNDS[case]:

        def over(row, method=method):
            return 2.0 if (row["method"], row["replicate"] < 2) == (method, True) else 0.5

        assert not claim(_table(case[0], over, bound=bound)).passed, method

        def trivial(row, method=method):
            return not (row["method"] == method and row["replicate"] < 2)

        assert claim(_table(case[0], over, bound=bound, nontrivial=trivial)).passed, method


# -- B3's limitation ---------------------------------------------------------------------


@pytest.mark.negative_control("menart2024-b3", "spider trivial", "no private progress")
def test_b3_limitation_claims_fail_on_one_release_or_one_point_of_progress():
    """KL-Spider trivial at every point and adaptive GD above half the initial excess at
    every point pass; one non-trivial KL-Spider run, or adaptive GD at 0.3 of the initial
    excess at a single (d) point, fails the respective claim."""
    trivial, stays = (
        _claim("menart2024-b3", "spider trivial"),
        _claim("menart2024-b3", "no private progress"),
    )

    def spider_trivial(row):
        return row["method"] != SP

    def level(row):
        return 0.95

    good = _table("menart2024-b3", level, nontrivial=spider_trivial)
    assert trivial(good).passed and stays(good).passed

    def one_release(row):
        return spider_trivial(row) or (row["sweep"], row["rho"], row["replicate"]) == (
            "rho",
            4.0,
            0,
        )

    assert not trivial(_table("menart2024-b3", level, nontrivial=one_release)).passed

    def progress(row):
        return 0.3 if (row["method"], row["sweep"], row["d"]) == (AD, "d", 800) else 0.95

    assert not stays(_table("menart2024-b3", progress, nontrivial=spider_trivial)).passed


# -- budget ------------------------------------------------------------------------------

BUDGETS = [f"menart2024-b{k}" for k in range(8)] + ["menart2024-grid-search"]


@pytest.mark.negative_control("menart2024-b0", "budget")
@pytest.mark.negative_control("menart2024-b1", "budget")
@pytest.mark.negative_control("menart2024-b2", "budget")
@pytest.mark.negative_control("menart2024-b3", "budget")
@pytest.mark.negative_control("menart2024-b4", "budget")
@pytest.mark.negative_control("menart2024-b5", "budget")
@pytest.mark.negative_control("menart2024-b6", "budget")
@pytest.mark.negative_control("menart2024-b7", "budget")
@pytest.mark.negative_control("menart2024-grid-search", "budget")
@pytest.mark.parametrize("experiment", BUDGETS)
def test_budget_claim_fails_when_one_run_overspends(experiment):
    """Runs at or below their rho pass; a single run spending rho (1 + 1e-9), more than the
    claim's relative float slack of 1e-12, fails."""
    claim = _claim(experiment, "budget")

    def under(row):
        return row["rho"] * (1.0 if row["replicate"] else 0.8)

    assert claim(_table(experiment, lambda row: 1.0, spent=under)).passed
    first = get(experiment).grid["quick"][0]

    def over(row):
        once = row["replicate"] == 0 and all(row[k] == v for k, v in first.items())
        return row["rho"] * (1 + 1e-9 * once)

    assert not claim(_table(experiment, lambda row: 1.0, spent=over)).passed


# -- the private grid search -------------------------------------------------------------


def _grid_search_table(levels: dict[tuple[str, str], float]) -> pd.DataFrame:
    """menart2024-grid-search's quick grid; median excess levels[(bench, method)] / rho."""

    def excess(row):
        return levels[(row["bench"], row["method"])] / row["rho"]

    table = _table("menart2024-grid-search", excess)
    return table.assign(chosen_gamma=1.0)


@pytest.mark.negative_control(
    "menart2024-grid-search", "adaptive beats grid search", "tuning costs"
)
def test_grid_search_claims_fail_when_one_benchmark_reverses_the_order():
    """Adaptive GD below the grid search, and the grid search above KL-Spider told the true
    (gamma, kappa), on each benchmark: passes with adaptive 0.1, Spider 1, search 3. Each
    claim is made per benchmark, so reversing the order on one of them (search at 0.8x
    adaptive GD on B4; search at 0.8x true-parameter Spider on B0) fails it."""
    beats = _claim("menart2024-grid-search", "adaptive beats grid search")
    costs = _claim("menart2024-grid-search", "tuning costs")
    good = {(b, m): v for b in ("b0", "b4") for m, v in ((AD, 0.1), (SP, 1.0), (GS, 3.0))}
    assert beats(_grid_search_table(good)).passed and costs(_grid_search_table(good)).passed
    assert not beats(_grid_search_table({**good, ("b4", GS): 0.08})).passed
    assert not costs(_grid_search_table({**good, ("b0", GS): 0.8})).passed
