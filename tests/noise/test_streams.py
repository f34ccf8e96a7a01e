"""Noise streams: identical noise in every mode, one charge, O(d) memory when regenerating."""

import tracemalloc

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.mechanisms import make_noise_source, recording, replaying
from dpfit.noise import (
    anti_pgd,
    banded,
    correlated_noise,
    dpsgd,
    fichtenberger,
    nu_dpftrl,
    release_sensitivity,
    restarted,
    tree_aggregation,
)
from dpfit.privacy import Budget, PrivacyLedger, float_sum_excess

MECHANISMS = [
    nu_dpftrl(0.02, steps=150),
    fichtenberger(150),
    banded(nu_dpftrl(0.02, steps=150), 6),
    tree_aggregation(150),
    restarted(fichtenberger(30), 5),
]


def _noise(mech, mode, *, dim=40, seed=11, ledger=None):
    ledger = ledger if ledger is not None else PrivacyLedger()
    stream = correlated_noise(
        mech,
        dim=dim,
        clip=1.0,
        batch_size=1,
        noise_std=0.7,
        ledger=ledger,
        rng=make_noise_source(seed),
        mode=mode,
    )
    return np.array([stream.privatize(np.zeros(dim)) for _ in range(mech.steps)]), stream


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_buffered_and_regenerated_agree_bit_for_bit(mech):
    regen, s1 = _noise(mech, "regenerate")
    buf, s2 = _noise(mech, "buffered")
    assert (s1.mode, s2.mode) == ("regenerate", "buffered")
    assert np.array_equal(regen, buf)
    # and equal B Z with the same rows (the first child of the seeded source)
    child = make_noise_source(11).spawn(1)[0]
    Z = np.array([child.keyed_generator(i).standard_normal(40) for i in range(mech.noise_rows)])
    np.testing.assert_allclose(regen, 0.7 * mech.decoder_matrix() @ Z, rtol=0, atol=1e-12)


@pytest.mark.parametrize("mech", MECHANISMS[:3], ids=lambda m: m.name)
def test_fft_mode_agrees_to_1e12(mech):
    regen, _ = _noise(mech, "regenerate")
    fft, stream = _noise(mech, "fft")
    assert stream.mode == "fft"
    np.testing.assert_allclose(fft, regen, rtol=0, atol=1e-12)


def test_wide_vectors_use_small_blocks_identically():
    mech = nu_dpftrl(0.0, steps=12)
    a, _ = _noise(mech, "regenerate", dim=70000)  # 3 rows per accumulation block
    b, _ = _noise(mech, "buffered", dim=70000)
    assert np.array_equal(a, b)


def test_stream_charges_once_with_the_participation_sensitivity():
    ledger = PrivacyLedger()
    mech = nu_dpftrl(0.01, steps=600)
    pattern = dict(participations=20, separation=30)
    stream = correlated_noise(
        mech,
        dim=3,
        clip=0.5,
        batch_size=50,
        noise_std=2.0,
        ledger=ledger,
        rng=make_noise_source(0),
        mode="buffered",
        **pattern,
    )
    (entry,) = ledger.entries
    assert entry.sensitivity == release_sensitivity(mech, clip=0.5, batch_size=50, **pattern)
    # (2 clip + the float64 rounding allowance of a sum of 50 vectors) x sens(C), with
    # sens(C)^2 = 81.2562 at nu = 0.01 (docs/choquettechoo2024.md, sensitivity table)
    exact = (2 * 0.5 + float_sum_excess(0.5, 50)) * np.sqrt(81.25622940320184)
    assert entry.sensitivity == pytest.approx(exact, rel=1e-14)
    assert entry.noise_std == 2.0 and stream.entry is entry
    for _ in range(600):
        stream.privatize(np.ones(3))
    assert len(ledger) == 1
    with pytest.raises(ValueError, match="600 steps"):
        stream.privatize(np.ones(3))


def test_budget_too_small_fails_before_any_draw():
    ledger = PrivacyLedger(budget=Budget(rho=0.01))
    with recording() as rec, pytest.raises(BudgetExceededError):
        _noise(nu_dpftrl(0.1, steps=10), "auto", ledger=ledger)
    assert len(ledger) == 0 and len(rec) == 0


