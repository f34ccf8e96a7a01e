"""The public-bounds rescaling maps back exactly (a private helper, tested next to its use)."""

import numpy as np
import pytest

from dpfit.models._scaling import PublicScaling


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("with_y", [True, False])
def test_least_squares_on_rescaled_data_maps_back_to_least_squares(fit_intercept, with_y):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(2, 8, 200), rng.uniform(-30, 10, 200)])
    y = 4.0 + X @ np.array([0.5, -0.1]) + rng.normal(0, 1, 200)
    scaling = PublicScaling.from_bounds(
        [(0, 10), (-40, 20)],
        (-50, 50) if with_y else None,
        n_features=2,
        fit_intercept=fit_intercept,
    )
    design = scaling.design(X)
    assert np.abs(design).max() <= 1.0
    fitted = np.linalg.lstsq(design, scaling.response(y), rcond=None)[0]
    direct_design = np.column_stack([np.ones(200), X]) if fit_intercept else X
    direct = np.linalg.lstsq(direct_design, y, rcond=None)[0]
    np.testing.assert_allclose(scaling.to_original(fitted), direct, rtol=1e-10, atol=1e-12)
    # rows of estimates map one by one
    stacked = scaling.to_original(np.vstack([fitted, fitted]))
    np.testing.assert_allclose(stacked[1], scaling.to_original(fitted))


def test_values_outside_bounds_are_clipped_and_norm_bound_holds():
    scaling = PublicScaling.from_bounds([(0, 1)] * 3, (0, 2), n_features=3, fit_intercept=True)
    design = scaling.design(np.array([[5.0, -5.0, 0.5]]))
    np.testing.assert_array_equal(design, [[1.0, 1.0, -1.0, 0.0]])
    assert scaling.max_row_norm == 2.0
    assert scaling.response(np.array([10.0]))[0] == 1.0


def test_no_bounds_is_the_identity_plus_ones_column():
    scaling = PublicScaling.from_bounds(None, None, n_features=2, fit_intercept=True)
    X = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(scaling.design(X)[:, 1:], X)
    assert scaling.max_row_norm is None and scaling.describe() is None
