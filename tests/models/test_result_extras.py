"""Predictions for public x, t tests, degrees of freedom and the multi-model table: all
post-processing of the release, checked against a second route to the same number."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpfit
from dpfit.mechanisms import recording

RNG = np.random.default_rng(21)
N = 3000
FRAME = pd.DataFrame(
    {
        "x": RNG.uniform(0, 10, N),
        "g": RNG.choice(["a", "b", "c"], N),
    }
)
FRAME["y"] = 1.0 + 0.4 * FRAME["x"] + (FRAME["g"] == "b") + RNG.normal(0, 1, N)
FORMULA = "y ~ x + I(x ** 2) + C(g, levels=['a', 'b', 'c'])"
BOUNDS = {"x": (0, 10), "I(x ** 2)": (0, 100)}
NEW = pd.DataFrame({"x": [0.0, 2.5, 9.0], "g": ["a", "c", "b"]})


@pytest.fixture(scope="module")
def result():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)  # seeded: said once, here
        return dpfit.ols(FORMULA, FRAME, rho=1.0, bounds=BOUNDS, y_bounds=(-5, 20), random_state=0)


def _design(frame: pd.DataFrame) -> np.ndarray:
    """The design of NEW written out by hand (the second route)."""
    x = frame["x"].to_numpy()
    return np.column_stack(
        [np.ones(len(x)), x, x**2, (frame["g"] == "b").to_numpy(), (frame["g"] == "c")]
    ).astype(float)


def test_predict_builds_the_formula_terms_of_new_data(result):
    np.testing.assert_allclose(result.predict(NEW), _design(NEW) @ result.estimate, rtol=1e-12)


def test_predict_takes_arrays_with_or_without_the_intercept_column(result):
    design = _design(NEW)
    np.testing.assert_allclose(result.predict(design), result.predict(design[:, 1:]))
    named = pd.DataFrame(design[:, 1:], columns=list(result.names)[1:])
    np.testing.assert_allclose(result.predict(named), result.predict(NEW), rtol=1e-12)


def test_prediction_standard_error_is_the_quadratic_form_of_the_released_covariance(result):
    design = _design(NEW)
    frame = result.get_prediction(NEW).summary_frame(alpha=0.1)
    cov = result.covariance("population")
    se = np.sqrt(np.einsum("ij,jk,ik->i", design, cov.cov, design))
    np.testing.assert_allclose(frame["mean_se"], se, rtol=1e-10)
    dof = np.where(design != 0, cov.dof, np.inf).min(axis=1)
    half = stats.t.ppf(0.95, dof) * se
    np.testing.assert_allclose(frame["mean_ci_upper"] - frame["mean"], half, rtol=1e-10)


def test_a_prediction_at_a_unit_vector_is_that_coefficient_and_its_interval(result):
    p = len(result.names)
    for j in range(p):
        unit = np.eye(p)[j : j + 1]
        frame = result.get_prediction(unit).summary_frame()
        interval = result.conf_int().iloc[j]
        assert frame["mean"].iloc[0] == pytest.approx(result.estimate[j], rel=1e-12)
        assert frame["mean_ci_lower"].iloc[0] == pytest.approx(interval["lower"], rel=1e-9)
        assert frame["mean_ci_upper"].iloc[0] == pytest.approx(interval["upper"], rel=1e-9)


def test_t_test_of_a_combination_equals_the_prediction_and_the_wald_test(result):
    design = _design(NEW.iloc[[1]])
    t = result.t_test(design)
    pred = result.get_prediction(NEW.iloc[[1]])
    assert t.effect[0] == pytest.approx(pred.predicted_mean[0], rel=1e-12)
    assert t.sd[0] == pytest.approx(pred.se_mean[0], rel=1e-12)
    wald = result.wald_test("x = 0.4")
    single = result.t_test("x = 0.4")
    assert single.tvalue[0] ** 2 == pytest.approx(wald.statistic, rel=1e-10)
    assert "x = 0.4" in str(single)


def test_predictions_cost_nothing_and_survive_a_pickle(result):
    with recording() as rec:
        first = result.get_prediction(NEW).summary_frame()
        again = pickle.loads(pickle.dumps(result)).get_prediction(NEW).summary_frame()
    assert len(rec) == 0
    pd.testing.assert_frame_equal(first, again)


def test_degrees_of_freedom_are_public_counts(result):
    assert result.df_model == len(result.names) - 1
    assert result.df_resid == N - len(result.names)


@pytest.mark.parametrize("name", ["fittedvalues", "resid", "rsquared", "llf"])
def test_in_sample_quantities_are_refused_with_the_reason(result, name):
    with pytest.raises(AttributeError, match=r"private rows.*predict\(exog\)"):
        getattr(result, name)
    assert not hasattr(result, name)


@pytest.mark.parametrize(
    "exog, match",
    [
        (np.ones((2, 2)), "must have 5 columns"),
        (np.array([[1.0, np.nan, 0, 0, 0]]), r"rows \[0\] are not finite"),
        (pd.DataFrame({"x": [1.0], "g": ["zzz"]}), r"rows \[0\].*declared levels"),
    ],
)
def test_bad_exog_is_refused_naming_the_public_rows(result, exog, match):
    with pytest.raises(ValueError, match=match):
        result.predict(exog)


def test_iv_results_predict_from_their_regressors(iv_frame):
    frame = iv_frame(3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)
        res = dpfit.iv(
            "y ~ w + [x ~ z]",
            frame,
            rho=2.0,
            bounds={"w": (-4, 4), "x": (-5, 10), "z": (0, 1)},
            y_bounds=(-8, 14),
            random_state=1,
        )
    new = pd.DataFrame({"w": [0.0, 1.0], "x": [2.0, 3.0]})
    expected = np.column_stack([np.ones(2), new["w"], new["x"]]) @ res.estimate
    np.testing.assert_allclose(res.predict(new), expected, rtol=1e-12)


def test_summary_col_puts_fits_side_by_side(result):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)
        short = dpfit.ols("y ~ x", FRAME, rho=0.5, bounds={"x": (0, 10)}, y_bounds=(-5, 20))
    table = dpfit.summary_col([result, short], model_names=["full", "short"])
    text = table.as_text()
    cells = table.table
    assert list(cells.columns) == ["full", "short"]
    assert cells.loc["x", "short"] == f"{short.params['x']:.4f}"
    se_row = list(cells.index).index("x") + 1
    assert cells.iloc[se_row]["full"] == f"({result.bse['x']:.4f})"
    assert cells.loc["I(x ** 2)", "short"] == ""  # not in the short model
    assert "together they are 1.5-zCDP" in " ".join(text.split())
    assert "\\begin{tabular}" in table.as_latex() and "<table" in table.as_html()


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        ({"model_names": ["one"]}, ValueError, "2 distinct names"),
        ({"below": "pvalue"}, ValueError, "below"),
        ({"regressor_order": ["nope"]}, ValueError, "nope"),
        ({"alpha": 0.95}, ValueError, "miss rate"),
    ],
)
def test_summary_col_refuses_bad_options(result, kw, exc, match):
    with pytest.raises(exc, match=match):
        dpfit.summary_col([result, result], **kw)
