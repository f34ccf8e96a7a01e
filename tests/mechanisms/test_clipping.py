"""Layer H.1: clipping never overshoots in float64 and never produces NaN."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpfit.mechanisms import (
    clip_factors,
    clip_residuals,
    clip_rows,
    residual_thresholds,
    row_norms,
    scale_rows,
)
from dpfit.mechanisms.clipping import CLIP_MARGIN

ADVERSARIAL = [1e-300, 5e-324, 1.0 - 2**-52, 1.0 + 2**-52, 1e150, 1e300, 1.7e308]


@pytest.mark.parametrize("clip", [1e-3, 0.1, 1.0, 1.0 + 2**-52, 1e6])
@pytest.mark.parametrize("scale", ADVERSARIAL)
@pytest.mark.parametrize("d", [1, 3, 100])
def test_clipped_norm_never_exceeds_clip(clip, scale, d):
    rng = np.random.default_rng(d)  # test data, not privacy noise
    G = rng.standard_normal((50, d))
    with np.errstate(over="ignore", invalid="ignore"):
        G = G / np.linalg.norm(G, axis=1, keepdims=True) * scale * clip
    C = clip_rows(G, clip)
    assert np.isfinite(C).all()
    assert (row_norms(C) <= clip).all()
    assert (np.sqrt((C.astype(np.longdouble) ** 2).sum(axis=1)) <= clip).all()


@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
        elements=st.floats(allow_nan=True, allow_infinity=True, width=64),
    ),
    st.floats(min_value=1e-6, max_value=1e6),
)
def test_any_input_gives_bounded_finite_rows(G, clip):
    C = clip_rows(G, clip)
    assert np.isfinite(C).all()
    assert (row_norms(C) <= clip).all()
    bad = ~np.isfinite(G).all(axis=1)
    assert (C[bad] == 0).all()  # non-finite gradients become exactly zero


def test_small_rows_are_untouched_and_zero_rows_stay_zero():
    G = np.array([[0.3, 0.4], [0.0, 0.0], [3.0, 4.0]])
    C = clip_rows(G, 1.0)
    assert np.array_equal(C[:2], G[:2])
    assert np.allclose(C[2], [0.6, 0.8]) and np.linalg.norm(C[2]) <= 1.0


def test_row_norms_do_not_overflow_or_underflow():
    G = np.array([[1e300, 1e300], [1e-320, 0.0], [np.inf, 0.0], [np.nan, 1.0], [0.0, 0.0]])
    n = row_norms(G)
    assert n[0] == pytest.approx(np.sqrt(2) * 1e300)
    assert n[1] > 0
    assert n[2] == np.inf and n[3] == np.inf and n[4] == 0.0


def test_scale_rows_zeroes_non_finite_residuals():
    r = np.array([1.0, np.inf, -np.inf, np.nan])
    f = clip_factors(np.abs(r), 0.5)
    out = scale_rows(r, f)
    assert np.array_equal(out, [0.5 * (1 - 2.0**-40), 0.0, 0.0, 0.0])
    assert out[0] < 0.5


@pytest.mark.parametrize("clip", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_clip_raises(clip):
    with pytest.raises(ValueError, match="clip"):
        clip_rows(np.ones((2, 2)), clip)


@pytest.mark.parametrize("clipped_share", ["few", "many"])
def test_clip_residuals_is_clip_factors_in_place(clipped_share):
    gen = np.random.default_rng(4)
    spread = 2 if clipped_share == "few" else 30
    r = gen.standard_t(2, size=5000) * np.exp(gen.uniform(-spread, spread, 5000))
    x_norms = np.exp(gen.uniform(-5, 5, 5000))
    x_norms[:3] = [0.0, 1e-300, 1e300]
    clip = 2.5 if clipped_share == "many" else 200.0
    factors = clip_factors(np.abs(r) * x_norms, clip)
    expected = scale_rows(r, factors)
    out = r.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        clipped = clip_residuals(
            out,
            x_norms,
            clip,
            thresholds=residual_thresholds(x_norms, clip),
            norms=np.empty(5000),
            mask=np.empty(5000, dtype=bool),
        )
    np.testing.assert_array_equal(out, expected)
    assert clipped == np.count_nonzero(factors < 1.0) > 0
    assert (clipped > 5000 // 8) == (clipped_share == "many")  # both routes are exercised
    assert np.all(np.abs(out) * x_norms <= clip)


def test_residual_thresholds_never_skip_a_clipped_row():
    # Rows placed within a few ulp of the bound, over many magnitudes of ||x_i||.
    gen = np.random.default_rng(5)
    x_norms = np.exp(gen.uniform(-600, 600, 100_000))
    clip = 3.0
    bound = clip * CLIP_MARGIN
    with np.errstate(over="ignore", under="ignore"):
        r = bound / x_norms * (1.0 + gen.integers(-8, 9, x_norms.size) * 2.0**-53)
        clipped = np.abs(r) * x_norms > bound
    assert 0.3 < clipped.mean() < 0.7
    thresholds = residual_thresholds(x_norms, clip)
    assert np.all(np.abs(r)[clipped] > thresholds[clipped])
    assert residual_thresholds(np.array([0.0]), clip)[0] == np.inf
    assert residual_thresholds(np.array([1e308]), 1e-300)[0] == 0.0  # subnormal: check all
