"""DenseMechanism refuses an encoder C whose float64 inverse B does not invert it.

The noise is sigma B z and the sensitivity is C's: when BC != I the release is private only
for B^{-1}, whose sensitivity can be far larger than the declared one.
"""

import numpy as np
import pytest

from dpfit.noise import DenseMechanism, multi_epoch


def _random_lower(T, seed=1):
    rng = np.random.default_rng(seed)
    C = np.tril(rng.standard_normal((T, T)))
    np.fill_diagonal(C, rng.uniform(0.2, 0.5, T))  # small pivots: cond(C) ~ 1e17 at T = 60
    return C


def test_an_encoder_whose_computed_inverse_fails_is_refused():
    C = _random_lower(60)
    with pytest.raises(ValueError, match="too ill-conditioned"):
        DenseMechanism(encoder=C)


def test_well_conditioned_encoders_are_accepted():
    mech = multi_epoch(60, separation=6)
    rebuilt = DenseMechanism(encoder=mech.encoder_matrix())
    B, C = rebuilt.decoder_matrix(), rebuilt.encoder_matrix()
    assert np.abs(B @ C - np.eye(60)).max() <= 1e-12  # cond(C) ~ 9: far inside the tolerance
    C = np.tril(np.full((40, 40), 0.1)) + np.eye(40)  # diagonally dominant, cond ~ 5
    DenseMechanism(encoder=C)
