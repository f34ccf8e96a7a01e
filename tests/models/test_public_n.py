"""A model never shows or uses the private n under add/remove (issue 13, finding 4)."""

import numpy as np
import pytest

import dpfit
from dpfit.exceptions import LargeBudgetWarning
from dpfit.mechanisms import recording

RNG = np.random.default_rng(3)
X = RNG.uniform(-1, 1, (1000, 2))
Y = X @ np.array([0.5, -0.5]) + RNG.normal(0, 0.2, 1000)
ADASSP = {"method": "adassp", "bounds": [(-1, 1)] * 2, "y_bounds": (-2, 2), "interval": None}


@pytest.mark.parametrize("params", [ADASSP, {"clip": 1.0, "steps": 20, "m": 10, "burn_in": 0}])
def test_add_remove_without_a_public_n_is_refused_before_anything(params):
    budget = dpfit.Budget(rho=1.0)
    model = dpfit.DPLinearRegression(rho=0.5, relation="add-remove", random_state=0, **params)
    with recording() as rec, pytest.raises(ValueError, match="n_public is required"):
        model.fit(X, Y, budget=budget)
    assert len(rec) == 0 and budget.spent == 0.0


def test_the_summary_n_and_delta_come_from_the_declared_n():
    model = dpfit.DPLinearRegression(
        rho=0.5, relation="add-remove", n_public=20_000, random_state=0, **ADASSP
    ).fit(X, Y)
    res = model.result_
    assert res.n == 20_000
    assert "20000 (public)" in res.summary().as_text()
    assert res.default_delta == 1e-6  # a power of ten below 1 / (10 n_public)
    with pytest.warns(LargeBudgetWarning, match="exceeds 1/n"):
        res.summary(delta=1e-4)  # above 1 / n_public, though below 1 / len(X)
