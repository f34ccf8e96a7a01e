"""A second new user's mistakes through the Python API: one line naming the culprit, or a
warning that names it, and never a third-party exception or a silent wrong answer.

Every refusal is made before anything is charged or drawn (the mechanism recorder sees no
release) and quotes no value of the data.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.exceptions import CoverageWarning, SideConditionWarning
from dpfit.mechanisms import recording

RNG = np.random.default_rng(312)
N = 800
FRAME = pd.DataFrame({"x": RNG.uniform(0, 10, N), "z": RNG.integers(0, 2, N).astype(float)})
FRAME["y"] = 1.0 + 0.5 * FRAME["x"] - FRAME["z"] + RNG.normal(0, 1, N)
FRAME["w"] = RNG.uniform(0, 1, N)
# an event coded 1 = no, 2 = yes, as many surveys code it
FRAME["yes12"] = 1.0 + (RNG.uniform(size=N) < 1 / (1 + np.exp(2 - 0.4 * FRAME["x"])))
KW = {"rho": 0.5, "y_bounds": (-5, 15), "random_state": 0, "steps": 40}
KW |= {"interval": None, "precondition": False}  # plain DP-GD: quick, a point estimate


def _refused(call, exc=ValueError) -> str:
    with recording() as rec, pytest.raises(exc) as info:
        call()
    message = str(info.value)
    assert len(rec) == 0, "a release was made before the error"
    assert "\n" not in message and f"{FRAME['x'].iloc[0]:.4f}"[:5] not in message
    return message


@pytest.mark.parametrize(
    "pair, fragment",
    [
        ((0, 10, 20), "bounds of 'x' must be one (low, high) pair of numbers, got (0, 10, 20)"),
        ("0,10", "got '0,10': write a tuple such as (0, 10), not a string"),
        ((10, 0), "bounds of 'x': low must be < its high, got (10, 0)"),
        ((0, math.inf), "bounds of 'x' must be finite numbers"),
    ],
    ids=["three numbers", "a string", "high first", "infinite"],
)
def test_a_bad_pair_in_a_bounds_mapping_names_its_column(pair, fragment):
    bounds = {"x": pair, "z": (0, 1)}
    message = _refused(lambda: dpfit.ols("y ~ x + z", FRAME, bounds=bounds, **KW))
    assert fragment in message, message


def test_an_interval_level_in_percent_says_which_alpha_it_means():
    res = dpfit.ols("y ~ x + z", FRAME, bounds={"x": (0, 10), "z": (0, 1)}, **KW)
    message = _refused(lambda: res.conf_int(alpha=95))
    assert "not the interval's level in percent; for 95% intervals give alpha = 0.05" in message


def test_an_infinite_rho_is_called_not_finite():
    message = _refused(lambda: dpfit.Budget(rho=math.inf))
    assert message == "rho must be a finite number, got inf"


def test_x_and_y_swapped_in_fit_is_named():
    model = dpfit.DPLinearRegression(rho=0.5, bounds=[(0, 10), (0, 1)], y_bounds=(-5, 15))
    message = _refused(lambda: model.fit(FRAME["y"].to_numpy(), FRAME[["x", "z"]].to_numpy()))
    assert "did you swap them? fit(X, y) takes the design matrix first" in message


def test_two_columns_of_one_name_are_refused_by_name():
    frame = FRAME[["y", "x", "z", "w"]].set_axis(["y", "x", "z", "x"], axis=1)
    message = _refused(
        lambda: dpfit.ols("y ~ x + z", frame, bounds={"x": (0, 10), "z": (0, 1)}, **KW)
    )
    assert "data has more than one column named ['x']" in message


def test_predict_takes_a_dict_as_statsmodels_does():
    res = dpfit.ols("y ~ x + z", FRAME, bounds={"x": (0, 10), "z": (0, 1)}, **KW)
    frame = pd.DataFrame({"x": [2.0, 8.0], "z": [0.0, 1.0]})
    np.testing.assert_array_equal(res.predict({"x": [2.0, 8.0], "z": [0.0, 1.0]}),
                                  res.predict(frame))  # fmt: skip
    np.testing.assert_array_equal(res.predict({"x": 2.0, "z": 0.0}), res.predict(frame)[:1])


_MISCODED = "Nearly every record is an event: a response not coded 0/1"


def test_a_logit_response_coded_1_2_is_named_by_the_warning():
    with pytest.warns(CoverageWarning, match=_MISCODED):
        dpfit.logit("yes12 ~ x", FRAME, rho=0.5, bounds={"x": (0, 10)}, random_state=0)


def test_the_classifier_reads_labels_1_2_as_all_events_and_says_so():
    """Numeric labels are clipped into [0, 1] as dpfit.logit's response is: a 1/2 coding is
    all events (and warned about), never the silent 'label 1 is the event' inversion."""
    model = dpfit.DPLogisticRegression(rho=0.5, bounds=[(0, 10)], random_state=0)
    with pytest.warns(CoverageWarning, match=_MISCODED):
        model.fit(FRAME[["x"]].to_numpy(), FRAME["yes12"].to_numpy())


def test_a_0_1_logit_does_not_draw_the_miscoding_hint():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpfit.logit("z ~ x", FRAME, rho=0.5, bounds={"x": (0, 10)}, random_state=0)
    assert not any(_MISCODED in str(w.message) for w in caught)


def test_an_iv_fit_on_too_few_records_warns_as_ols_does():
    small = FRAME.iloc[:20]
    bounds = {"x": (0, 10), "z": (0, 1), "w": (0, 1)}
    with warnings.catch_warnings(record=True) as caught:  # the weak first stage warns too
        warnings.simplefilter("always")
        dpfit.iv("y ~ z + [x ~ w]", small, rho=1.0, bounds=bounds, y_bounds=(-5, 15),
                 random_state=0)  # fmt: skip
    few = [w for w in caught if issubclass(w.category, SideConditionWarning)]
    assert any("p = 3 coefficients with n = 20 records" in str(w.message) for w in few)


@pytest.mark.parametrize("cell", ["lots", "12,5"])
@pytest.mark.parametrize("where", ["formula", "estimator"])
def test_a_text_cell_in_exposure_is_refused_without_quoting_it(cell, where):
    """numpy's own conversion error quotes the cell (a record's value); the refusal is the
    same whatever the cell holds, and nothing is charged."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.uniform(0, 1, 40), "visits": rng.integers(0, 5, 40)})
    frame["days"] = rng.uniform(1, 10, 40).astype(object)
    frame.loc[5, "days"] = cell
    budget = dpfit.Budget(rho=1.0)
    with pytest.raises(ValueError) as info:
        if where == "formula":
            dpfit.poisson("visits ~ x", frame, rho=0.5, bounds={"x": (0, 1)}, y_bounds=(0, 5),
                          exposure="days", budget=budget, random_state=0)  # fmt: skip
        else:
            dpfit.DPPoissonRegressor(rho=0.5, bounds=(0, 1), y_bounds=(0, 5), random_state=0).fit(
                frame[["x"]], frame["visits"], exposure=frame["days"], budget=budget
            )
    assert cell not in str(info.value) and "exposure" in str(info.value)
    assert budget.spent == 0
