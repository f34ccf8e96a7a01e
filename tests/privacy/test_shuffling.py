"""Amplification by shuffling (FMT21) for DP-SSGD: reference values and calibration."""

import math

import pytest

from dpfit.privacy import gaussian_epsilon
from dpfit.privacy.shuffling import (
    shuffle_amplified_epsilon,
    shuffle_local_epsilon_limit,
    shuffle_total_delta,
    shuffled_gaussian_noise_multiplier,
)


# Spec varshney2022-dp-ambssgd.md 2.1: N = 1e6, delta_hat = 5e-7 (recomputed there as
# 0.00998, 0.0240, 0.0640, 0.2051).
@pytest.mark.parametrize(
    "eps0, expected", [(0.5, 0.00998), (1.0, 0.0240), (2.0, 0.0640), (4.0, 0.2051)]
)
def test_reference_values(eps0, expected):
    assert shuffle_amplified_epsilon(eps0, 10**6, 5e-7) == pytest.approx(expected, abs=6e-5)


def test_outside_the_precondition_there_is_no_bound():
    limit = shuffle_local_epsilon_limit(10**4, 1e-6)  # ln(1e4 / (16 ln 2e6)) = 3.79
    assert limit == pytest.approx(math.log(1e4 / (16 * math.log(2e6))))
    assert shuffle_amplified_epsilon(limit * 0.99, 10**4, 1e-6) is not None
    assert shuffle_amplified_epsilon(limit * 1.01, 10**4, 1e-6) is None


@pytest.mark.parametrize("epsilon, n", [(0.01, 2**22), (0.03, 2**20), (0.3, 2**20)])
def test_calibrated_alpha_meets_the_target_and_is_smallest(epsilon, n):
    delta = 1e-6
    alpha = shuffled_gaussian_noise_multiplier(epsilon, delta, n)
    delta0 = (delta / 2) / (1.5 * (math.exp(epsilon) + 1) * n)
    eps0 = gaussian_epsilon(1.0 / alpha, delta0)
    amplified = shuffle_amplified_epsilon(eps0, n, delta / 2)
    assert amplified is not None and amplified <= epsilon
    assert shuffle_total_delta(amplified, eps0, delta0, n, delta / 2) <= delta
    # a 1% smaller alpha fails the target (or the precondition)
    eps0_less = gaussian_epsilon(1.0 / (0.99 * alpha), delta0)
    worse = shuffle_amplified_epsilon(eps0_less, n, delta / 2)
    assert worse is None or worse > epsilon


def test_no_alpha_when_n_is_below_the_theorems_range():
    assert shuffle_local_epsilon_limit(100, 5e-7) < 0  # n < 16 ln(2/delta_hat)
    assert shuffled_gaussian_noise_multiplier(1.0, 1e-6, 100) is None
