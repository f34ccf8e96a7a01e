"""Formula API: term names, intercept handling, missing values, and the IV grammar."""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.datasets import load_card
from dpfit.exceptions import CoverageWarning
from dpfit.mechanisms import recording
from dpfit.models import design_matrices, iv_matrices, parse_iv_formula


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.uniform(0, 10, 1500), "g": rng.choice(["a", "b"], 1500)})
    df["y"] = 1.0 + 0.5 * df["x"] - 2.0 * (df["g"] == "b") + rng.normal(0, 1, 1500)
    return df


KW = {"rho": 1.0, "clip": 20.0, "steps": 400, "step_size": 0.01, "random_state": 0}


G = "C(g, levels=['a', 'b'])"


def test_ols_names_follow_the_formula(frame):
    res = dpfit.ols(f"y ~ x + I(x ** 2) + {G}", frame, **KW)
    assert list(res.names) == ["Intercept", "x", "I(x ** 2)", f"{G}[T.b]"]
    assert list(res.conf_int(target="sample").index) == list(res.names)
    assert res.response == "y" and res.n == 1500
    assert f"{G}[T.b]" in res.summary().as_text()


def test_ols_equals_the_estimator_on_the_same_design(frame):
    res = dpfit.ols("y ~ x", frame, **KW)
    model = dpfit.DPLinearRegression(**KW).fit(frame[["x"]], frame["y"])
    np.testing.assert_array_equal(res.estimate, model.result_.estimate)


def test_intercept_removed_by_formula(frame):
    res = dpfit.ols("y ~ x - 1", frame, **KW)
    assert list(res.names) == ["x"]
    with pytest.raises(TypeError, match="intercept is set by the formula"):
        dpfit.ols("y ~ x", frame, fit_intercept=False, **KW)


def test_bounds_by_term_name(frame):
    # x and x^2 are nearly collinear: whether the population interval warns is the business
    # of tests/inference; here only the bounds keyed by term name matter.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageWarning)
        res = _bounds_by_term_name(frame)
    assert "I(x ** 2) [0, 100]" in res.config["bounds"]


def _bounds_by_term_name(frame):
    return dpfit.ols(
        "y ~ x + I(x ** 2)",
        frame,
        rho=1.0,
        bounds={"x": (0, 10), "I(x ** 2)": (0, 100)},
        y_bounds=(-10, 20),
        steps=300,
        random_state=0,
    )


def test_missing_values_are_an_error_not_dropped(frame):
    df = frame.copy()
    df.loc[3, "x"] = np.nan
    with recording() as rec, pytest.raises(ValueError, match="does not drop rows"):
        dpfit.ols("y ~ x", df, **KW)
    assert len(rec) == 0


@pytest.mark.parametrize(
    ("formula", "data", "exc", "match"),
    [
        ("y + x", None, ValueError, "form 'y ~ x1 \\+ x2'"),
        (" ~ x", None, ValueError, "needs a response"),
        ("y + x ~ x", None, ValueError, "exactly one response"),
        ("y ~ x", "not a frame", TypeError, "DataFrame"),
    ],
)
def test_bad_formulas(frame, formula, data, exc, match):
    with pytest.raises(exc, match=match):
        dpfit.ols(formula, frame if data is None else data, **KW)


def test_design_matrices(frame):
    y, X, has_intercept = design_matrices(f"y ~ x + {G}", frame)
    assert y.name == "y" and list(X.columns) == ["x", f"{G}[T.b]"] and has_intercept


@pytest.mark.parametrize(
    ("formula", "parts"),
    [
        ("y ~ 1 + w + [x ~ z1 + z2]", ("y", "1 + w", "0 + x", "0 + z1 + z2")),
        ("y ~ [x ~ z]", ("y", "1", "0 + x", "0 + z")),
        ("y ~ [x ~ z] + w", ("y", "w", "0 + x", "0 + z")),
        ("y ~ w + [x1 + x2 ~ z1 + z2 + z3] + v", ("y", "w + v", "0 + x1 + x2", "0 + z1 + z2 + z3")),
        ("y ~ 0 + w + [x ~ z]", ("y", "0 + w", "0 + x", "0 + z")),
    ],
)
def test_parse_iv_formula(formula, parts):
    p = parse_iv_formula(formula)
    assert (p.dependent, p.exog, p.endog, p.instruments) == parts


@pytest.mark.parametrize(
    "formula", ["y ~ x + z", "y ~ [x ~ z] + [w ~ v]", "y ~ [x + z]", "y ~ [ ~ z]"]
)
def test_parse_iv_formula_errors(formula):
    with pytest.raises(ValueError, match="IV formula"):
        parse_iv_formula(formula)


def test_iv_matrices_on_card():
    card = load_card()
    m = iv_matrices("lwage ~ exper + [educ ~ nearc4 + nearc2]", card)
    assert list(m.exog.columns) == ["Intercept", "exper"]
    assert list(m.endog.columns) == ["educ"]
    assert list(m.instruments.columns) == ["nearc4", "nearc2"]
    assert m.y.name == "lwage" and len(m.y) == 3010
