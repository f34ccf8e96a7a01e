"""Coefficient families (spec §2.3 and unit tests 1-3, 8-9 of §6)."""

import numpy as np
import pytest
from scipy import special

from dpfit.noise import (
    anti_pgd,
    banded,
    dpsgd,
    fichtenberger,
    inverse_coefficients,
    nu_dpftrl,
    nu_dpftrl_coefficients,
    optimal_mean_estimation,
    toeplitz,
)


@pytest.mark.parametrize("nu", [0.0, 0.01, 0.1, 0.5, 0.9])
def test_recursion_matches_closed_form_and_inverts(nu):
    beta, c = nu_dpftrl_coefficients(nu, 51)
    t = np.arange(51)
    closed = (-1.0) ** t * special.binom(0.5, t) * (1 - nu) ** t
    np.testing.assert_allclose(beta, closed, rtol=1e-12, atol=1e-300)
    closed_c = special.binom(2 * t, t) / 4.0**t * (1 - nu) ** t
    np.testing.assert_allclose(c, closed_c, rtol=1e-12, atol=1e-300)
    conv = np.convolve(beta, c)[:51]
    np.testing.assert_allclose(conv, np.eye(51)[0], atol=1e-12)


@pytest.mark.parametrize(("nu", "ref"), [(0.5, 1.073182), (0.1, 1.4518427), (0.01, 2.136878)])
def test_sum_of_squared_inverse_is_the_elliptic_integral(nu, ref):
    c = nu_dpftrl(nu, steps=20000).inverse
    exact = 2 / np.pi * special.ellipk((1 - nu) ** 2)
    assert np.sum(c * c) == pytest.approx(exact, abs=1e-6)
    assert exact == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("nu", [0.5, 0.1, 0.01, 0.001])
def test_l1_norm_of_beta(nu):
    beta = nu_dpftrl(nu, steps=200000).beta
    # tail after T is < sum_{t>T} t^{-3/2} e^{-nu T} / (2 sqrt(pi)) < 1e-9 for these nu
    assert np.abs(beta).sum() == pytest.approx(2 - np.sqrt(nu), abs=1e-8)


def test_sum_of_squared_beta_tends_to_four_over_pi():
    beta = nu_dpftrl(0.0, steps=100000).beta
    assert np.sum(beta**2) == pytest.approx(4 / np.pi, abs=1e-9)


def test_nu_one_is_dpsgd_and_nu_zero_is_fichtenberger():
    np.testing.assert_array_equal(nu_dpftrl(1.0, steps=6).beta, np.eye(6)[0])
    np.testing.assert_array_equal(dpsgd(6).inverse, np.eye(6)[0])
    assert fichtenberger(5).beta.tolist() == [1, -1 / 2, -1 / 8, -1 / 16, -5 / 128]
    # A B = C for nu = 0 (symmetric square root of the prefix-sum matrix, A = C C)
    m = fichtenberger(40)
    A = np.tril(np.ones((40, 40)))
    np.testing.assert_allclose(m.encoder_matrix() @ m.encoder_matrix(), A, atol=1e-12)


def test_mean_estimation_optimum_is_the_nu_family_with_nu_eta():
    np.testing.assert_array_equal(
        optimal_mean_estimation(0.3, steps=30).beta, nu_dpftrl(0.3, steps=30).beta
    )
    alt = optimal_mean_estimation(1.5, steps=10)  # eta > 1: alternating coefficients
    assert alt.beta[1] > 0 and not alt.monotone


def test_anti_pgd_inverse_and_sensitivity():
    m = anti_pgd(50, damping=0.2)
    np.testing.assert_allclose(m.inverse, 0.8 ** np.arange(50), rtol=1e-15)
    assert m.sensitivity_squared() == pytest.approx((1 - 0.8**100) / (1 - 0.64), rel=1e-12)
    assert anti_pgd(30).sensitivity_squared() == pytest.approx(30.0)  # gamma_T^2 = T


def test_generic_inverse_matches_dense_solve():
    rng = np.random.default_rng(0)
    beta = np.concatenate(([1.0], rng.normal(size=7) * 0.3, np.zeros(22)))
    c = inverse_coefficients(beta)
    B = toeplitz(beta).decoder_matrix()
    np.testing.assert_allclose(np.linalg.solve(B, np.eye(30)[:, 0]), c, atol=1e-12)
    with pytest.raises(ValueError, match="beta_0"):
        inverse_coefficients(np.array([0.0, 1.0]))


def test_banded_mechanism_recomputes_its_inverse():
    m = banded(nu_dpftrl(0.0, steps=100), 3)
    assert m.bands == 3 and m.cache_rows == 3
    np.testing.assert_allclose(m.encoder_matrix() @ m.decoder_matrix(), np.eye(100), atol=1e-12)
    assert "banded" in m.name


def test_scale_invariance_of_the_calibrated_noise():
    """beta -> 3 beta: c/3, sensitivity/3, sigma/3, identical noise (spec §2.5, test 8)."""
    from dpfit.mechanisms import make_noise_source
    from dpfit.noise import calibrate, correlated_noise
    from dpfit.privacy import PrivacyLedger

    base = nu_dpftrl(0.05, steps=60)
    scaled = toeplitz(3 * base.beta)
    outs = []
    for mech in (base, scaled):
        cal = calibrate(mech, clip=1.0, batch_size=1, rho=0.5, participations=3, separation=20)
        stream = correlated_noise(
            mech,
            dim=4,
            clip=1.0,
            batch_size=1,
            noise_std=cal.noise_std,
            ledger=PrivacyLedger(),
            rng=make_noise_source(5),
            participations=3,
            separation=20,
        )
        outs.append(np.array([stream.privatize(np.zeros(4)) for _ in range(60)]))
    assert scaled.sensitivity_squared(3, 20) == pytest.approx(base.sensitivity_squared(3, 20) / 9)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        (lambda: nu_dpftrl(-0.1, steps=5), ValueError),
        (lambda: nu_dpftrl(float("nan"), steps=5), ValueError),
        (lambda: nu_dpftrl(True, steps=5), TypeError),
        (lambda: nu_dpftrl(0.1, steps=0), ValueError),
        (lambda: nu_dpftrl(0.1, steps=2.5), TypeError),
        (lambda: optimal_mean_estimation(2.0, steps=5), ValueError),
        (lambda: anti_pgd(5, damping=1.5), ValueError),
        (lambda: banded(nu_dpftrl(0.1, steps=5), 0), ValueError),
        (lambda: toeplitz(np.array([1.0, np.inf])), ValueError),
    ],
)
def test_bad_parameters(call, exc):
    with pytest.raises(exc):
        call()
