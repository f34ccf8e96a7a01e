"""dpfit.ols on a Dask DataFrame and DPLinearRegression.fit on Dask arrays (issue 10)."""

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")

import pandas as pd  # noqa: E402

import dpfit  # noqa: E402
from dpfit import Budget, DPLinearRegression  # noqa: E402

pytestmark = pytest.mark.usefixtures("client")

N = 2000
RNG = np.random.default_rng(11)
FRAME = pd.DataFrame(
    {
        "x": RNG.uniform(0, 10, N),
        "g": pd.Categorical(RNG.choice(["a", "b", "c"], N), categories=["a", "b", "c"]),
        "s": RNG.choice(["u", "v"], N),
    }
)
FRAME["y"] = 1.0 + 0.5 * FRAME["x"] + (FRAME["g"] == "b") + RNG.normal(0, 1, N)
DASK = dd.from_pandas(FRAME, npartitions=4)
BOUNDS = {"x": (0, 10), "I(x ** 2)": (0, 100), "C(g)[T.b]": (0, 1), "C(g)[T.c]": (0, 1)}
OLS = {"rho": 1.0, "bounds": BOUNDS, "y_bounds": (-5, 15), "steps": 20, "m": 10, "burn_in": 0}


def test_ols_on_a_dask_frame_matches_pandas():
    formula = "y ~ x + I(x ** 2) + C(g)"
    mem = dpfit.ols(formula, FRAME, random_state=2, **OLS)
    lazy = dpfit.ols(formula, DASK, n_public=N, random_state=2, **OLS)
    assert list(lazy.params.index) == ["Intercept", "x", "I(x ** 2)", "C(g)[T.b]", "C(g)[T.c]"]
    np.testing.assert_allclose(lazy.params, mem.params, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lazy.conf_int(), mem.conf_int(), rtol=1e-10, atol=1e-12)
    assert lazy.n == N and lazy.ledger.rho == mem.ledger.rho
    assert lazy.summary().as_text() == mem.summary().as_text()


@pytest.mark.parametrize(
    "formula, exc, match",
    [
        ("y ~ x + s", TypeError, "column 's' has dtype"),
        ("y ~ x + center(x)", ValueError, "stateful formula transforms"),
    ],
)
def test_formula_columns_must_be_public_on_dask(formula, exc, match):
    with pytest.raises(exc, match=match):
        dpfit.ols(formula, DASK, n_public=N, rho=1.0, clip=1.0, random_state=0)


def test_unknown_categories_are_refused():
    unknown = DASK.assign(g=DASK["g"].cat.as_unknown())
    with pytest.raises(TypeError, match="unknown categories"):
        dpfit.ols("y ~ C(g)", unknown, n_public=N, rho=1.0, clip=1.0, random_state=0)


def test_estimator_on_dask_arrays_and_refusals():
    X, y = FRAME[["x"]].to_numpy(), FRAME["y"].to_numpy()
    Xd, yd = DASK[["x"]].to_dask_array(lengths=True), DASK["y"].to_dask_array(lengths=True)
    params = {"rho": 1.0, "clip": 20.0, "step_size": 0.01, "steps": 10, "interval": None}
    mem = DPLinearRegression(random_state=3, **params).fit(X, y)
    lazy = DPLinearRegression(random_state=3, n_public=N, **params).fit(Xd, yd)
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-10)
    budget = Budget(rho=2.0)
    with pytest.raises(TypeError, match="method='adassp' needs in-memory data"):
        DPLinearRegression(
            rho=1.0, method="adassp", bounds=[(0, 10)], y_bounds=(-5, 15), interval=None,
            n_public=N,
        ).fit(Xd, yd, budget=budget)  # fmt: skip
    assert budget.spent == 0.0  # refused before the budget was touched
    with pytest.raises(TypeError, match="n_public is required"):
        DPLinearRegression(rho=1.0, clip=1.0).fit(Xd, yd)
