"""Parallel composition in the ledger: rho = max over disjoint blocks, charged before any draw."""

import math

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.mechanisms import gaussian, make_noise_source, recording
from dpfit.privacy import (
    Budget,
    GaussianEntry,
    ParallelEntry,
    PrivacyLedger,
    Relation,
    gaussian_epsilon,
)


def _release(ledger, std, label="q", src=None):
    src = src or make_noise_source(0)
    return gaussian(
        np.zeros(2), sensitivity=1.0, noise_std=std, ledger=ledger, rng=src, label=label
    )


def test_rho_is_the_largest_block_not_the_sum():
    ledger = PrivacyLedger(budget=Budget(rho=1.0))
    src = make_noise_source(0)
    with ledger.parallel("algo", rho_per_block=1.0) as blocks:
        for std in (1.0, 2.0, 1.0, 4.0):  # block costs 0.5, 0.125, 0.5, 0.03125
            _release(blocks.block(), std, src=src)
    (entry,) = ledger.entries
    assert isinstance(entry, ParallelEntry)
    assert entry.n_blocks == 4
    assert ledger.rho == 0.5  # max, not the sum 1.15625
    assert ledger.budget.spent == 1.0  # the reserved per-block cap
    assert len(entry.blocks) == 3  # the two identical blocks are stored once, with count 2
    assert dict(entry.counts) == {"q": 4}


def test_a_block_sums_its_releases_and_cannot_exceed_the_cap():
    ledger = PrivacyLedger()
    with ledger.parallel("algo", rho_per_block=1.0) as blocks:
        block = blocks.block()
        _release(block, 1.0)
        _release(block, 1.0)  # 0.5 + 0.5 = the cap
        with recording() as rec, pytest.raises(BudgetExceededError):
            _release(block, 1.0)
        assert len(rec) == 0  # refused before anything was drawn
    assert ledger.rho == pytest.approx(1.0, rel=1e-15)


def test_opening_spends_the_cap_atomically_before_any_draw():
    budget = Budget(rho=0.3)
    ledger = PrivacyLedger(budget=budget)
    with pytest.raises(BudgetExceededError):
        ledger.parallel("algo", rho_per_block=0.5)
    assert budget.spent == 0.0 and len(ledger) == 0
    blocks = ledger.parallel("algo", rho_per_block=0.25)
    assert budget.spent == 0.25  # reserved at once
    assert ledger.rho == 0.0  # recorded on close
    blocks.close()
    assert len(ledger) == 1 and ledger.rho == 0.0  # an empty composition costs nothing


def test_the_entry_is_recorded_when_the_run_fails_part_way():
    ledger = PrivacyLedger()
    with pytest.raises(RuntimeError, match="boom"), ledger.parallel("algo", rho_per_block=1) as b:
        _release(b.block(), 1.0)
        raise RuntimeError("boom")
    assert ledger.rho == 0.5  # the draw made before the error is a release and stays charged


def test_closed_composition_refuses_new_blocks_and_closes_once():
    ledger = PrivacyLedger()
    blocks = ledger.parallel("algo", rho_per_block=1.0)
    first = blocks.close()
    assert blocks.close() is first and len(ledger) == 1
    with pytest.raises(RuntimeError, match="closed"):
        blocks.block()


def test_composes_sequentially_with_other_entries_and_gives_exact_gdp():
    ledger = PrivacyLedger()
    _release(ledger, 2.0)  # 0.125
    with ledger.parallel("algo", rho_per_block=0.5) as blocks:
        for _ in range(3):
            _release(blocks.block(), 1.0)  # 0.5 each, in parallel
    assert ledger.rho == pytest.approx(0.625, rel=1e-15)
    assert ledger.is_gaussian_only
    # mu^2 adds over sequential parts and is maxed over blocks: mu = sqrt(2 * 0.625).
    assert ledger.gaussian_epsilon(1e-6) == pytest.approx(gaussian_epsilon(math.sqrt(1.25), 1e-6))


def test_nested_parallel_blocks():
    ledger = PrivacyLedger()
    with ledger.parallel("outer", rho_per_block=1.0) as outer:
        block = outer.block()
        with block.parallel("inner", rho_per_block=0.5) as inner:
            _release(inner.block(), 1.0)
            _release(inner.block(), 1.0)
        _release(block, 1.0)  # sequential after the inner composition: 0.5 + 0.5
    assert ledger.rho == pytest.approx(1.0, rel=1e-15)


def test_statement_says_parallel_and_uses_the_max():
    ledger = PrivacyLedger()
    with ledger.parallel("dp_algo", rho_per_block=0.5) as blocks:
        for _ in range(7):
            _release(blocks.block(), 1.0, label="dp_algo/step")
    text = ledger.statement(1e-6)
    assert "0.5-zCDP" in text
    assert "parallel composition over 7 disjoint blocks" in text
    assert "7 x dp_algo/step" in text


def test_entry_validation():
    e = GaussianEntry(label="q", sensitivity=1.0, noise_std=1.0)
    with pytest.raises(ValueError, match="rho_per_block"):
        ParallelEntry(label="p", rho_per_block=0.0)
    with pytest.raises(ValueError, match="costs more"):
        ParallelEntry(label="p", rho_per_block=0.1, blocks=(((e,), 1),))
    with pytest.raises(ValueError, match="under"):
        ParallelEntry(
            label="p", rho_per_block=1.0, blocks=(((e,), 1),), relation=Relation.ADD_REMOVE
        )
    with pytest.raises(TypeError, match="label"):
        ParallelEntry(label="", rho_per_block=1.0)
    assert ParallelEntry(label="p", rho_per_block=1.0, blocks=(((e,), 3),)).n_blocks == 3
