"""A failed block of charged releases keeps spent only the releases it drew (issue 13).

``with gaussian_releases(...) as releases:`` charges every release before the first draw;
when the block raises, the undrawn ones go back to the ledger and its budget, exactly in an
in-memory Budget, rounded down in a stored one, and never when a query value was not finite
or when the block ends normally. All checks are exact (integer units of 2^-1074), so they
have no tolerance to tune.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.algorithms import dp_gd
from dpfit.mechanisms import gaussian_releases, make_noise_source, recording
from dpfit.privacy import Budget, GaussianEntry, PrivacyLedger, open_budget
from dpfit.privacy.budget import exact_units

RHO_EACH = 0.1  # not a dyadic number: sums of its multiples round in float64
COUNT = 10


class StorageError(Exception):
    """A failure that is not the data's (a storage or worker error)."""


def _fit(ledger, *, fail_after, exc=None):
    """Charge COUNT releases, draw ``fail_after`` of them, then raise ``exc``."""
    exc = StorageError("storage went away") if exc is None else exc
    with pytest.raises(type(exc)):
        with gaussian_releases(
            count=COUNT,
            sensitivity=1.0,
            noise_std=(1 / (2 * RHO_EACH)) ** 0.5,
            ledger=ledger,
            rng=make_noise_source(0),
            label="step",
        ) as releases:
            for _ in range(fail_after):
                releases.release(np.zeros(3))
            raise exc
    return releases


def _units(rho, count):
    return exact_units(rho) * count


@pytest.mark.parametrize("exc", [StorageError("gone"), KeyboardInterrupt(), MemoryError()])
@pytest.mark.parametrize("drawn", [0, 1, 3, COUNT - 1])
def test_a_failure_returns_exactly_the_undrawn_releases(drawn, exc):
    ledger = PrivacyLedger(budget=Budget(rho=2.0))
    releases = _fit(ledger, fail_after=drawn, exc=exc)
    rho_each = ledger.entries[0].rho_each if drawn else releases.entry.rho_each
    assert ledger.budget._spent_units == _units(rho_each, drawn)  # exact, no rounding
    assert ledger._units == _units(rho_each, drawn)
    if drawn:  # the ledger lists the releases that exist, with their count
        (entry,) = ledger.entries
        assert entry == GaussianEntry(
            label="step", sensitivity=1.0, noise_std=releases.entry.noise_std, count=drawn
        )
    else:
        assert ledger.entries == ()
    assert releases.count == releases.made == drawn
    with pytest.raises(BudgetExceededError, match="charged releases were made"):
        releases.release(np.zeros(3))  # nothing may be drawn on a refunded release


def test_the_statement_is_that_of_the_drawn_releases():
    failed = PrivacyLedger(budget=Budget(rho=2.0))
    _fit(failed, fail_after=4)
    fresh = PrivacyLedger()
    with gaussian_releases(
        count=4, sensitivity=1.0, noise_std=(1 / (2 * RHO_EACH)) ** 0.5, ledger=fresh,
        rng=make_noise_source(0), label="step",
    ) as releases:  # fmt: skip
        for _ in range(4):
            releases.release(np.zeros(3))
    assert failed.rho == fresh.rho
    assert failed.statement(1e-6) == fresh.statement(1e-6)


def test_the_refunded_rho_can_be_spent_again_and_no_more():
    budget = Budget(rho=1.0)
    _fit(PrivacyLedger(budget=budget), fail_after=3)
    left = budget.total - budget.spent
    assert budget.can_afford(left) and not budget.can_afford(left * (1 + 1e-9))


def test_a_normal_exit_refunds_nothing():
    # an algorithm that stops early might stop on the data: the ledger then overstates
    ledger = PrivacyLedger(budget=Budget(rho=2.0))
    with gaussian_releases(
        count=COUNT, sensitivity=1.0, noise_std=2.0, ledger=ledger, rng=make_noise_source(0),
        label="step",
    ) as releases:  # fmt: skip
        releases.release(np.zeros(2))
    assert ledger.entries[0].count == COUNT
    assert ledger.budget._spent_units == ledger.entries[0].rho_units


