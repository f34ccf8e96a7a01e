"""Clopper-Pearson epsilon lower bounds (reliability 3.4 check 1): exactness, ceiling, alarms."""

import math

import numpy as np
import pytest
from scipy import stats

from dpfit.audit import clopper_pearson, epsilon_lower_bounds


@pytest.mark.parametrize("k, m", [(0, 50), (3, 50), (17, 2000), (2000, 2000), (1999, 2000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, m):
    # A one-sided bound at level a is one end of the two-sided exact interval at 2a.
    ci = stats.binomtest(k, m).proportion_ci(confidence_level=1 - 2e-3, method="exact")
    assert clopper_pearson(k, m, 1e-3, side="lower") == pytest.approx(ci.low, abs=1e-12)
    assert clopper_pearson(k, m, 1e-3, side="upper") == pytest.approx(ci.high, abs=1e-12)


def test_clopper_pearson_rejects_unknown_side():
    with pytest.raises(ValueError, match="side"):
        clopper_pearson(1, 10, 0.05, side="both")


def test_perfect_separation_reaches_the_ceiling_ln_m_over_ln_one_over_alpha():
    # 2 directions x 7 thresholds x 2 bounds: per-bound level 1e-3/28. With every D' run above
    # every threshold and no D run, eps_lb = ln((alpha'^(1/M) - delta) / (1 - alpha'^(1/M))).
    m = 2000
    bounds = epsilon_lower_bounds(np.full(m, -10.0), np.full(m, 10.0), shift=1.0)
    level = 1e-3 / 28
    fpr = 1 - level ** (1 / m)
    for b in bounds:
        assert b.epsilon == pytest.approx(math.log((1 - fpr - b.delta) / fpr), rel=1e-9)
    assert 5.2 < bounds[0].epsilon < 5.5  # reliability 3.4: the ceiling is about 5.2-5.4


def test_identical_outputs_give_no_evidence():
    rng = np.random.default_rng(0)
    s = rng.standard_normal(2000)
    assert all(b.epsilon == 0.0 for b in epsilon_lower_bounds(s, s, shift=0.0))


def test_reverse_direction_is_used():
    # Half of the runs on D land far below everything: only {s < shift - t} separates well.
    rng = np.random.default_rng(0)
    null = np.where(np.arange(2000) % 2 == 0, -10.0, rng.standard_normal(2000))
    bounds = epsilon_lower_bounds(null, rng.standard_normal(2000), shift=0.0)
    assert all(b.direction == "below" and b.epsilon > 3 for b in bounds)


def test_false_alarm_rate_of_a_tight_gaussian_claim_is_below_alpha():
    # 300 audits of an exactly mu-GDP score (mu = 1, i.e. rho = 0.5, whose CKS claim at
    # delta' = 0.1 is 1.656): bounds must stay below the true epsilon of a 1-GDP mechanism
    # (exact Gaussian, 1.160 at 0.1) in all of them; at alpha = 1e-3, P(any violation) < 0.3.
    from dpfit.privacy import gaussian_epsilon

    rng = np.random.default_rng(1)
    worst = -math.inf
    for _ in range(300):
        null, alt = rng.standard_normal(2000), 1.0 + rng.standard_normal(2000)
        for b in epsilon_lower_bounds(null, alt, shift=1.0):
            worst = max(worst, b.epsilon - gaussian_epsilon(1.0, b.delta))
    assert worst < 0


def test_power_against_doubled_mu():
    # mu = 2 scored against a claim of mu = 1 (noise halved): some bound exceeds the
    # rho = 0.5 claim (2.04 at delta' = 0.05, 1.66 at 0.1), as in reliability 3.4.
    from dpfit.privacy import zcdp_to_approx_dp

    rng = np.random.default_rng(2)
    bounds = epsilon_lower_bounds(
        rng.standard_normal(2000), 2 + rng.standard_normal(2000), shift=1.0
    )
    assert any(b.epsilon > zcdp_to_approx_dp(0.5, b.delta) for b in bounds)


@pytest.mark.parametrize(
    "kwargs, exc",
    [({"thresholds": []}, ValueError), ({"alpha": 0}, ValueError), ({"deltas": [0.0]}, ValueError)],
)
def test_bad_arguments(kwargs, exc):
    with pytest.raises(exc):
        epsilon_lower_bounds([0.0, 1.0], [0.5, 2.0], shift=1.0, **kwargs)


def test_non_finite_scores_are_rejected():
    with pytest.raises(ValueError, match="null"):
        epsilon_lower_bounds([np.nan, 1.0], [0.5, 2.0], shift=1.0)