def test_memory_cap_selects_regeneration_or_refuses_buffering():
    mech = nu_dpftrl(0.1, steps=50)
    kw = dict(
        dim=1000,
        clip=1.0,
        batch_size=1,
        noise_std=1.0,
        rng=make_noise_source(0),
        max_buffer_bytes=10_000,
    )
    assert correlated_noise(dpsgd(50), ledger=PrivacyLedger(), **kw).mode == "buffered"
    assert correlated_noise(anti_pgd(50), ledger=PrivacyLedger(), **kw).mode == "regenerate"
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="MiB"):
        correlated_noise(mech, ledger=ledger, mode="buffered", **kw)
    assert len(ledger) == 0
    with pytest.raises(ValueError, match="Toeplitz"):
        correlated_noise(tree_aggregation(4), ledger=ledger, mode="fft", **kw)


def _peak_bytes(steps, mode, dim):
    mech = nu_dpftrl(0.01, steps=steps)
    value = np.zeros(dim)
    tracemalloc.start()
    stream = correlated_noise(
        mech,
        dim=dim,
        clip=1.0,
        batch_size=1,
        noise_std=1.0,
        ledger=PrivacyLedger(),
        rng=make_noise_source(1),
        mode=mode,
    )
    for _ in range(steps):
        stream.privatize(value)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _growth_per_step(mode, steps=8, dim=2**16, repeats=3):
    """Extra peak memory of 2T steps over T steps, in d-vectors (8 d bytes) per extra step.

    A slope, not a cap: what ran before in the same process (threads still allocating, caches
    already warm or not) shifts an absolute peak (2.65 MB against a 2.5 MiB cap once, in a
    full run) but not the difference, and such allocations only ever add to a peak, so each
    peak is the least of ``repeats`` runs. A stream that keeps its T x d noise is ~1. At
    d = 2^16 a regeneration block is 4 rows (2 MiB, ``toeplitz._block_rows``), so T = 8
    already holds more rows than one block.
    """
    peak = {t: min(_peak_bytes(t, mode, dim) for _ in range(repeats)) for t in (steps, 2 * steps)}
    return (peak[2 * steps] - peak[steps]) / (steps * 8 * dim)


def test_regenerated_stream_memory_does_not_grow_with_steps():
    # Regeneration holds one accumulation block whatever T is: slope ~0 (measured 0.0).
    assert _growth_per_step("regenerate") < 0.1
    # The buffered stream keeps T x d floats: slope ~1 (measured 1.0; so this can fail).
    assert _growth_per_step("buffered") > 0.9


@pytest.mark.parametrize("mode", ["auto", "regenerate"])
def test_replay_checks_the_matrix_level_sensitivity(mode):
    """||C (G - G')||_F <= declared sensitivity on a worst-case neighbour (reliability 3.3)."""
    mech = nu_dpftrl(0.05, steps=40)
    k, b, d, clip = 4, 10, 3, 1.0
    streams = []

    def run(G, seed):
        stream = correlated_noise(
            mech,
            dim=d,
            clip=clip,
            batch_size=1,
            noise_std=1.0,
            ledger=PrivacyLedger(),
            rng=make_noise_source(seed),
            participations=k,
            separation=b,
            mode=mode,
        )
        streams.append(stream)
        return np.array([stream.privatize(g) for g in G])

    G = np.zeros((40, d))
    G_prime = G.copy()
    G_prime[0::b] = [clip, 0, 0]  # the record at slot 0 of every epoch, replaced (+clip)
    G[0::b] = [-clip, 0, 0]  # ... from -clip: a change of 2 clip at each participation
    with recording() as rec:
        out = run(G, 0)
    with replaying(rec) as rep:
        out2 = run(G_prime, 1)
    assert np.array_equal(out, out2)
    (orig,), (new,) = rec.releases, rep.releases
    used = streams[0].mechanism  # the optimal BLT under "auto", nu-DP-FTRL otherwise
    assert (used is mech) == (mode == "regenerate")
    diff = np.linalg.norm(used.encoder_matrix() @ (orig.value - new.value))
    assert diff <= orig.entry.sensitivity * (1 + 1e-12)
    assert diff == pytest.approx(orig.entry.sensitivity, rel=1e-12)  # worst case is attained