def test_a_non_finite_query_keeps_the_whole_charge():
    # only a bug can make a query value not finite; a refund would then show at which step
    ledger = PrivacyLedger(budget=Budget(rho=2.0))
    with pytest.raises(ValueError, match="not finite"):
        with gaussian_releases(
            count=COUNT, sensitivity=1.0, noise_std=2.0, ledger=ledger,
            rng=make_noise_source(0), label="step",
        ) as releases:  # fmt: skip
            releases.release(np.zeros(2))
            releases.release(np.array([0.0, np.nan]))
    assert ledger.entries[0].count == COUNT
    assert ledger.budget._spent_units == ledger.entries[0].rho_units


def test_a_stored_budget_gets_a_refund_row_rounded_down(tmp_path):
    budget = open_budget(tmp_path / "b.sqlite", dataset="d", rho=5.0)
    ledger = PrivacyLedger(budget=budget)
    releases = _fit(ledger, fail_after=3)
    rho_each = releases.entry.rho_each
    charge, refund = budget.history()
    assert "direct spend" in charge.mechanism
    assert refund.mechanism == "refund: 7 undrawn releases of step (the fit failed)"
    # the charge row is never below the exact cost, the refund never above the exact undrawn;
    # both can fail: the nearest float to 10 rho_each is below the exact sum, to 7 above it
    assert exact_units(charge.rho) >= _units(rho_each, COUNT)
    assert 0 < exact_units(-refund.rho) <= _units(rho_each, COUNT - 3)
    net = exact_units(charge.rho) - exact_units(-refund.rho)
    assert _units(rho_each, 3) <= net <= _units(rho_each, 3) + 2 * exact_units(2.0**-52)
    assert ledger.entries[0].count == 3


def test_a_reservation_records_the_drawn_releases_and_returns_the_rest(tmp_path):
    budget = open_budget(tmp_path / "b.sqlite", dataset="d", rho=5.0)
    with budget.reserve(2.0, mechanism="a fit") as reserved:
        releases = _fit(PrivacyLedger(budget=reserved), fail_after=3)
    charge, refund = budget.history()
    assert charge.rho == 2.0
    assert charge.releases == (("step", 3, pytest.approx(3 * releases.entry.rho_each)),)
    assert exact_units(-refund.rho) <= exact_units(2.0) - _units(releases.entry.rho_each, 3)
    assert budget.spent == pytest.approx(3 * RHO_EACH, rel=1e-12)  # float rounding only


def test_a_refund_inside_a_parallel_block_goes_to_the_block():
    outer = PrivacyLedger(budget=Budget(rho=2.0))
    with outer.parallel("blocks", rho_per_block=1.5) as par:
        block = par.block()
        _fit(block, fail_after=2)
    assert outer.budget.spent == 1.5  # the reserved share stays spent, as for any block
    assert outer.entries[0].counts == {"step": 2}


@pytest.mark.parametrize("value", [1.7e308, -1.7e308])
def test_extreme_finite_records_never_fail_dp_gd_after_its_charge(value):
    # the number drawn before a failure is what a refund shows, so no record value may end
    # DP-GD early: rows of +-1.7e308 (overflowing squares and products) run to the end
    rng = np.random.default_rng(3)
    X, y = rng.uniform(-1, 1, (50, 3)), rng.uniform(-1, 1, 50)
    X[0], y[0] = value, -value
    X[1, 1] = -value
    ledger = PrivacyLedger(budget=Budget(rho=1.0))
    with recording() as rec:
        traj = dp_gd(X, y, rho=1.0, clip=1.0, steps=8, step_size=0.5, ledger=ledger, rng=4)
    assert len(rec) == 8 and np.all(np.isfinite(traj.iterates))
    assert ledger.entries[0].count == 8 and ledger.budget.spent == pytest.approx(1.0, rel=1e-15)


def test_a_release_whose_draw_was_interrupted_stays_spent(monkeypatch):
    # the draw may have begun (noise generated, not yet returned): it counts as drawn
    module = importlib.import_module("dpfit.mechanisms.gaussian")  # the name is also a function

    def interrupted(value, entry, rng):
        raise KeyboardInterrupt

    ledger = PrivacyLedger(budget=Budget(rho=2.0))
    with pytest.raises(KeyboardInterrupt):
        with gaussian_releases(
            count=COUNT, sensitivity=1.0, noise_std=2.0, ledger=ledger, rng=make_noise_source(0),
            label="step",
        ) as releases:  # fmt: skip
            releases.release(np.zeros(2))
            monkeypatch.setattr(module, "_draw", interrupted)
            releases.release(np.zeros(2))
    assert releases.made == 2 and ledger.entries[0].count == 2
    assert ledger.budget._spent_units == _units(ledger.entries[0].rho_each, 2)
