"""DP-STAT, the private doubling search (Varshney et al. 2022, Alg. 3, with spec fixes D2-D5)."""

import math

import numpy as np
import pytest
from scipy import stats

from dpfit.mechanisms import (
    DoublingSearch,
    gaussian,
    literal_threshold,
    make_noise_source,
    margin_threshold,
    private_count,
    recording,
    replaying,
)
from dpfit.privacy import PrivacyLedger


def _search(alpha=2.0, theta=None, s=200, K=16, B=64.0):
    theta = margin_threshold(s, n_queries=K + 1, noise_multiplier=alpha) if theta is None else theta
    return DoublingSearch(ceiling=B, noise_multiplier=alpha, threshold=theta, n_levels=K)


def test_grid_is_exact_powers_of_two_of_the_ceiling():
    search = _search(K=8, B=3.0)
    assert search.n_queries == 9
    assert search.floor == 3.0 / 256
    assert np.array_equal(search.levels, 3.0 * 2.0 ** np.arange(-8, 1))
    assert search.levels[-1] == search.ceiling


def test_one_search_costs_one_over_two_alpha_squared():
    # Fix D2: variance n_q alpha^2 per count, n_q = K + 1 counts of sensitivity 1 each, i.e.
    # one vector of L2 sensitivity sqrt(n_q) -> 1/(2 alpha^2) exactly, in one charge.
    search = _search(alpha=3.0)
    ledger = PrivacyLedger()
    with recording() as rec:
        search.run(np.ones(200), ledger=ledger, rng=make_noise_source(0), label="s")
    (release,) = rec.releases  # all counts, one release (the break is post-processing)
    assert release.value.shape == (search.n_queries,)
    assert release.entry.sensitivity == pytest.approx(math.sqrt(17), rel=1e-15)
    assert release.entry.noise_std == pytest.approx(math.sqrt(17) * 3.0, rel=1e-15)
    assert len(ledger.entries) == 1
    assert ledger.rho == pytest.approx(1.0 / (2 * 3.0**2), rel=1e-14)


def test_vector_release_draws_the_same_noise_as_one_count_at_a_time():
    # The one-charge release is the same mechanism as n_q scalar releases of sensitivity 1 and
    # std sqrt(n_q) alpha: same noise stream, so the same noisy counts for the same seed.
    search = _search(alpha=3.0)
    values = np.abs(np.random.default_rng(4).standard_normal(200))  # test data
    res = search.run(values, ledger=PrivacyLedger(), rng=make_noise_source(5), label="s")
    src = make_noise_source(5)
    scalar = [
        gaussian(
            float(c),
            sensitivity=1.0,
            noise_std=search.count_noise_std,
            ledger=PrivacyLedger(),
            rng=src,
            label="c",
        )
        for c in search.count(values)
    ]
    assert np.array_equal(res.noisy_counts, np.array(scalar))


def test_counts_have_sensitivity_one_on_neighbouring_data():
    rng = np.random.default_rng(1)  # test data, not privacy noise
    r = np.abs(rng.standard_normal(200))
    worst = r.copy()
    worst[0] = 1e300  # a residual above every level replaces one inside the grid
    search = _search()
    with recording() as rec:
        first = search.run(r, ledger=PrivacyLedger(), rng=make_noise_source(2), label="s")
    with replaying(rec) as rep:
        again = search.run(worst, ledger=PrivacyLedger(), rng=make_noise_source(3), label="s")
    assert again.value == first.value
    assert np.array_equal(again.noisy_counts, first.noisy_counts)
    ((old, new),) = zip(rec.releases, rep.releases, strict=True)
    moved = np.abs(old.value - new.value)
    assert moved.max() == 1.0  # each count moves by at most 1 ...
    assert np.linalg.norm(moved) <= old.entry.sensitivity  # ... so the vector by sqrt(n_q)


def test_exact_counts_are_the_number_of_values_at_or_below_each_level():
    values = np.array([0.0, 0.5, 1.0, 1.0, 3.0, np.nan, np.inf])
    search = DoublingSearch(ceiling=4.0, noise_multiplier=1.0, threshold=1.0, n_levels=3)
    with recording() as rec:
        search.run(values, ledger=PrivacyLedger(), rng=make_noise_source(0), label="s")
    exact = rec.releases[0].value.tolist()  # levels 0.5, 1, 2, 4
    assert exact == [2.0, 4.0, 4.0, 5.0]  # NaN and inf are never counted


