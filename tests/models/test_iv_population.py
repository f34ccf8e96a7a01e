"""DPIVRegression's default (noisy-moment 2SLS): population intervals, noise law, accounting."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpfit
from dpfit import Budget, DPIVRegression
from dpfit.exceptions import InsecureRandomnessWarning, LargeBudgetWarning
from dpfit.experiments.inference_coverage_iv import robust_2sls
from dpfit.inference.population_iv import moment_noise_covariance
from dpfit.mechanisms import recording

N = 3000
BOUNDS = {"x": (-8, 11), "w": (-4, 4), "z": (0, 1)}
Y_BOUNDS = (-10, 14)


@pytest.fixture(scope="module")
def frame(iv_frame):
    """As test_iv's data, with an error whose sd grows with |w|."""
    return iv_frame(N, heteroskedastic=True)


def _fit(frame, **kw):
    params = {"rho": 2.0, "bounds": BOUNDS, "y_bounds": Y_BOUNDS, "random_state": 0, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose
        warnings.simplefilter("ignore", LargeBudgetWarning)  # rho = 1e6 below
        model = DPIVRegression(**params)
        return model.fit(frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]])


def _robust(frame):
    one = np.ones((len(frame), 1))
    return robust_2sls(
        np.column_stack([one, frame[["w", "x"]]]),
        frame["y"].to_numpy(),
        np.column_stack([one, frame[["w", "z"]]]),
    )


def test_default_releases_moments_and_spends_exactly_rho(frame):
    model = _fit(frame)
    labels = [e.label for e in model.privacy_.entries]
    assert labels == ["iv/column-moments", "iv/moments", "iv/omega"]
    assert model.privacy_.rho == pytest.approx(2.0, rel=1e-12)
    res = model.result_
    assert res.targets == ("population",) and not res.experimental
    assert list(res.bse.index) == ["Intercept", "w", "x"]
    text = " ".join(res.summary().as_text().split())
    assert "Interval covers: the population coefficients" in text
    assert "EXPERIMENTAL" not in text


def test_with_negligible_noise_it_is_robust_2sls(frame):
    """rho = 1e6: the release is 2SLS and bse the robust (HC0) 2SLS standard errors.

    Left over: row clipping (rows of norm > 3 sqrt(5) in standardised units, a handful) and
    noise of relative size ~1e-4; 2% on the coefficients' scale and 5% on the s.e. are far
    above both and far below what a wrong sandwich (e.g. non-robust) would give here.
    """
    model = _fit(frame, rho=1e6)
    beta, se = _robust(frame)
    np.testing.assert_allclose(model.result_.estimate, beta, atol=0.02 * np.abs(beta).max())
    np.testing.assert_allclose(model.result_.bse.to_numpy(), se, rtol=0.05)
    privacy = np.diag(model.result_.covariance().parts["privacy"])
    assert (privacy < 0.01 * se**2).all()


def test_robust_2sls_is_linearmodels_robust(frame):
    linearmodels = pytest.importorskip("linearmodels")
    fit = linearmodels.IV2SLS.from_formula("y ~ 1 + w + [x ~ z]", frame).fit(cov_type="robust")
    beta, se = _robust(frame)
    np.testing.assert_allclose(beta, fit.params.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(se, fit.std_errors.to_numpy(), rtol=1e-10)


def test_moment_noise_covariance_matches_simulation():
    """Two routes: the closed form L L' against 40 000 draws of symmetric noise.

    Entries of a sample covariance of 40 000 draws have relative s.e. <= sqrt(2 / 40000) =
    0.7% on the diagonal; 5% of the largest entry is > 5 s.e.
    """
    k, x_idx, z_idx, y_idx = 5, [0, 1, 2], [0, 1, 3], 4  # intercept, exog w, x, z, y
    beta = np.array([0.7, -0.3, 1.2])
    rng = np.random.default_rng(1)
    upper = np.triu_indices(k)
    c = np.zeros(k)
    c[y_idx] = 1.0
    c[x_idx] -= beta
    draws = np.empty((40_000, len(z_idx)))
    for t in range(draws.shape[0]):
        E = np.zeros((k, k))
        E[upper] = rng.standard_normal(upper[0].size)
        E.T[upper] = E[upper]
        draws[t] = E[z_idx] @ c
    closed = moment_noise_covariance(k, x_idx, z_idx, y_idx, beta)
    np.testing.assert_allclose(np.cov(draws.T), closed, atol=0.05 * closed.max())


def test_privacy_part_matches_the_spread_over_noise(frame):
    """On fixed data, refits with fresh noise scatter as the reported privacy part says.

    200 refits: the sample variance has relative s.e. sqrt(2 / 199) = 10%, so the ratio must
    lie in [0.7, 1.3] (3 s.e.); the first-order law is the thing tested.
    """
    fits = [_fit(frame, rho=0.5, random_state=s).result_ for s in range(200)]
    spread = np.var([r.estimate for r in fits], axis=0, ddof=1)
    reported = np.mean([np.diag(r.covariance().parts["privacy"]) for r in fits], axis=0)
    assert 0.7 < spread[2] / reported[2] < 1.3  # the endogenous coefficient


def test_two_stage_settings_are_refused_with_moments(frame):
    budget = Budget(rho=5.0)
    with recording() as rec, pytest.raises(ValueError, match="method='2s-gd'"):
        DPIVRegression(rho=1.0, steps=50, m=4).fit(
            frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]], budget=budget
        )
    with recording() as rec2, pytest.raises(ValueError, match="method"):
        dpfit.iv("y ~ w + [x ~ z]", frame, rho=1.0, method="gd", budget=budget)
    assert len(rec) == len(rec2) == 0 and budget.spent == 0.0


def test_sample_target_is_not_released_by_moments(frame):
    res = _fit(frame).result_
    with pytest.raises(ValueError, match="no confidence interval"):
        res.conf_int(target="sample")
