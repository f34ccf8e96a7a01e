"""The DP-AMBSSGD synthetic design (spec 5.1)."""

import math

import numpy as np
import pytest

from dpfit.datasets.onepass_gaussian import draw_onepass_design


def test_design_constants():
    design = draw_onepass_design(5, condition_number=10.0, noise_std=0.5, rng=1)
    lam = design.eigenvalues
    assert lam[0] == 1.0 and lam[-1] == pytest.approx(0.1) and np.all(np.diff(lam) < 0)
    assert np.allclose(lam[1:] / lam[:-1], 10 ** (-1 / 4))  # geometric from 1 to 1/kappa
    assert np.linalg.norm(design.w_star) == pytest.approx(1.0)
    assert design.feature_scale == pytest.approx(math.sqrt(lam.sum() + 2))
    e = np.array([1.0, 0, 0, 0, 0])
    assert design.excess_risk(design.w_star + e) == pytest.approx(0.5, rel=1e-15)


def test_stream_is_deterministic_chunked_and_has_the_right_law():
    design = draw_onepass_design(3, condition_number=4.0, noise_std=0.5, rng=2)
    a = list(design.stream(100_001, seed=9, chunk=30_000))
    assert [c[0].shape[0] for c in a] == [30_000, 30_000, 30_000, 10_001]
    X, y = design.arrays(100_001, seed=9)
    assert np.array_equal(X, np.concatenate([c[0] for c in a]))
    # second moments: relative sampling error of a variance from 1e5 draws is ~0.45%; 3%
    assert np.allclose(X.var(axis=0), design.eigenvalues, rtol=0.03)
    resid = y - X @ design.w_star
    assert resid.std() == pytest.approx(0.5, rel=0.03)


def test_noise_std_must_be_finite_and_nonnegative():
    with pytest.raises(ValueError, match="noise_std"):
        draw_onepass_design(3, noise_std=-1.0)
