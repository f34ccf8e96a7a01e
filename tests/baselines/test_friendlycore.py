"""friendlycore_2sls: neighbour replay, exact accounting, accuracy, refusals before any charge."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpfit.baselines.friendlycore as fc
from dpfit.baselines import friendlycore_2sls, two_sls
from dpfit.baselines.friendlycore import statistic_bound, sufficient_statistics
from dpfit.privacy import PrivacyLedger, mean_sensitivity
from dpfit.testing import check_neighbours

RHO, RADIUS, BOUND = 1.0, 30.0, 300.0


def _iv(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Strong instruments (first-stage coefficients 2 and 1), confounded x, beta = 1.5."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, 2))
    u = rng.standard_normal(n)
    x = Z @ np.array([2.0, 1.0]) + u + rng.standard_normal(n)
    y = 1.5 * x + u + rng.standard_normal(n)
    return x[:, None], y, Z


X, Y, Z = _iv(300, 0)


def _run(X, y, Z):
    return friendlycore_2sls(X, y, Z, rho=RHO, radius=RADIUS, bound=BOUND, rng=5)


def _extreme(value: float, column: str):
    Xn, yn, Zn = X.copy(), Y.copy(), Z.copy()
    {"X": Xn, "y": yn[:, None], "Z": Zn}[column][7] = value
    return Xn, yn, Zn


@pytest.mark.parametrize("column", ["X", "y", "Z"])
@pytest.mark.parametrize("value", [1e154, -1e308, 0.0, 1e-300])
def test_neighbour_with_an_extreme_record_moves_each_release_within_its_sensitivity(column, value):
    """Record/replay (dpfit.testing.check_neighbours): same seed, replayed releases, and each
    query's move against its declared sensitivity. 1e154 in z makes z z^T overflow to inf
    (the row is zeroed by the clip); -1e308 in x or y overflows z x^T or z y."""
    report = check_neighbours(_run, (X, Y, Z), _extreme(value, column))
    assert report.releases == 2
    assert report.max_share <= 1.0


def test_the_neighbour_check_is_not_vacuous():
    """An extreme record moves the core query by more than 20% of its sensitivity (0.54) ..."""
    report = check_neighbours(_run, (X, Y, Z), _extreme(1e154, "y"))
    assert report.max_share > 0.2


def test_an_understated_sensitivity_is_caught(monkeypatch):
    """... so a sensitivity declared at half its value fails the same check."""
    real = fc.mean_sensitivity
    monkeypatch.setattr(fc, "mean_sensitivity", lambda clip, n: real(clip, n) / 2)
    with pytest.raises(AssertionError, match="declared sensitivity"):
        check_neighbours(_run, (X, Y, Z), _extreme(1e154, "y"))


def test_ledger_total_is_rho_split_one_tenth_to_the_filter():
    traj = _run(X, Y, Z)
    entries = {e.label: e for e in traj.ledger}
    assert list(entries) == ["friendlycore/center", "friendlycore/moments"]
    assert traj.rho == pytest.approx(RHO, rel=1e-12)
    assert traj.rho <= RHO
    assert entries["friendlycore/center"].rho == pytest.approx(0.1 * RHO, rel=1e-12)
    assert entries["friendlycore/moments"].rho == pytest.approx(0.9 * RHO, rel=1e-12)
    n = X.shape[0]
    assert entries["friendlycore/center"].sensitivity == mean_sensitivity(BOUND, n)
    assert entries["friendlycore/moments"].sensitivity == mean_sensitivity(RADIUS, n)
    assert mean_sensitivity(RADIUS, n) == pytest.approx(2 * RADIUS / n, rel=1e-9)
    d = Z.shape[1] ** 2 + Z.shape[1] * X.shape[1] + Z.shape[1]
    assert traj.releases["moments"].shape == (d,)


@pytest.mark.parametrize("rho", [0.1, 0.3, 0.7, 1.0 / 3.0, 2.9, 4.999999])
def test_the_two_shares_never_exceed_rho(rho):
    """The ledger adds charges exactly; rounding of 0.1 rho and rho - 0.1 rho must not push
    the total above the budget (BudgetExceededError) or above rho."""
    traj = friendlycore_2sls(X, Y, Z, rho=rho, radius=RADIUS, bound=BOUND, rng=0)
    assert traj.rho <= rho
    assert traj.rho == pytest.approx(rho, rel=1e-12)


def test_sufficient_statistics_average_to_the_2sls_moments():
    V = sufficient_statistics(X, Y, Z)
    n, q = Z.shape
    s = V.mean(axis=0)
    np.testing.assert_allclose(s[: q * q].reshape(q, q), Z.T @ Z / n, rtol=1e-12)
    np.testing.assert_allclose(s[q * q : q * q + q].reshape(q, 1), Z.T @ X / n, rtol=1e-12)
    np.testing.assert_allclose(s[q * q + q :], Z.T @ Y / n, rtol=1e-12)
    bound = statistic_bound(3.0, 4.0, 12.0)
    assert bound == pytest.approx(3.0 * 13.0)


def test_accuracy_on_a_strong_instrument_design_is_within_sampling_error():
    """n = 50000, rho = 5: privacy noise on the moments is sigma_2 = 2r/(n sqrt(1.8 rho)) =
    4e-4 per coordinate, which moves beta by about 1e-3, against a 2SLS standard error of
    about 4e-3; the radius 60 clips almost no record (||v - E v|| has sd about 6 here).
    Over 20 data seeds, |beta_FC - beta| / se_2SLS must stay below 4: each term is about
    N(0, 1 + 0.06), so 4 is exceeded with probability < 20 * 1e-4."""
    worst = 0.0
    for seed in range(20):
        Xb, yb, Zb = _iv(50_000, 100 + seed)
        fit = friendlycore_2sls(Xb, yb, Zb, rho=5.0, radius=60.0, bound=600.0, rng=seed)
        se = two_sls(Xb, yb, Zb, cov_type="robust").bse[0]
        worst = max(worst, abs(fit.estimate[0] - 1.5) / se)
    assert worst < 4.0


def test_small_budget_is_much_noisier_than_large_budget():
    """The same data at rho = 0.01 and 5: the error grows (the noise is really there)."""
    Xb, yb, Zb = _iv(2000, 7)
    errs = {
        rho: np.median(
            [
                abs(
                    friendlycore_2sls(
                        Xb, yb, Zb, rho=rho, radius=30.0, bound=300.0, rng=s
                    ).estimate[0]
                    - 1.5
                )
                for s in range(15)
            ]
        )
        for rho in (0.01, 5.0)
    }
    assert errs[0.01] > 5 * errs[5.0]


@pytest.mark.parametrize(
    "kwargs, data, match",
    [
        ({"rho": 0.0}, None, "rho"),
        ({"radius": -1.0}, None, "radius"),
        ({"bound": math.inf}, None, "bound"),
        ({"radius": 400.0}, None, "must not exceed bound"),
        ({"eig_floor": 0.0}, None, "eig_floor"),
        ({}, "nan", "NaN|finite"),
        ({}, "under", "under-identified"),
        ({}, "rows", "same number of rows"),
    ],
)
def test_bad_inputs_are_refused_before_any_charge(kwargs, data, match):
    ledger = PrivacyLedger()
    Xb, yb, Zb = X.copy(), Y.copy(), Z.copy()
    if data == "nan":
        yb[3] = np.nan
    elif data == "under":
        Zb = Zb[:, :1]
        Xb = np.column_stack([Xb, Xb])
    elif data == "rows":
        Zb = Zb[:-1]
    args = {"rho": RHO, "radius": RADIUS, "bound": BOUND, **kwargs}
    with pytest.raises(ValueError, match=match):
        friendlycore_2sls(Xb, yb, Zb, ledger=ledger, rng=0, **args)
    assert len(ledger) == 0
