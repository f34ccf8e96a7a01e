"""The secure (OpenDP) backend: grid membership, rounding and calibration (reliability 3.1.3).

The secure backend draws an exact discrete Gaussian on Z * 2^k with OS randomness, so these
tests cannot be seeded; every statistical check uses a false-alarm level of 1e-6.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpfit.mechanisms import gaussian, make_noise_source
from dpfit.privacy import PrivacyLedger

dp = pytest.importorskip("opendp.prelude")


def _grid_k(sensitivity, size):
    # the public rule of mechanisms.gaussian: 2^k <= 2^-30 * sensitivity / sqrt(d)
    return math.floor(math.log2(2.0**-30 * sensitivity / math.sqrt(size)))


def _release(value, sensitivity, noise_std, ledger=None):
    ledger = ledger if ledger is not None else PrivacyLedger()
    out = gaussian(
        np.asarray(value, dtype=float),
        sensitivity=sensitivity,
        noise_std=noise_std,
        ledger=ledger,
        rng=make_noise_source(None, secure=True),
        label="secure",
    )
    return out, ledger


def test_outputs_are_multiples_of_two_to_the_k_and_the_input_was_rounded_first():
    out, ledger = _release(np.full(500, 0.3), 1.0, 1.0)
    k = _grid_k(1.0, 500)
    assert k == -35
    scaled = np.ldexp(out, -k)
    assert np.all(scaled == np.rint(scaled))
    # 0.3 is not a multiple of 2^-35: unrounded input plus grid noise would be off the grid
    assert np.ldexp(0.3, -k) != np.rint(np.ldexp(0.3, -k))
    assert ledger.rho == 0.5


def test_the_integer_draws_follow_the_discrete_gaussian_pmf():
    # Sensitivity 2^37 over 10^4 coordinates puts the grid at 2^0 (k = 0), so the noise is
    # an integer with pmf proportional to exp(-z^2 / (2 s^2)), s = 3 * inflation; chi-square
    # over the central +-6 s bins (tails pooled), rejecting at p < 1e-6.
    d, sigma = 10_000, 3.0
    assert _grid_k(2.0**37, d) == 0
    out, _ = _release(np.zeros(d), 2.0**37, sigma)
    assert np.all(out == np.rint(out))
    s = sigma * (1 + math.sqrt(d) / 2.0**37) * (1 + 2.0**-40)
    support = np.arange(-60, 61)
    pmf = np.exp(-(support**2) / (2 * s**2))
    pmf /= pmf.sum()
    edges = np.arange(-18, 19)
    observed = np.array(
        [np.sum(out < -18)] + [np.sum(out == z) for z in edges] + [np.sum(out > 18)]
    )
    expected = d * np.array(
        [pmf[support < -18].sum()]
        + [pmf[support == z][0] for z in edges]
        + [pmf[support > 18].sum()]
    )
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-6


def test_noise_scale_matches_the_declared_std():
    # 2e4 draws: the sample variance's relative SE is sqrt(2 / 2e4) = 1 %, and the 1e-6
    # two-sided chi-square interval is about +-5 %.
    d, sigma = 20_000, 2.5
    out, _ = _release(np.full(d, 7.0), 1.0, sigma)
    var = np.var(out - 7.0, ddof=0)
    low = stats.chi2.ppf(5e-7, d) / d * sigma**2
    high = stats.chi2.isf(5e-7, d) / d * sigma**2
    assert low < var < high
    assert abs(np.mean(out) - 7.0) < 5.4 * sigma / math.sqrt(d)  # 5.4 sd: P < 1e-7


@pytest.mark.parametrize(
    "sensitivity, noise_std, d", [(1.0, 1.0, 1), (2e-4, 1e-3, 64), (5.0, 40.0, 300)]
)
def test_charged_rho_covers_opendps_privacy_map_including_the_rounding(sensitivity, noise_std, d):
    # rho charged = Delta^2 / (2 sigma^2); OpenDP's map for the measurement actually used
    # (grid 2^k, rounding distance added to Delta, inflated scale) must not exceed it.
    ledger = PrivacyLedger()
    _release(np.zeros(d), sensitivity, noise_std, ledger)
    charged = ledger.rho
    assert charged == pytest.approx(sensitivity**2 / (2 * noise_std**2), rel=1e-15)
    k = _grid_k(sensitivity, d)
    inflation = (sensitivity + math.ldexp(math.sqrt(d), k)) / sensitivity
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=d),
        dp.l2_distance(T=float),
        scale=noise_std * inflation * (1 + 2.0**-40),
        k=k,
    )
    assert meas.map(sensitivity) <= charged
    # Without the inflation the grid's rounding would cost more than was charged.
    plain = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=d),
        dp.l2_distance(T=float),
        scale=noise_std,
        k=k,
    )
    assert plain.map(sensitivity) > charged


def test_secure_source_cannot_be_seeded_and_records_its_backend():
    with pytest.raises(ValueError, match="secure"):
        make_noise_source(0, secure=True)
    assert make_noise_source(None, secure=True).backend == "secure"


def test_dp_gd_on_the_secure_backend_passes_a_canary_audit():
    # Unseedable, so the checks run at alpha = 1e-6; 200 runs per side cost about 2 CPU-s.
    from dpfit.audit import audit

    res = audit("dp_gd", runs=200, secure=True, alpha=1e-6)
    assert res.config["noise_backend"] == "secure"
    assert res.passed, res.table()


def test_a_scalar_release_is_a_float64_as_on_the_default_backend():
    # the two backends (and a replay of either) return the same type for a 0-d query
    out, _ = _release(0.5, 1.0, 1.0)
    default = gaussian(
        np.asarray(0.5), sensitivity=1.0, noise_std=1.0, ledger=PrivacyLedger(),
        rng=make_noise_source(0), label="default",
    )  # fmt: skip
    assert type(out) is type(default) is np.float64
    assert _release([0.5, 0.5], 1.0, 1.0)[0].shape == (2,)
