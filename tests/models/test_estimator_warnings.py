"""The estimators warn, as :func:`dpfit.ols` does, when a fit cannot be useful: too few
records per coefficient (public n and p), for every linear method, before anything is drawn."""

import warnings

import numpy as np
import pytest

import dpfit
from dpfit.exceptions import SideConditionWarning

RNG = np.random.default_rng(3)
X_WIDE = RNG.uniform(-1, 1, (300, 400))  # the case: 400 columns, n = 300, pure noise
Y_WIDE = RNG.uniform(-1, 1, 300)
WIDE_BOUNDS = {"bounds": [(-1, 1)] * 400, "y_bounds": (-1, 1)}


@pytest.mark.parametrize(
    "params",
    [
        {"clip": 1.0, "steps": 20, "interval": None},
        {"method": "adassp", "interval": None, **WIDE_BOUNDS},
        {"precondition": False, "steps": 20, "interval": None, **WIDE_BOUNDS},
    ],
    ids=["gd", "adassp", "gd-bounds"],
)
def test_p_close_to_n_warns_in_the_estimator(params):
    model = dpfit.DPLinearRegression(rho=1.0, random_state=0, **params)
    with pytest.warns(SideConditionWarning) as caught:  # AdaSSP also says it is unidentified
        model.fit(X_WIDE, Y_WIDE)
    assert any("p = 401 coefficients with n = 300 records" in str(w.message) for w in caught)


def test_one_warning_through_ols_and_none_when_records_are_plenty():
    import pandas as pd

    frame = pd.DataFrame(X_WIDE[:, :40], columns=[f"c{j}" for j in range(40)])
    frame["y"] = Y_WIDE
    formula = "y ~ " + " + ".join(frame.columns[:-1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpfit.ols(formula, frame, rho=1.0, clip=1.0, steps=5, interval=None, random_state=0)
    few = [w for w in caught if "coefficients with n = 300" in str(w.message)]
    assert len(few) == 1 and few[0].filename == __file__  # points at the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", SideConditionWarning)
        # 10 records per coefficient: no warning (n = 300, p = 29 + intercept)
        dpfit.DPLinearRegression(rho=1.0, clip=1.0, steps=5, interval=None, random_state=0).fit(
            X_WIDE[:, :29], Y_WIDE
        )


def test_add_remove_uses_the_public_n_not_the_row_count():
    """Under add-remove the row count is private; the warning uses n_public only."""
    kw = {"rho": 1.0, "clip": 1.0, "steps": 5, "interval": None, "relation": "add-remove"}
    with pytest.warns(SideConditionWarning, match=r"p = 401 coefficients with n = 350 records"):
        dpfit.DPLinearRegression(n_public=350, random_state=0, **kw).fit(X_WIDE, Y_WIDE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SideConditionWarning)
        dpfit.DPLinearRegression(n_public=4010, random_state=0, **kw).fit(X_WIDE, Y_WIDE)


def _card_with_a_constant():
    from dpfit.datasets import load_card

    return load_card().assign(c=1.0)  # n = 3010; c is constant in the data, bounds say [0, 2]


ADASSP = {"method": "adassp", "interval": None, "y_bounds": (4, 8), "random_state": 0}


def test_adassp_warns_when_its_released_eigenvalue_cannot_be_told_from_zero():
    # The released smallest eigenvalue of X'X (rescaled units) is N(true, s^2) with s = 4.9
    # at rho = 1: 0 + noise with a constant column (warns unless the noise exceeds 3 s,
    # p = 0.13%, and the seed is fixed), 85.4 + noise without it (17 s above the threshold).
    card = _card_with_a_constant()
    bounds = {"educ": (0, 18), "exper": (0, 30), "c": (0, 2)}
    with pytest.warns(SideConditionWarning, match=r"within 3 noise s\.d\. .* of zero"):
        dpfit.ols("lwage ~ educ + exper + c", card, rho=1.0, bounds=bounds, **ADASSP)
    X, y = card[["educ", "exper", "c"]], card["lwage"]
    with pytest.warns(SideConditionWarning, match="Intercept and c are nearly collinear"):
        dpfit.DPLinearRegression(rho=1.0, bounds=bounds, **ADASSP).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SideConditionWarning)
        del bounds["c"]
        dpfit.ols("lwage ~ educ + exper", card, rho=1.0, bounds=bounds, **ADASSP)
