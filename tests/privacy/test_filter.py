"""Privacy filters: the bound is reserved up front and stated; the realised spend is not."""

import pickle

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.mechanisms import gaussian, make_noise_source, recording
from dpfit.privacy import (
    Budget,
    FilterEntry,
    GaussianEntry,
    PrivacyLedger,
    Relation,
    privacy_filter,
)


def _release(ledger, std, src, label="algo/q"):
    return gaussian(
        np.zeros(2), sensitivity=1.0, noise_std=std, ledger=ledger, rng=src, label=label
    )


def test_the_bound_is_reserved_and_stated_whatever_is_spent():
    ledger = PrivacyLedger(budget=Budget(rho=1.0))
    src = make_noise_source(0)
    with privacy_filter(ledger, label="algo", rho=0.75) as filt:
        assert ledger.budget.spent == 0.75  # before any draw
        _release(filt.ledger, 2.0, src)  # 0.125
        _release(filt.ledger, 1.0, src)  # 0.5
    (entry,) = ledger.entries
    assert isinstance(entry, FilterEntry)
    assert entry.rho == ledger.rho == 0.75
    assert entry.rho_spent == 0.625 and entry.count == 2 and dict(entry.counts) == {"algo/q": 2}
    assert ledger.budget.spent == 0.75 and entry.is_plain_gaussian
    text = ledger.statement()
    assert text.startswith("Privacy: 0.75-zCDP") and "Realised spend 0.625" in text
    assert "not a guarantee" in text and "Smith and Thakurta 2022" in text
    assert pickle.loads(pickle.dumps(entry)) == entry


def test_an_unaffordable_bound_changes_nothing():
    ledger = PrivacyLedger(budget=Budget(rho=0.5))
    with recording() as rec, pytest.raises(BudgetExceededError):
        privacy_filter(ledger, label="algo", rho=0.75)
    assert len(rec) == 0 and len(ledger) == 0 and ledger.budget.spent == 0.0


def test_no_release_can_exceed_the_bound_and_an_error_still_closes_the_filter():
    ledger = PrivacyLedger()
    src = make_noise_source(0)
    with pytest.raises(BudgetExceededError), privacy_filter(ledger, label="a", rho=0.6) as filt:
        _release(filt.ledger, 1.0, src)  # 0.5
        _release(filt.ledger, 1.0, src)  # would make 1.0 > 0.6: refused, nothing drawn
    (entry,) = ledger.entries
    assert entry.count == 1 and entry.rho == 0.6  # the release made is covered by the bound


def test_entry_validation():
    one = GaussianEntry(label="q", sensitivity=1.0, noise_std=1.0)
    with pytest.raises(ValueError, match="cost more than rho_bound"):
        FilterEntry(label="a", rho_bound=0.4, entries=(one,))
    with pytest.raises(ValueError, match="must be under"):
        FilterEntry(label="a", rho_bound=1.0, entries=(one,), relation=Relation.ADD_REMOVE)
    with pytest.raises(ValueError, match="rho_bound"):
        FilterEntry(label="a", rho_bound=float("nan"))
    with pytest.raises(TypeError, match="label"):
        FilterEntry(label="", rho_bound=1.0)
