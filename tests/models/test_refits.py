"""Refitting data of one shape many times without a shared budget warns: tuning spends privacy.

The count is keyed by public quantities only (models/_refits.py): each test uses its own n.
"""

import warnings

import numpy as np
import pytest

import dpfit
from dpfit.exceptions import CoverageWarning, IdentificationWarning, RepeatedFitWarning
from dpfit.models._refits import REFITS

RNG = np.random.default_rng(21)
X = RNG.uniform(-1, 1, (300, 2))
Y = X @ [1.0, -0.5] + 0.1 * RNG.standard_normal(300)
KW = {"rho": 0.5, "clip": 1.0, "steps": 20, "interval": None, "random_state": 0}


def test_the_fifth_fit_of_the_same_data_warns_once():
    data = (X[:299], Y[:299])  # a shape of this test's own
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for clip in np.linspace(0.5, 2.0, 2 * REFITS):  # a grid search by hand
            dpfit.DPLinearRegression(**{**KW, "clip": clip}).fit(*data)
    repeated = [w for w in caught if issubclass(w.category, RepeatedFitWarning)]
    assert len(repeated) == 1
    assert f"fitted {REFITS} times on data of the same shape" in str(repeated[0].message)
    assert f"rho = {REFITS * KW['rho']:g}" in str(repeated[0].message)


def test_a_shared_budget_or_other_shapes_do_not_warn():
    budget = dpfit.Budget(rho=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedFitWarning)
        for _ in range(REFITS + 1):
            dpfit.DPLinearRegression(**KW).fit(X[:298], Y[:298], budget=budget)
        for k in range(REFITS + 1):
            dpfit.DPLinearRegression(**KW).fit(X[: 290 - k], Y[: 290 - k])


def test_grid_search_style_refits_of_the_iv_estimator_warn():
    n = 403  # a shape of this test's own: other test files fit IV data of n = 400
    z = RNG.integers(0, 2, (n, 1)).astype(float)
    x = z + RNG.standard_normal((n, 1))
    y = 0.5 * x[:, 0] + RNG.standard_normal(n)
    with pytest.warns(RepeatedFitWarning, match="DPIVRegression"), warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageWarning)  # a small design; not the point here
        warnings.simplefilter("ignore", IdentificationWarning)
        for _ in range(REFITS):
            dpfit.DPIVRegression(rho=0.5, random_state=0).fit(x, y, Z=z)
