"""DPLinearRegression(method="ambssgd"): public constants from bounds, checks before release."""

import numpy as np
import pytest

from dpfit import DPLinearRegression
from dpfit.mechanisms import recording
from dpfit.privacy import ParallelEntry

BOUNDS, Y_BOUNDS = [(-1.0, 1.0)] * 3, (-4.0, 4.0)


def make_data(n=200_000, seed=0):
    rng = np.random.default_rng(seed)  # synthetic data, not privacy noise
    X = rng.uniform(-1, 1, (n, 3))
    return X, 0.5 + X @ np.array([1.0, -0.5, 0.25]) + 0.3 * rng.standard_normal(n)


def model(**kw):
    base = dict(
        rho=0.5,
        method="ambssgd",
        interval=None,
        steps=24,
        step_size=1.0,
        bounds=BOUNDS,
        y_bounds=Y_BOUNDS,
        random_state=0,
    )
    return DPLinearRegression(**{**base, **kw})


def test_fit_recovers_the_coefficients_at_the_stated_cost():
    X, y = make_data()
    fitted = model().fit(X, y)
    # n = 2e5, sigma = 0.3 (0.075 after rescaling): sampling error ~1e-3, privacy ~1e-3
    assert np.allclose(fitted.coef_, [1.0, -0.5, 0.25], atol=0.02)
    assert fitted.intercept_ == pytest.approx(0.5, abs=0.02)
    assert fitted.privacy_.rho == pytest.approx(0.5, rel=1e-12)
    (plan,) = fitted.privacy_.entries  # the fit's plan: one composed entry
    (entry,) = plan.components
    assert isinstance(entry, ParallelEntry) and entry.n_blocks == 48  # parallel accounting
    assert "DP-AMBSSGD" in str(fitted.summary())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(bounds=None), "bounds"),
        (dict(interval="batched-means"), "interval=None"),
        (dict(clip=3.0), "clip"),
        (dict(steps=1000), r"e.g. steps=10 "),
        (dict(steps=25), "even"),
        (dict(relation="add-remove", n_public=200_000), "replace-one"),
    ],
)
def test_bad_settings_fail_before_any_release(kwargs, match):
    X, y = make_data(20_000)
    with recording() as rec, pytest.raises(ValueError, match=match):
        model(**kwargs).fit(X, y)
    assert len(rec) == 0


def test_an_interval_is_refused_before_any_charge_with_the_alternatives():
    X, y = make_data(n=2000)
    with recording() as rec, pytest.raises(ValueError, match="point estimate only") as info:
        model(interval="batched-means").fit(X, y)
    assert "interval=None" in str(info.value) and "method='adassp'" in str(info.value)
    assert not rec.releases  # refused before anything was drawn
