"""mode="auto" recognises a BLT substitution by identity, not by the mechanism's name.

When "auto" streams the optimal BLT in place of a long-memory Toeplitz mechanism it charges the
BLT's sensitivity and rescales sigma to the same rho. A Toeplitz mechanism that merely carries
the BLT's name must get the same treatment: compared by name, it was streamed as the BLT with
its own (smaller) sensitivity, under-charging by about 17% at T = 600, k = 6, b = 100.
"""

import pytest

from dpfit.mechanisms import make_noise_source
from dpfit.noise import calibrate, correlated_noise, nu_dpftrl, optimal_blt, select_nu, toeplitz
from dpfit.privacy import PrivacyLedger

T, K, B = 600, 6, 100


def _stream(mech):
    cal = calibrate(mech, clip=1.0, batch_size=10, rho=0.5, participations=K, separation=B)
    ledger = PrivacyLedger()
    stream = correlated_noise(
        mech,
        dim=2,
        clip=1.0,
        batch_size=10,
        noise_std=cal.noise_std,
        ledger=ledger,
        rng=make_noise_source(0),
        participations=K,
        separation=B,
    )
    return stream, ledger


def test_a_toeplitz_mechanism_named_like_the_blt_substitute_is_charged_for_the_blt():
    blt = optimal_blt(T, participations=K, separation=B)
    beta = nu_dpftrl(select_nu(T, participations=K, separation=B).nu, steps=T).beta
    honest, _ = _stream(toeplitz(beta))
    renamed, ledger = _stream(toeplitz(beta, name=blt.name))
    assert renamed.mechanism.name == blt.name  # the substitution happened
    # Same input coefficients, so the same substitute at the same rho: equal sigma.
    assert renamed.noise_std == pytest.approx(honest.noise_std, rel=1e-12)
    # rho of what is streamed (replace-one: 2 x clip per step; the charge may add the
    # rounding allowance on top, so it is an upper bound).
    streamed_rho = (2.0 * renamed.mechanism.sensitivity(K, B)) ** 2 / (2 * renamed.noise_std**2)
    assert streamed_rho <= ledger.rho * (1 + 1e-12)
