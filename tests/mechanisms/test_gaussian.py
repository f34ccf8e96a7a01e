"""Layer A of the reliability plan: the noise primitive's scale, tails, independence."""

import math

import numpy as np
import pytest
from scipy import stats

from dpfit import BudgetExceededError
from dpfit.mechanisms import (
    gaussian,
    gaussian_releases,
    make_noise_source,
    noise_std_for_rho,
    recording,
    replaying,
    rho_for_noise_std,
)
from dpfit.privacy import Budget, GaussianEntry, PrivacyLedger

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
    # The grid is fixed by public inputs (gaussian.py, _secure_gaussian): the largest 2^k with
    # 2^k <= 2^-30 * sensitivity / sqrt(d); here 2^-30 / sqrt(200) ~ 2^-33.8, so k = -34.
    # Every output is a multiple of 2^k (a fast-backend float, with 52 bits of mantissa at
    # |v| ~ 1, is one with probability ~2^-18 per coordinate) ...
    k = -34
    assert math.floor(math.log2(2.0**-30 / math.sqrt(200))) == k
    on_grid = np.ldexp(out, -k)
    assert np.all(on_grid == np.rint(on_grid))
    # ... and the grid is no coarser: a discrete Gaussian of std 2^34 grid steps puts about
    # half of its outputs on odd multiples (all 200 even has probability ~2^-200).
    assert np.any(np.rint(on_grid) % 2 == 1)
    assert abs(out.mean() - 0.3) < 4 / math.sqrt(200)


def _releases(ledger, source, count=5, **kw):
    return gaussian_releases(
        count=count, sensitivity=0.5, noise_std=2.0, ledger=ledger, rng=source, label="g", **kw
    )


def test_releases_charged_once_draw_what_per_release_calls_draw():
    # Two routes, one answer: T gaussian() calls vs one gaussian_releases(count=T).
    values = np.random.default_rng(5).standard_normal((5, 3))
    one_by_one, per_call = PrivacyLedger(budget=Budget(rho=1.0)), make_noise_source(11)
    a = [
        gaussian(v, sensitivity=0.5, noise_std=2.0, ledger=one_by_one, rng=per_call, label="g")
        for v in values
    ]
    at_once, charged = PrivacyLedger(budget=Budget(rho=1.0)), make_noise_source(11)
    releases = _releases(at_once, charged)
    assert len(at_once) == 1 and at_once.entries[0].count == 5  # charged before any draw
    assert at_once.rho == one_by_one.rho and at_once.budget.spent == one_by_one.budget.spent
    b = [releases.release(v) for v in values]
    np.testing.assert_array_equal(np.array(a), np.array(b))  # same noise, bit for bit
    assert at_once.statement(1e-6) == one_by_one.statement(1e-6)
    assert at_once.epsilon(1e-6) == one_by_one.epsilon(1e-6)
    assert releases.made == releases.count == 5


def test_releases_record_and_replay_like_single_releases():
    values = np.arange(6.0).reshape(3, 2)
    with recording() as rec:
        releases = _releases(PrivacyLedger(), make_noise_source(2), count=3)
        outputs = [releases.release(v) for v in values]
    assert [r.entry.count for r in rec.releases] == [1, 1, 1]  # one per release, as gaussian()
    assert rec.entries[0] == GaussianEntry(label="g", sensitivity=0.5, noise_std=2.0)
    with replaying(rec) as rep:
        releases = _releases(PrivacyLedger(), make_noise_source(99), count=3)
        replayed = [releases.release(v + 1.0) for v in values]
    np.testing.assert_array_equal(np.array(outputs), np.array(replayed))
    np.testing.assert_array_equal(rep.releases[0].value, values[0] + 1.0)


def test_releases_refuse_overspend_and_extra_releases_before_drawing():
    source = make_noise_source(4)
    state = source.generator.bit_generator.state
    budget = Budget(rho=0.1)
    ledger = PrivacyLedger(budget=budget)
    with recording() as rec, pytest.raises(BudgetExceededError):
        _releases(ledger, source, count=10)  # 10 * 0.5^2 / 8 = 0.3125 > 0.1
    assert len(ledger) == 0 and budget.spent == 0.0 and len(rec) == 0
    assert source.generator.bit_generator.state == state
    releases = _releases(ledger, source, count=2)
    releases.release(np.zeros(1))
    releases.release(np.zeros(1))
    state = source.generator.bit_generator.state
    with pytest.raises(BudgetExceededError, match="all 2 charged releases"):
        releases.release(np.zeros(1))
    with pytest.raises(ValueError, match="not finite"):
        _releases(ledger, source, count=1).release(np.array([1.0, np.inf]))
    assert source.generator.bit_generator.state == state  # nothing drawn


@pytest.mark.parametrize(
    "kwargs, exc, fragment",
    [
        ({"count": 0}, ValueError, "count must be in"),
        ({"count": True}, TypeError, "count must be an integer"),
        ({"count": 2.0}, TypeError, "count must be an integer"),
        ({"sensitivity": -1.0}, ValueError, "sensitivity must be"),
        ({"noise_std": float("nan")}, ValueError, "noise_std must be"),
        ({"ledger": None}, TypeError, "ledger must be a PrivacyLedger"),
        ({"rng": 3}, TypeError, "rng must be a NoiseSource"),
    ],
)
def test_releases_validate_before_charging(kwargs, exc, fragment):
    ledger = PrivacyLedger()
    good = {
        "count": 3,
        "sensitivity": 1.0,
        "noise_std": 1.0,
        "ledger": ledger,
        "rng": make_noise_source(0),
        "label": "g",
    }
    with pytest.raises(exc, match=fragment):
        gaussian_releases(**{**good, **kwargs})
    assert len(ledger) == 0


@pytest.mark.parametrize("size", [1, 16, 17, 1000])
def test_finiteness_is_checked_at_every_size(size):
    ledger, source = PrivacyLedger(), make_noise_source(0)
    big = np.full(size, 1e300)  # finite, with overflowing squares and sums
    out = gaussian(big, sensitivity=1.0, noise_std=1.0, ledger=ledger, rng=source, label="big")
    assert np.all(np.isfinite(out))
    for bad in (np.nan, np.inf, -np.inf):
        value = big.copy()
        value[-1] = bad
        with pytest.raises(ValueError, match="not finite"):
            gaussian(value, sensitivity=1.0, noise_std=1.0, ledger=ledger, rng=source, label="b")
    assert len(ledger) == 1
