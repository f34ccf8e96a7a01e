"""Closed forms of Choquette-Choo et al. 2024 against quadrature and the spec's golden values."""

import math

import numpy as np
import pytest
from scipy import integrate, signal

from dpfit.noise import nu_dpftrl
from dpfit.theory.ftrl import (
    effective_dimension,
    figure1_ratio,
    figure1_ratio_asymptote,
    gamma_inf_squared,
    lti_excess_risk,
    lti_upper_bound,
    mean_estimation_variance,
    power_law_eigenvalues,
    table1_rates,
)

LAM = 1.0 / np.arange(1, 129)  # Figure 2 base setting: d = 128, lambda_k = 1/k


@pytest.mark.parametrize(
    ("eta", "ref"),
    [
        (1e-4, 0.0025830),
        (1e-3, 0.016374),
        (1e-2, 0.090868),
        (0.1, 0.40049),
        (0.3, 0.70413),
        (0.5, 0.86379),
        (0.9, 0.99498),
        (1.0, 1.0),
        (1.5, 0.86379),
        (1.9, 0.40049),
    ],
)
def test_figure1_ratio_values(eta, ref):
    assert figure1_ratio(eta) == pytest.approx(ref, abs=6e-6)
    assert figure1_ratio(eta) <= 1.0


@pytest.mark.parametrize("eta", [0.01, 0.2, 0.7])
def test_figure1_ratio_against_quadrature(eta):
    """Ratio of the DP parts by direct quadrature, with |B*|^2 = |1 - eta - e^iw| (eq. 18)."""

    def den(w):
        return (1 - eta) ** 2 + 1 - 2 * (1 - eta) * math.cos(w)

    pts = [eta, 10 * eta]
    num1 = integrate.quad(lambda w: math.sqrt(den(w)) / den(w), 0, math.pi, points=pts, limit=200)[
        0
    ]
    num2 = integrate.quad(lambda w: 1 / math.sqrt(den(w)), 0, math.pi, points=pts, limit=200)[0]
    sgd = integrate.quad(lambda w: 1 / den(w), 0, math.pi, points=pts, limit=200)[0]
    assert figure1_ratio(eta) == pytest.approx(num1 * num2 / (sgd * math.pi), rel=1e-7)


def test_figure1_asymptote_and_mean_estimation_closed_forms():
    assert figure1_ratio_asymptote(1e-4) == pytest.approx(figure1_ratio(1e-4), rel=0.05)
    eta = 0.05
    ratio = mean_estimation_variance(eta, rho=0.5) / mean_estimation_variance(
        eta, rho=0.5, mechanism="dp-sgd"
    )
    assert ratio == pytest.approx(figure1_ratio(eta), rel=1e-12)
    assert mean_estimation_variance(eta, rho=0.5, mechanism="dp-sgd") == pytest.approx(
        eta / (2 - eta)
    )
    with_data = mean_estimation_variance(eta, rho=0.5, label_std=0.5)
    assert with_data - mean_estimation_variance(eta, rho=0.5) == pytest.approx(
        eta * 0.25 / (2 - eta)
    )


@pytest.mark.parametrize(
    ("nu", "ref"),
    [(0.5, 1.073182), (0.1, 1.4518427), (0.01, 2.136878), (0.001, 2.861986), (1.5625e-4, 3.451836)],
)
def test_gamma_inf(nu, ref):
    assert gamma_inf_squared(nu) == pytest.approx(ref, abs=1e-6)
    assert gamma_inf_squared(nu) <= 5 * math.log(8 / nu) / (2 * math.pi)  # Lemma C.21(i)
    assert gamma_inf_squared(None) == 1.0


def test_lti_golden_values():
    assert lti_excess_risk(LAM, 0.02, rho=0.5) == pytest.approx(0.6402725, rel=1e-6)
    assert lti_excess_risk(LAM, 0.02, rho=0.5, nu=0.02 / 128) == pytest.approx(0.0090390, rel=1e-5)


def test_lti_spectral_sum_equals_time_domain_convolution():
    """S_j = ||beta * g_j||^2 with g_j = (1 - a_j)^t (spec §3.2), for a shorter spectrum."""
    lam, eta, nu = np.array([1.0, 0.3, 0.05]), 0.1, 0.02
    beta = nu_dpftrl(nu, steps=20000).beta
    sigma2 = gamma_inf_squared(nu) / (2 * 0.5)
    total = 0.0
    for lj in lam:
        g = (1 - eta * lj) ** np.arange(20000)
        total += lj * eta**2 * sigma2 * np.sum(signal.fftconvolve(beta, g)[:20000] ** 2)
    assert lti_excess_risk(lam, eta, rho=0.5, nu=nu) == pytest.approx(0.5 * total, rel=1e-6)


def test_upper_bound_brackets_the_lti_value_and_label_noise_term():
    for nu in (None, 0.02 / 128):
        low = lti_excess_risk(LAM, 0.02, rho=0.5, nu=nu, label_std=0.1)
        assert lti_upper_bound(LAM, 0.02, rho=0.5, nu=nu, label_std=0.1) > low
    sgd_sampling = lti_excess_risk(LAM, 0.02, rho=1e4, label_std=0.3) - lti_excess_risk(
        LAM, 0.02, rho=1e4
    )
    assert sgd_sampling == pytest.approx(0.5 * 0.02 * 0.09 * np.sum(LAM / (2 - 0.02 * LAM)))
    with pytest.raises(ValueError, match="R\\^2"):
        lti_upper_bound(LAM, 0.5, rho=0.5)


def test_scaling_helpers():
    assert effective_dimension(LAM) == pytest.approx(np.sum(LAM))
    np.testing.assert_allclose(power_law_eigenvalues(4, 1.0), [1, 1 / 2, 1 / 3, 1 / 4])
    rates = table1_rates(LAM, 0.02, rho=0.5)
    assert rates["dp-sgd"] == pytest.approx(0.02 * 128 / 0.5)
    assert rates["lower-bound"] < rates["nu-dpftrl"] < rates["dp-sgd"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: figure1_ratio(0.0),
        lambda: figure1_ratio(2.0),
        lambda: lti_excess_risk(np.array([1.0, -1.0]), 0.1, rho=0.5),
        lambda: lti_excess_risk(LAM, 2.5, rho=0.5),
        lambda: lti_excess_risk(LAM, 0.02, rho=0.5, nu=0.0),
        lambda: mean_estimation_variance(0.1, rho=0.5, mechanism="tree"),
        lambda: power_law_eigenvalues(0, 1.0),
    ],
)
def test_bad_inputs(call):
    with pytest.raises(ValueError):
        call()
