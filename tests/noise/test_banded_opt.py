"""Banded Toeplitz encoders optimised for amplification, and the band width chosen per epsilon."""

import math

import numpy as np
import pytest

from dpfit.noise import (
    amplified_banded_choice,
    amplified_sensitivity,
    banded_encoder,
    brute_force_sensitivity_squared,
    nu_dpftrl,
    optimal_banded,
    select_nu,
)
from dpfit.noise.banded_opt import _column, _log_objective
from dpfit.privacy import subsampled_gaussian_noise_multiplier


def _amplified_objective(mech):
    return math.fsum(np.asarray(mech.inverse) ** 2) * mech.prefix_error()


def test_gradient_matches_finite_differences():
    u = np.array([1.2, 0.4, 2.0, -0.3])
    _, g = _log_objective(u, 60)
    h = 1e-6
    fd = [
        (_log_objective(u + h * e, 60)[0] - _log_objective(u - h * e, 60)[0]) / (2 * h)
        for e in np.eye(u.size)
    ]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("bands", [2, 4, 10, 25])
def test_optimum_beats_the_truncated_nu_dpftrl_encoder(bands):
    T = 500
    mech = optimal_banded(T, bands)
    assert mech.encoder_bands == bands and mech.monotone
    k = math.ceil(T / bands)
    nu = select_nu(T, participations=k, separation=bands).nu
    truncated = banded_encoder(nu_dpftrl(nu, steps=T), bands)
    assert _amplified_objective(mech) < _amplified_objective(truncated)
    # a local optimum: the gradient in the (monotone) parametrisation vanishes
    c = np.asarray(mech.inverse[:bands])
    ratios = np.clip(c[1:] / c[:-1], 1e-12, 1 - 1e-12)
    u = np.log(ratios / (1 - ratios))
    np.testing.assert_allclose(_column(u), c, rtol=1e-9)
    assert np.abs(_log_objective(u, T)[1]).max() < 1e-5


def test_one_band_is_dp_sgd():
    mech = optimal_banded(40, 1)
    np.testing.assert_array_equal(mech.beta, np.eye(40)[0])
    assert mech.prefix_error() == 40 * 41 / 2


@pytest.mark.parametrize(("T", "k", "b", "bands"), [(12, 4, 3, 3), (12, 3, 4, 2), (15, 3, 5, 4)])
def test_unamplified_sensitivity_is_k_times_the_column_norm(T, k, b, bands):
    mech = optimal_banded(T, bands)
    C = mech.encoder_matrix()
    want = k * math.fsum(np.asarray(mech.inverse) ** 2)
    for order in ("fixed-epoch", "min-separation"):
        brute = brute_force_sensitivity_squared(C, k, b, order)
        assert brute == pytest.approx(want, rel=1e-12)
        assert mech.sensitivity_squared(k, b, order) == pytest.approx(brute, rel=1e-12)


def test_choice_trades_amplification_against_correlation():
    """Small epsilon favours few bands (more amplification), large epsilon more bands."""
    kw = dict(delta=1e-5, batch_size=100, dataset_size=2500, candidates=(1, 5, 25, 50))
    low = amplified_banded_choice(100, epsilon=0.5, **kw)
    high = amplified_banded_choice(100, epsilon=4.0, **kw)
    assert low.bands < high.bands
    for choice in (low, high):
        assert choice.objective == min(choice.objectives.values())
        assert choice.sampling_probability == 100 * choice.bands / 2500
        sens, count = amplified_sensitivity(
            choice.mechanism, clip=1.0, batch_size=1, groups=choice.bands
        )
        norm = math.sqrt(math.fsum(np.asarray(choice.mechanism.inverse) ** 2))
        assert sens == pytest.approx(norm, rel=1e-9)  # clip 1, add/remove: ||c||_2
        assert count == choice.compositions == math.ceil(100 / choice.bands)
    # one band is amplified DP-SGD: z^2 x ||A||_F^2 with the accountant's z
    z = subsampled_gaussian_noise_multiplier(0.5, sampling_probability=0.04, count=100, delta=1e-5)
    assert low.objectives[1] == pytest.approx(z * z * 100 * 101 / 2, rel=1e-12)
    # candidates with q > 1 (50 bands: q = 2) are skipped
    assert max(low.objectives) == 25
    with pytest.raises(ValueError, match="no candidate"):
        amplified_banded_choice(100, epsilon=1.0, **{**kw, "candidates": (40,)})
