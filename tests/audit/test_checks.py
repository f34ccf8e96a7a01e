"""The parametric mu test, the null calibration and the verdict (reliability 3.4 checks 2-3)."""

import math

import numpy as np
import pytest

from dpfit.audit import assess, mu_test, null_calibration


def _scores(seed, m=2000, mu=1.0, scale=1.0, null_mean=0.0):
    rng = np.random.default_rng(seed)
    return null_mean + scale * rng.standard_normal(m), mu + scale * rng.standard_normal(m)


def test_correct_claim_passes_every_check():
    res = assess(*_scores(0), rho=0.5, target="toy")
    assert res.passed and res.failures == ()
    assert res.mu.mu_claim == pytest.approx(1.0)
    # mu_hat has SE sqrt(2/M + 1/(4M)) = 0.034 at M = 2000: within 4 SE of 1
    assert abs(res.mu.mu_hat - 1.0) < 4 * res.mu.se


def test_false_alarm_rate_over_seeds():
    # Each check is at level 1e-3, so 100 correct audits all pass except with prob < 0.3.
    assert all(assess(*_scores(s), rho=0.5).passed for s in range(100))


@pytest.mark.parametrize("factor", [1.25, 1.5, 2.0])
def test_mu_test_catches_a_25_percent_under_noised_mechanism(factor):
    # reliability 3.4 power table: the parametric test rejects mu x 1.25 with prob. >= 0.98
    # at M = 1000 (SE ~ 0.047, so 1.25 - 3.29 * 0.047 = 1.095 > 1).
    null, alt = _scores(3, m=1000, mu=factor)
    assert not mu_test(null, alt, rho=0.5).passed


def test_null_calibration_catches_a_wrong_scale_and_not_a_right_one():
    # sd of the null scores has relative SE 1/sqrt(2 M) = 1.6 % at M = 2000; the 99.9 %
    # interval is about +-5 %, so a 10 % scale error is caught.
    assert null_calibration(_scores(4, scale=1.0)[0]).passed
    assert not null_calibration(_scores(4, scale=1.1)[0]).passed
    assert not null_calibration(_scores(4, scale=0.9)[0]).passed


def test_ks_catches_a_shifted_null():
    null, alt = _scores(5, null_mean=-0.5, mu=0.5)
    res = assess(null, alt, rho=0.5)
    assert "mu" in res.failures and res.mu.ks_pvalue < 1e-6


def test_a_shift_in_the_unexpected_direction_is_a_violation():
    null, alt = _scores(6, mu=-2.0)
    assert not mu_test(null, alt, rho=0.5).passed


def test_inexact_null_uses_only_the_rigorous_check():
    null, alt = _scores(7, scale=0.5, mu=0.5)  # wrong scale, but no epsilon violation
    res = assess(null, alt, rho=0.5, exact_null=False)
    assert res.mu is None and res.null is None and res.passed


def test_report_lists_bounds_claims_and_verdict():
    res = assess(*_scores(8, mu=3.0), rho=0.5, target="toy", config={"n": 10})
    text = res.table()
    assert "audit of toy" in text and "VIOLATION" in text and "REFUTED" in text
    assert f"{res.claimed[1e-5]:.4f}" in text and res.config["n"] == 10
    assert res.claimed[1e-5] == pytest.approx(4.7283869849, rel=1e-9)  # reliability 4.1
    assert res.gaussian[1e-5] == pytest.approx(4.3771780957, rel=1e-9)
    assert math.isclose(res.mu.mu_claim, 1.0)