def test_counts_match_the_definition_at_the_levels_and_beyond_the_grid():
    search = DoublingSearch(ceiling=3.0, noise_multiplier=1.0, threshold=1.0, n_levels=6)
    rng = np.random.default_rng(9)  # test data
    values = np.concatenate(
        [
            3.0 * np.abs(rng.standard_normal(300)) * 2.0 ** rng.integers(-8, 2, 300),
            search.levels,  # exactly on a level: counted at that level
            np.nextafter(search.levels, np.inf),  # just above: counted one level up
            [0.0, -1.0, np.nan, np.inf, -np.inf, 1e300],
        ]
    )
    expected = [int(np.count_nonzero(values <= level)) for level in search.levels]
    assert search.count(values).tolist() == expected


def test_returns_the_first_level_whose_noisy_count_reaches_the_threshold():
    # alpha tiny: noisy counts equal the true ones to ~1e-9
    values = np.linspace(0.0, 5.0, 100)
    search = DoublingSearch(ceiling=64.0, noise_multiplier=1e-10, threshold=100.0, n_levels=10)
    res = search.run(values, ledger=PrivacyLedger(), rng=make_noise_source(0), label="s")
    assert res.crossed and res.value == 8.0 and search.levels[res.level] == 8.0


def test_returns_the_ceiling_when_no_count_reaches_the_threshold():
    search = DoublingSearch(ceiling=2.0, noise_multiplier=1e-10, threshold=100.0, n_levels=4)
    res = search.run(
        np.full(100, 10.0), ledger=PrivacyLedger(), rng=make_noise_source(0), label="s"
    )
    assert not res.crossed and res.value == 2.0 and res.level == 4


def test_margin_threshold_formula():
    # theta = s - z sqrt(n_q) alpha, z = Phi^-1(1 - beta / (2 n_q T)) (spec D3)
    theta = margin_threshold(1000, n_queries=33, noise_multiplier=7.566, searches=14)
    z = stats.norm.isf(0.01 / (2 * 33 * 14))
    assert theta == pytest.approx(1000 - z * math.sqrt(33) * 7.566, rel=1e-13)
    assert 4.2 < z < 4.3  # spec pitfall arithmetic: z = 4.21-4.25 for T = 12-14
    assert literal_threshold(1000) == 1000.0


def test_margin_search_never_overshoots_twice_the_max_while_literal_does():
    # Spec verification item 5: s = 1000 residuals |N(0,1)|, K = 32, alpha = 7.566. With the
    # margin, gamma <= 2 max r in every trial; with theta = s the overshoot is common (15%
    # above 4 max r in 4000 trials). 200 trials: P(no literal overshoot > 2 max r) is tiny.
    rng = np.random.default_rng(5)  # test data
    src = make_noise_source(6)
    margin = _search(alpha=7.566, s=1000, K=32, B=1e3)
    literal = _search(alpha=7.566, theta=1000.0, K=32, B=1e3)
    over_margin = over_literal = 0
    for _ in range(200):
        r = np.abs(rng.standard_normal(1000))
        for search, tally in ((margin, "m"), (literal, "l")):
            g = search.run(r, ledger=PrivacyLedger(), rng=src, label="s").value
            if g > 2 * r.max():
                if tally == "m":
                    over_margin += 1
                else:
                    over_literal += 1
    assert over_margin == 0
    assert over_literal >= 20  # P(overshoot) ~ 0.5 per level beyond the max, so ~25-50%


def test_private_count_has_sensitivity_one():
    ledger = PrivacyLedger()
    with recording() as rec:
        private_count(
            [1.0, 2.0, 3.0], 2.0, noise_std=2.0, ledger=ledger, rng=make_noise_source(0), label="c"
        )
    assert rec.releases[0].entry.sensitivity == 1.0
    assert float(rec.releases[0].value) == 2.0
    assert ledger.rho == 1.0 / 8.0


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(ceiling=0.0), ValueError, "ceiling"),
        (dict(ceiling=float("inf")), ValueError, "ceiling"),
        (dict(noise_multiplier=-1.0), ValueError, "noise_multiplier"),
        (dict(noise_multiplier=True), TypeError, "noise_multiplier"),
        (dict(threshold=float("nan")), ValueError, "threshold"),
        (dict(n_levels=0), ValueError, "n_levels"),
        (dict(n_levels=2.5), TypeError, "n_levels"),
        (dict(ceiling=1e-300, n_levels=100), ValueError, "underflows"),
    ],
)
def test_bad_configuration(kwargs, exc, match):
    base = dict(ceiling=1.0, noise_multiplier=1.0, threshold=10.0, n_levels=8)
    with pytest.raises(exc, match=match):
        DoublingSearch(**{**base, **kwargs})
