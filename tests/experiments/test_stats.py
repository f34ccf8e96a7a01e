"""The Monte Carlo helpers every claim uses: slopes and their standard errors are calibrated."""

import numpy as np
import pandas as pd
import pytest

from dpfit.experiments._stats import (
    Estimate,
    loglog_fitted,
    loglog_slope,
    point,
    series_slope,
    statistic,
)


def _table(slope, reps=40, noise=0.2, seed=0, xs=(1e3, 2e3, 4e3, 8e3, 16e3)):
    rng = np.random.default_rng(seed)
    x = np.repeat(xs, reps)
    return pd.DataFrame({"n": x, "y": x**slope * np.exp(noise * rng.standard_normal(len(x)))})


def test_slope_recovers_the_exponent_and_its_se_is_calibrated():
    """Over 200 independent tables the bootstrap s.e. matches the spread of the slopes
    (within 15%, the sampling error of a standard deviation from 200 draws is ~5%)."""
    fits = [loglog_slope(_table(-0.5, seed=s), "n", "y") for s in range(200)]
    slopes = np.array([f.value for f in fits])
    assert abs(slopes.mean() + 0.5) < 3 * slopes.std() / np.sqrt(200)
    assert np.mean([f.se for f in fits]) == pytest.approx(slopes.std(ddof=1), rel=0.15)


def test_slope_of_medians_and_of_a_ratio():
    df = _table(-1.0).assign(z=lambda d: d["n"] ** -0.5)
    assert loglog_slope(df, "n", "y", "median").agrees(-1.0)
    assert loglog_slope(df, "n", ["y", "z"], "ratio-of-means").agrees(-0.5)


def test_single_replicates_fall_back_to_the_residual_se():
    fit = series_slope(pd.Series([1.0, 0.5, 0.26, 0.12], index=[1, 2, 4, 8]))
    assert fit.method.startswith("residual") and fit.value == pytest.approx(-1.0, abs=0.03)
    assert 0 < fit.se < 0.05


def test_fitted_values_at_the_ends():
    df = _table(-1.0)
    low, high = loglog_fitted(df, "n", "y", [1e3, 16e3])
    assert low.agrees(np.log(1e3**-1.0)) and high.agrees(np.log(16e3**-1.0))
    assert high.se < point(df[df["n"] == 16e3], "y").se / df["y"].mean() * 10


def test_estimate_tests():
    e = Estimate(1.0, 0.1)
    assert e.agrees(1.25) and not e.agrees(1.35)
    assert e.above(0.65) and not e.above(0.75)
    assert e.below(1.35) and not e.below(1.25)
    assert e.within(1.2, 2.0) and not e.within(1.31, 2.0)
    assert e.numbers("x") == {"x": 1.0, "x se": 0.1}
    with pytest.raises(ValueError, match="statistic"):
        statistic("mode")
