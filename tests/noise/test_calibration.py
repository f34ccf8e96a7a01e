"""Calibration of the one Gaussian release and the prefix-error choice of nu (spec §2.4, §2.6)."""

import math

import numpy as np
import pytest

from dpfit.noise import calibrate, dpsgd, nu_dpftrl, release_sensitivity, select_nu
from dpfit.privacy import cks_epsilon, float_sum_excess, gaussian_epsilon


def test_gdp_calibration_golden_value():
    cal = calibrate(
        dpsgd(5), clip=1.0, batch_size=1, epsilon=8.0, delta=1e-5, relation="add-remove"
    )
    assert cal.mu == pytest.approx(1.66603, abs=5e-6)  # spec §2.4 / unit test 5
    assert cal.rho == pytest.approx(cal.mu**2 / 2)
    assert gaussian_epsilon(cal.sensitivity / cal.noise_std, 1e-5) == pytest.approx(8.0, rel=1e-9)
    # the zCDP route certifies only ~8.60 for the same noise
    assert cks_epsilon(cal.rho, 1e-5) == pytest.approx(8.60, abs=0.01)


def test_rho_calibration_and_relation_factor():
    mech = nu_dpftrl(0.01, steps=600)
    sens = math.sqrt(mech.sensitivity_squared(20, 30))
    cal = calibrate(mech, clip=0.5, batch_size=100, rho=0.5, participations=20, separation=30)
    # replace-one: 2 clip, plus the float64 allowance of a sum of 100 clipped vectors
    per_step = 2 * 0.5 + float_sum_excess(0.5, 100)
    assert cal.sensitivity == pytest.approx(per_step * sens, rel=1e-15)
    assert cal.noise_std == pytest.approx(cal.sensitivity / math.sqrt(2 * 0.5), rel=1e-15)
    aar = release_sensitivity(
        mech, clip=0.5, batch_size=100, relation="add-remove", participations=20, separation=30
    )
    assert aar == pytest.approx((0.5 + float_sum_excess(0.5, 100)) * sens, rel=1e-15)


# Spec §2.6 table (grid minimisers over {0} U logspace(-4, 0, 41)) and J ratios.
@pytest.mark.parametrize(
    ("T", "k", "b", "log_nu", "sens2", "ratio_sgd", "ratio_zero"),
    [
        (2000, 20, 100, -2.4, 76.02, 40.2, 1.88),
        (2052, 6, 342, -2.8, 20.26, 68.6, 1.32),
        (600, 20, 30, -1.9, 70.65, 14.3, 1.90),
    ],
)
def test_select_nu_reference(T, k, b, log_nu, sens2, ratio_sgd, ratio_zero):
    sel = select_nu(T, participations=k, separation=b)
    assert math.log10(sel.nu) == pytest.approx(log_nu, abs=1e-9)
    i = int(np.argmin(sel.objective))
    assert sel.sensitivity_squared[i] == pytest.approx(sens2, abs=0.01)
    assert sel.objective[-1] / sel.objective[i] == pytest.approx(ratio_sgd, abs=0.05)  # nu = 1
    assert sel.objective[0] / sel.objective[i] == pytest.approx(ratio_zero, abs=0.01)  # nu = 0


def test_prefix_error_matches_dense():
    mech = nu_dpftrl(0.03, steps=50)
    A = np.tril(np.ones((50, 50)))
    assert mech.prefix_error() == pytest.approx(np.sum((A @ mech.decoder_matrix()) ** 2), rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        (dict(), TypeError),
        (dict(rho=0.5, epsilon=1.0, delta=1e-5), TypeError),
        (dict(epsilon=1.0), TypeError),
        (dict(epsilon=1.0, delta=0.0), ValueError),
        (dict(rho=-1.0), ValueError),
        (dict(rho=0.5, clip=0.0), ValueError),
        (dict(rho=0.5, relation="zero-out"), ValueError),
    ],
)
def test_bad_calibration_inputs(kwargs, exc):
    kwargs = {"clip": 1.0, "batch_size": 1, **kwargs}
    with pytest.raises(exc):
        calibrate(dpsgd(3), **kwargs)


def test_calibrate_rejects_non_mechanisms():
    with pytest.raises(TypeError, match="mechanism"):
        calibrate(np.eye(3), clip=1.0, batch_size=1, rho=1.0)
