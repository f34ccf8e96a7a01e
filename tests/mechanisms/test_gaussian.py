"""Layer A of the reliability plan: the noise primitive's scale, tails, independence."""

import math

import numpy as np
import pytest
from scipy import stats

from dpfit.mechanisms import gaussian, make_noise_source, noise_std_for_rho, rho_for_noise_std
from dpfit.privacy import Budget, PrivacyLedger

N = 100_000
SIGMA = 2.0


@pytest.fixture(scope="module")
def draws():
    ledger = PrivacyLedger()
    out = gaussian(
        np.zeros(N),
        sensitivity=1.0,
        noise_std=SIGMA,
        ledger=ledger,
        rng=make_noise_source(20261121),
        label="layer-a",
    )
    return out, ledger


def test_scale_ks_and_variance(draws):
    z, _ = draws
    assert stats.kstest(z / SIGMA, "norm").pvalue > 1e-3
    # 99.9% chi-square interval of the sample variance (relative SE sqrt(2/N) = 0.45%).
    s2 = z.var(ddof=1)
    lo, hi = stats.chi2.ppf([5e-4, 1 - 5e-4], N - 1) / (N - 1) * SIGMA**2
    assert lo < s2 < hi


def test_tails_not_truncated(draws):
    z, _ = draws
    k = int(np.sum(np.abs(z) > 4 * SIGMA))
    p = 2 * stats.norm.sf(4)  # 6.3e-5: about 6 expected in 1e5 draws
    # Clopper-Pearson 99.9% band on the count.
    lo = stats.binom.ppf(5e-4, N, p)
    hi = stats.binom.ppf(1 - 5e-4, N, p)
    assert lo <= k <= hi


def test_independence_between_coordinates_and_calls():
    ledger = PrivacyLedger()
    source = make_noise_source(7)
    a = gaussian(
        np.zeros((N // 2, 2)), sensitivity=1.0, noise_std=1.0, ledger=ledger, rng=source, label="a"
    )
    b = gaussian(
        np.zeros((N // 2, 2)), sensitivity=1.0, noise_std=1.0, ledger=ledger, rng=source, label="b"
    )
    bound = 4 / math.sqrt(N // 2)  # |corr| < 4 / sqrt(N): a 4-sigma band
    assert abs(np.corrcoef(a[:, 0], a[:, 1])[0, 1]) < bound
    assert abs(np.corrcoef(a[:, 0], b[:, 0])[0, 1]) < bound
    assert abs(np.corrcoef(a[:-1, 0], a[1:, 0])[0, 1]) < bound
    assert not np.array_equal(a, b)


def test_release_adds_noise_to_the_value_and_charges_first(draws):
    _, ledger = draws
    assert len(ledger) == 1 and ledger.rho == 1.0 / (2 * SIGMA**2)
    led = PrivacyLedger()
    value = np.arange(5.0)
    out = gaussian(
        value, sensitivity=1.0, noise_std=1e-3, ledger=led, rng=make_noise_source(3), label="shift"
    )
    assert np.allclose(out, value, atol=0.01) and out.dtype == np.float64


def test_calibration_identities_to_one_ulp():
    for sens, rho in [(1.0, 0.5), (0.02, 0.015), (3.7, 1e-6), (1e-3, 4.0)]:
        sigma = noise_std_for_rho(sens, rho)
        assert sigma == sens / math.sqrt(2 * rho)
        assert rho_for_noise_std(sens, sigma) == pytest.approx(rho, rel=4.5e-16, abs=0)
    assert rho_for_noise_std(2.0, 4.0) == 4.0 / 32.0
    with pytest.raises(ValueError, match="noise scale not finite"):
        noise_std_for_rho(1.0, 1e-320)


def test_composition_is_additive_through_the_mechanism():
    ledger = PrivacyLedger(budget=Budget(rho=1.0))
    source = make_noise_source(0)
    for std in (1.0, 2.0, 4.0):
        gaussian(np.zeros(3), sensitivity=1.0, noise_std=std, ledger=ledger, rng=source, label="c")
    assert ledger.rho == math.fsum(1.0 / (2 * s**2) for s in (1.0, 2.0, 4.0))
    assert ledger.budget.spent == ledger.rho


def test_non_finite_query_value_is_rejected_before_charging():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="not finite"):
        gaussian(
            np.array([np.nan]),
            sensitivity=1.0,
            noise_std=1.0,
            ledger=ledger,
            rng=make_noise_source(0),
            label="bad",
        )
    assert len(ledger) == 0


def test_secure_backend_outputs_lie_on_a_power_of_two_grid():
    pytest.importorskip("opendp")
    ledger = PrivacyLedger()
    out = gaussian(
        np.full(200, 0.3),
        sensitivity=1.0,
        noise_std=1.0,
        ledger=ledger,
        rng=make_noise_source(None, secure=True),
        label="secure",
    )
    assert ledger.rho == 0.5
    # OpenDP's discrete Gaussian lives on Z * 2^k; find the finest k shared by all outputs.
    ks = [np.frexp(v)[1] - 53 for v in out]
    k = min(ks)
    assert np.all(np.ldexp(out, -k) == np.rint(np.ldexp(out, -k)))
    assert abs(out.mean() - 0.3) < 4 / math.sqrt(200)
