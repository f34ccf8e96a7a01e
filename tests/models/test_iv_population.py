"""DPIVRegression's default (noisy-moment 2SLS): population intervals, noise law, accounting."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit import Budget, DPIVRegression
from dpfit.exceptions import (
    CoverageWarning,
    IdentificationWarning,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
)
from dpfit.experiments import inference_coverage_iv as coverage_iv
from dpfit.experiments.inference_coverage_iv import robust_2sls
from dpfit.inference.population_iv import moment_noise_covariance
from dpfit.mechanisms import recording
from dpfit.models import _iv_methods as iv_methods

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
    labels = [e.label for e in model.privacy_.releases]
    assert labels == ["iv/column-moments", "iv/moments", "iv/omega", "iv/far-rows"]
    assert model.privacy_.rho <= 2.0 and model.privacy_.rho == pytest.approx(2.0, rel=1e-12)
    res = model.result_
    assert res.targets == ("population",) and not res.experimental
    assert list(res.bse.index) == ["Intercept", "w", "x"]
    text = " ".join(res.summary().as_text().split())
    assert "Interval covers: the population 2SLS coefficients (sampling + privacy error)" in text
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


def _collinear(n: int, seed: int):
    """Over-identified, two of three instruments nearly collinear (z1 = z0 + 0.05 noise): the
    instruments' second moment has a data eigenvalue of about 0.05^2 / 2 in standardised
    units, far below the release's noise floor 2 s sqrt(k) (0.09 at n = 2000, rho = 5)."""
    rng = np.random.default_rng([seed, 14])  # synthetic data, not privacy noise
    z0, e1, z2, w, u, v, e = rng.standard_normal((7, n))
    x = 0.5 + 0.6 * (z0 + z2) + 0.5 * w + u + v
    y = 1 + 0.5 * x - 0.3 * w + u + (0.6 + 0.4 * np.abs(w)) * e
    frame = pd.DataFrame({"y": y, "x": x, "w": w, "z0": z0, "z1": z0 + 0.05 * e1, "z2": z2})
    bounds = {"x": (-10, 11), "w": (-6, 6), **{f"z{j}": (-6, 6) for j in range(3)}}
    return frame, bounds


def _released(monkeypatch):
    """Keep what the moments fit computed (its releases and checks) for the test to read."""
    kept = {}
    original = iv_methods.fit_moments

    def keep(*args, **kwargs):
        kept.update(original(*args, **kwargs), x_idx=args[1], z_idx=args[2])
        return kept

    monkeypatch.setattr(iv_methods, "fit_moments", keep)
    return kept


def test_collinear_instruments_cost_efficiency_not_coverage(monkeypatch):
    """The fit raises the eigenvalues of Z'Z/n to the noise floor before inverting it (the
    weight of 2SLS). Where a data eigenvalue is below the floor (NoisyMoment.floor_binds on
    the released block), G = (Q'WQ)^-1 Q'W is computed with that same weight, so the sandwich
    is the variance of the estimator computed: efficiency is lost, not validity, and the fit
    does not warn. 200 seeded fits: coverage of beta*_x within 3 binomial s.e. (0.046) of
    0.95, and silent (an earlier version warned about the instrument block in every one of
    these fits, which covered 0.95)."""
    kept = _released(monkeypatch)
    covers, warned = [], 0
    for seed in range(200):
        frame, bounds = _collinear(2000, seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CoverageWarning)
            res = DPIVRegression(rho=5.0, bounds=bounds, y_bounds=(-9, 11), random_state=seed).fit(
                frame[["w", "x"]], frame["y"], Z=frame[["w", "z0", "z1", "z2"]]
            )
        lo, hi = res.conf_int().loc["x"]
        covers.append(lo <= 0.5 <= hi)
        warned += any(issubclass(w.category, CoverageWarning) for w in caught)
        if seed == 0:
            M = kept["releases"]["moments"]
            S = M.matrix[np.ix_(kept["z_idx"], kept["z_idx"])]
            assert np.linalg.eigvalsh(S)[0] < M.floor - M.noise_std * np.sqrt(2.0)
    assert 0.904 <= np.mean(covers) <= 0.996
    assert warned <= 10


def _bread_noise_sd(M, x_idx, z_idx) -> tuple[float, float]:
    """Smallest eigenvalue of A = Q' W Q (G = A^-1 Q' W) from the release, and a bound on its
    first-order noise s.d.: with u = W Q v (v its eigenvector), v' dA v = 2 u' E_zx v -
    u' E_zz u, and a bilinear form a' E b of the symmetric noise has s.d. <= s sqrt(2) |a| |b|
    (NoisyMoment.floor_binds), so s.d. <= s sqrt(2) (2 |u| + |u|^2)."""
    S = M.matrix[np.ix_(z_idx, z_idx)]
    values, vectors = np.linalg.eigh(S)
    W = (vectors / np.maximum(values, M.floor)) @ vectors.T
    Q = M.matrix[np.ix_(z_idx, x_idx)]
    strength, directions = np.linalg.eigh(Q.T @ W @ Q)
    u = np.linalg.norm(W @ Q @ directions[:, 0])
    return float(strength[0]), M.noise_std * np.sqrt(2.0) * (2.0 * u + u**2)


@pytest.mark.parametrize(
    "design, rho", [("over-strong", 0.05), ("over-moderate", 0.5), ("just-moderate", 0.5)]
)
def test_a_first_stage_within_its_noise_warns(monkeypatch, design, rho):
    """G = A^-1 Q' W inverts A = Q' W Q unprojected, and noise inflates A (attenuation). Where
    A's smallest released eigenvalue is within two noise s.d. of zero (NoisyMoment.unidentified's
    rule, with the bound above), the first-stage noise check fires: on the coverage study's
    weakest cells (n = 2000), seeded fits."""
    kept = _released(monkeypatch)
    for seed in range(4):
        frame, public = coverage_iv._draw(design, 2000, np.random.default_rng([seed, 14]))
        zcols = [c for c in frame.columns if c.startswith("z")]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CoverageWarning)
            warnings.simplefilter("always", IdentificationWarning)
            DPIVRegression(rho=rho, random_state=seed, **public).fit(
                frame[["w", "x"]], frame["y"], Z=frame[["w", *zcols]]
            )
        weak = any("2SLS curvature" in str(w.message) for w in caught)
        M = kept["releases"]["moments"]
        strength, sd = _bread_noise_sd(M, kept["x_idx"], kept["z_idx"])
        assert weak or strength - sd >= sd, (seed, strength, sd)
