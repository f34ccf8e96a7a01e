"""The steps shared by the DP-GD and AdaSSP population sandwiches (dpfit.inference.whitened).

Both estimators' use of them is tested end to end in tests/models/test_linear_population.py
and tests/models/test_adassp_population.py (record/replay neighbours, coverage, warnings);
here each step is checked against what it claims on its own.
"""

import numpy as np
import pytest

from dpfit.inference.population import NoisyMoment, sandwich
from dpfit.inference.whitened import gradient_clip, inverse_sqrt, noisy_sandwich, release_mean
from dpfit.mechanisms import make_noise_source, recording
from dpfit.privacy import PrivacyLedger


def _spd(k, seed):
    A = np.random.default_rng(seed).standard_normal((k, k))
    return A @ A.T + 0.1 * np.eye(k)


def test_inverse_sqrt_whitens():
    M = _spd(4, 0)
    P = inverse_sqrt(M)
    np.testing.assert_allclose(P, P.T, atol=1e-12)
    np.testing.assert_allclose(P @ M @ P, np.eye(4), atol=1e-10)


@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
def test_release_mean_declares_cap_over_n_and_charges_its_rho(relation):
    # One term in [0, cap] moves the mean over the public n by cap / n under either
    # relation (plus the float rounding allowance, relative 1e-12 at n = 50).
    ledger = PrivacyLedger(relation=relation)
    with recording() as rec:
        value, std = release_mean(
            12.5, cap=2.0, rho=0.3, n=50, ledger=ledger, rng=make_noise_source(0), label="t/mean"
        )
    (entry,) = ledger.entries
    assert entry.sensitivity == pytest.approx(2.0 / 50, rel=1e-9)
    assert entry.noise_std == std == pytest.approx(entry.sensitivity / np.sqrt(0.6), rel=1e-12)
    assert ledger.rho == pytest.approx(0.3, rel=1e-12)
    assert rec.releases[0].value[0] == pytest.approx(12.5 / 50, rel=1e-15)
    assert value != 12.5 / 50  # noise was drawn


def test_gradient_clip_is_m_sqrt_k_residual_scales_raised_to_the_noise():
    assert gradient_clip(6.0, 4, 0.25, 0.01) == pytest.approx(6.0 * 2.0 * 0.5)
    # a release below its noise s.d. (or negative) says only that q is within the noise
    assert gradient_clip(3.0, 9, -0.5, 0.04) == pytest.approx(3.0 * 3.0 * 0.2)
    assert gradient_clip(3.0, 1, 0.0, 0.0) == pytest.approx(3.0 * 1e-3)  # the floor 1e-6


def test_noisy_sandwich_unwhitens_the_meat_and_the_bread():
    # With negligible noise, a meat released in whitened coordinates, P Omega P, must give
    # back the design-coordinate sandwich H^-1 Omega H^-1 / n for any symmetric whitener P
    # (right = P^-1, AdaSSP); and a bread released whitened too, P H P, with left = P (the
    # DP-GD default), the same.
    H, Omega = _spd(3, 1), _spd(3, 2)
    P = inverse_sqrt(_spd(3, 3))
    tiny = 1e-12
    meat = NoisyMoment(matrix=P @ Omega @ P, noise_std=tiny)
    expected = sandwich(H, Omega, 100)
    design = noisy_sandwich(
        NoisyMoment(matrix=H, noise_std=tiny), meat, 100, right=np.linalg.inv(P)
    )
    np.testing.assert_allclose(design.cov, expected, rtol=1e-8)
    whitened = noisy_sandwich(NoisyMoment(matrix=P @ H @ P, noise_std=tiny), meat, 100, left=P)
    np.testing.assert_allclose(whitened.cov, expected, rtol=1e-8)
    assert (design.dof > 1e12).all()  # no noise: the variance is known


@pytest.mark.parametrize("which", ["bread", "meat"])
def test_noisy_sandwich_dof_match_the_spread_of_v_under_fresh_noise(which):
    # The dof claim V_jj's noise variance 2 V_jj^2 / dof_j (first order). Check it against
    # 4000 fresh noise draws of the released bread (or meat) around fixed true matrices, with
    # noise s.d. 0.5% of the bread's mean eigenvalue (2% of its smallest) and 10% of the
    # meat's: the empirical variance of V_jj must match within 8% (the s.e. of a variance
    # from 4000 draws is 2.2%; V is linear in the meat, and the bread's second-order terms
    # add 1-2% here, 15-19% at 2% of the mean eigenvalue).
    k, n = 4, 50
    H, Omega = _spd(k, 4) + 2 * np.eye(k), _spd(k, 5) + np.eye(k)
    s = 0.005 * np.trace(H) / k if which == "bread" else 0.1 * np.trace(Omega) / k
    rng = np.random.default_rng(6)
    upper = np.triu_indices(k)

    def noisy(M):
        E = np.zeros((k, k))
        E[upper] = rng.normal(0.0, s, upper[0].size)
        return M + np.triu(E) + np.triu(E, 1).T

    exact = noisy_sandwich(
        NoisyMoment(matrix=H, noise_std=1e-9 if which == "meat" else s),
        NoisyMoment(matrix=Omega, noise_std=s if which == "meat" else 1e-9),
        n,
    )
    draws = []
    for _ in range(4000):
        bread = NoisyMoment(matrix=noisy(H) if which == "bread" else H, noise_std=1e-9)
        meat = NoisyMoment(matrix=noisy(Omega) if which == "meat" else Omega, noise_std=1e-9)
        draws.append(np.diag(noisy_sandwich(bread, meat, n).cov))
    empirical = np.var(draws, axis=0)
    predicted = 2 * np.diag(exact.cov) ** 2 / exact.dof
    np.testing.assert_allclose(empirical, predicted, rtol=0.08)


def test_noisy_sandwich_de_spreads_a_noisy_meat_rather_than_projecting_it():
    # A meat of 0.01 I released with noise s.d. s = 0.01 (k = 4): the projection onto the
    # floor 2 s sqrt(k) = 0.04 puts every eigenvalue at 0.04 or above, at least 4 x the truth
    # (the meat the DP-GD fix replaced); de-spread within its noise-level group and raised to
    # one noise s.d. s sqrt(2) = 0.014, the meat stays within 2 x (1.41 x with this seed:
    # every eigenvalue at the clamp), and the meat is flagged as not identified.
    k, s = 4, 0.01
    noise = np.random.default_rng(5).normal(0.0, s, (k, k))
    noise = np.triu(noise) + np.triu(noise, 1).T
    meat = NoisyMoment(matrix=0.01 * np.eye(k) + noise, noise_std=s)
    bread = NoisyMoment(matrix=np.eye(k), noise_std=1e-12)
    cov = noisy_sandwich(bread, meat, 1).cov
    assert np.trace(cov) < 2 * 0.01 * k
    assert np.trace(meat.psd()) >= 4 * 0.01 * k - 1e-12
    assert meat.unidentified()
