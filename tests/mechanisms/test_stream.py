"""The streamed matrix Gaussian release: one charge before any draw, regenerable rows, replay."""

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.mechanisms import (
    ReplayMismatchError,
    gaussian_rows,
    make_noise_source,
    recording,
    replaying,
)
from dpfit.privacy import Budget, PrivacyLedger


def _rows(ledger=None, seed=0, cache_rows=0, steps=5, rows=5, dim=3):
    ledger = ledger if ledger is not None else PrivacyLedger()
    return gaussian_rows(
        steps=steps,
        rows=rows,
        dim=dim,
        sensitivity=2.0,
        noise_std=1.5,
        ledger=ledger,
        rng=make_noise_source(seed),
        label="stream",
        cache_rows=cache_rows,
    )


def test_one_entry_charged_for_the_whole_release():
    ledger = PrivacyLedger()
    rows = _rows(ledger)
    assert len(ledger) == 1
    assert ledger.rho == pytest.approx(2.0**2 / (2 * 1.5**2), rel=1e-15)
    assert rows.entry is ledger.entries[0]
    for _ in range(5):
        rows.release(np.zeros(3), np.zeros(3))
    assert len(ledger) == 1  # steps are post-processing of the one release


def test_budget_exceeded_charges_and_draws_nothing():
    ledger = PrivacyLedger(budget=Budget(rho=0.1))
    with recording() as rec, pytest.raises(BudgetExceededError):
        _rows(ledger)
    assert len(ledger) == 0 and len(rec) == 0
    assert ledger.budget.spent == 0.0


def test_rows_are_standard_normal_and_regenerate_bit_for_bit():
    a = _rows(seed=3, rows=400, steps=400, dim=50)
    b = _rows(seed=3, rows=400, steps=400, dim=50, cache_rows=7)
    Z = a.block(0, 400)
    # 20000 N(0,1) draws: mean SE 0.007, variance SE 0.01; 5 SE bands.
    assert abs(Z.mean()) < 0.035 and abs(Z.var() - 1) < 0.05
    assert np.array_equal(a.block(10, 20), Z[10:20])
    for start in range(0, 400, 5):  # through the ring cache, wrapping and evicting
        assert np.array_equal(b.block(start, start + 5), Z[start : start + 5])
    assert np.array_equal(b.block(0, 3), Z[:3])  # evicted rows regenerate identically


def test_two_releases_from_one_source_never_share_noise():
    source = make_noise_source(0)
    ledger = PrivacyLedger()
    kw = dict(steps=2, rows=2, dim=4, sensitivity=1.0, noise_std=1.0, ledger=ledger, label="s")
    first = gaussian_rows(rng=source, **kw).block(0, 2)
    second = gaussian_rows(rng=source, **kw).block(0, 2)
    assert not np.array_equal(first, second)


def test_release_order_shape_and_count_are_enforced():
    rows = _rows(steps=2)
    with pytest.raises(ValueError, match="shape"):
        rows.release(np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="not finite"):
        rows.release(np.array([np.nan, 0, 0]), np.zeros(3))
    rows.release(np.zeros(3), np.zeros(3))
    rows.release(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="released"):
        rows.release(np.zeros(3), np.zeros(3))
    with pytest.raises(IndexError):
        rows.block(4, 6)


def test_secure_backend_is_refused_before_charging():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="secure"):
        gaussian_rows(
            steps=1,
            rows=1,
            dim=1,
            sensitivity=1.0,
            noise_std=1.0,
            ledger=ledger,
            rng=make_noise_source(secure=True),
            label="s",
        )
    assert len(ledger) == 0


def _run(values, seed):
    rows = _rows(seed=seed, steps=len(values), rows=len(values))
    return np.array([rows.release(v, 0.5 * rows.block(t, t + 1)[0]) for t, v in enumerate(values)])


def test_record_and_replay_keep_the_release_as_one_entry():
    values = np.arange(15.0).reshape(5, 3)
    with recording() as rec:
        out = _run(values, seed=1)
    assert len(rec) == 1
    (release,) = rec.releases
    assert np.array_equal(release.value, values) and np.array_equal(release.output, out)
    with replaying(rec) as rep:
        out2 = _run(values + 1.0, seed=2)  # other data, other seed: the outputs are replayed
    assert np.array_equal(out, out2)
    assert np.array_equal(rep.releases[0].value, values + 1.0)


def test_replay_detects_a_different_release():
    with recording() as rec:
        _run(np.zeros((5, 3)), seed=1)
    with pytest.raises(ReplayMismatchError), replaying(rec):
        _run(np.zeros((4, 3)), seed=1)
