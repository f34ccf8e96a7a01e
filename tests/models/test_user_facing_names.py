"""Errors name the argument the user wrote: ``random_state`` for estimators and the formula
API (``rng`` is the name in :func:`dpfit.minimize` and the algorithms)."""

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.algorithms import dp_gd

RNG = np.random.default_rng(5)
FRAME = pd.DataFrame({"x": RNG.uniform(0, 1, 200)})
FRAME["y"] = FRAME["x"] + RNG.normal(0, 0.1, 200)


@pytest.mark.parametrize(
    ("value", "exc", "match"),
    [
        ("abc", TypeError, r"^random_state must be None, an int or a numpy.random.Generator"),
        (np.random.RandomState(0), TypeError, r"^random_state must be None"),
        (-1, ValueError, r"^random_state seed must be >= 0"),
    ],
)
def test_estimator_and_ols_name_random_state(value, exc, match):
    with pytest.raises(exc, match=match):
        dpfit.DPLinearRegression(rho=0.5, clip=1.0, random_state=value).fit(
            FRAME[["x"]], FRAME["y"]
        )
    with pytest.raises(exc, match=match):
        dpfit.ols("y ~ x", FRAME, rho=0.5, clip=1.0, random_state=value)


def test_algorithms_keep_the_name_rng():
    X, y = FRAME[["x"]].to_numpy(), FRAME["y"].to_numpy()
    with pytest.raises(TypeError, match=r"^rng must be None"):
        dp_gd(X, y, rho=0.5, clip=1.0, steps=2, step_size=0.1, rng="abc")
