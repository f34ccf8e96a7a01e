"""The private GLM's user-facing layer: formulas, estimators, results, errors and budgets."""

import pickle

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpfit
from dpfit import Budget, BudgetExceededError, DPLogisticRegression, DPPoissonRegressor
from dpfit.mechanisms import recording

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.InsecureRandomnessWarning")

N = 20000


def _frame(n=N, seed=0):
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    df = pd.DataFrame({"x": gen.uniform(-1, 1, n), "z": gen.uniform(0, 10, n)})
    df["g"] = pd.Categorical(gen.choice(["a", "b"], n), categories=["a", "b"])
    eta = -0.5 + df.x + 0.1 * df.z + 0.3 * (df.g == "b")
    df["y"] = (gen.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
    df["expo"] = gen.uniform(0.5, 2.0, n)
    df["c"] = gen.poisson(df.expo * np.exp(0.2 + 0.5 * df.x + 0.05 * df.z))
    return df


DF = _frame()
BOUNDS = {"x": (-1, 1), "z": (0, 10)}
FORMULA = "y ~ x + z + C(g, levels=['a', 'b'])"
TERMS = ["Intercept", "x", "z", "C(g, levels=['a', 'b'])[T.b]"]


@pytest.fixture(scope="module")
def logit_fit():
    return dpfit.logit(FORMULA, DF, rho=2.0, bounds=BOUNDS, random_state=1)


def _within(result, reference, scale):
    """|dpfit - statsmodels| below ``scale`` standard errors, per coefficient (by name: patsy
    puts categorical terms first)."""
    ref = reference.params[list(result.params.index)].to_numpy()
    return np.abs(result.params.to_numpy() - ref) < scale * result.bse


def test_logit_is_statsmodels_logit_up_to_its_interval(logit_fit):
    """At n = 2e4, rho = 2 the privacy error is a few percent of the sampling error: the
    released coefficients are within 0.5 population s.e. of the MLE, and the s.e. within 15%
    of statsmodels' HC0 ones."""
    ref = smf.logit(FORMULA, DF).fit(disp=0, cov_type="HC0")
    assert list(logit_fit.params.index) == TERMS
    assert _within(logit_fit, ref, 0.5).all()
    ratio = logit_fit.bse.to_numpy() / ref.bse[TERMS].to_numpy()
    assert ((ratio > 0.95) & (ratio < 1.15)).all(), ratio
    text = logit_fit.summary().as_text()
    covers = "population coefficients of the maximum-likelihood fit (sampling + privacy error)"
    assert covers in text
    assert "glm/gradient" in text and "DP logistic regression" in text


def test_odds_ratios_are_the_exponentiated_interval(logit_fit):
    ratios = logit_fit.params_exp()
    ci = logit_fit.conf_int()
    assert ratios.columns.name == "odds ratio"
    np.testing.assert_allclose(ratios["ratio"], np.exp(logit_fit.params))
    np.testing.assert_allclose(ratios["lower"], np.exp(ci["lower"]))
    np.testing.assert_allclose(ratios["upper"], np.exp(ci["upper"]))


def test_average_marginal_effects_match_statsmodels(logit_fit):
    """AMEs within 0.5 of their own s.e. of statsmodels' get_margeff(), with s.e. within 20%
    (statsmodels' delta method treats the records' spread of dmu/deta as fixed; ours adds it
    and the release's noise)."""
    ours = logit_fit.get_margeff()
    ref = smf.logit(FORMULA, DF).fit(disp=0, cov_type="HC0").get_margeff()
    frame = ref.summary_frame().loc[TERMS[1:]]
    assert list(ours.index) == TERMS[1:]
    assert np.all(np.abs(ours["dy/dx"] - frame["dy/dx"].to_numpy()) < 0.5 * ours["std err"])
    ratio = ours["std err"].to_numpy() / frame["Std. Err."].to_numpy()
    assert ((ratio > 0.9) & (ratio < 1.2)).all(), ratio


def test_predictions_are_on_the_mean_scale(logit_fit):
    new = pd.DataFrame({"x": [0.0, 1.0], "z": [5.0, 5.0], "g": ["a", "b"]})
    mean = logit_fit.predict(new)
    linear = logit_fit.predict(new, which="linear")
    np.testing.assert_allclose(mean, 1 / (1 + np.exp(-linear)))
    frame = logit_fit.get_prediction(new).summary_frame()
    assert (frame["mean_ci_lower"] < frame["mean"]).all()
    assert (frame["mean"] < frame["mean_ci_upper"]).all()


def test_poisson_with_exposure_is_statsmodels_poisson():
    res = dpfit.poisson("c ~ x + z", DF, rho=2.0, bounds=BOUNDS, y_bounds=(0, 30),
                        exposure="expo", random_state=2)  # fmt: skip
    ref = smf.poisson("c ~ x + z", DF, exposure=DF.expo).fit(disp=0, cov_type="HC0")
    assert _within(res, ref, 0.5).all()
    ratio = res.bse.to_numpy() / ref.bse.to_numpy()
    assert ((ratio > 0.95) & (ratio < 1.2)).all(), ratio
    assert res.params_exp().columns.name == "incidence-rate ratio"
    assert "[0, 30] (counts above K are clipped to K)" in res.summary().as_text()
    # The AME at each record's exposure: mean count x coefficient.
    margeff = res.get_margeff()
    np.testing.assert_allclose(margeff["dy/dx"], DF.c.mean() * res.params[["x", "z"]], rtol=0.02)


def test_probit_has_no_odds_ratios():
    res = dpfit.probit("y ~ x + z", DF, rho=2.0, bounds=BOUNDS, random_state=3)
    ref = smf.probit("y ~ x + z", DF).fit(disp=0, cov_type="HC0")
    assert _within(res, ref, 0.5).all()
    with pytest.raises(ValueError, match="probit"):
        res.params_exp()


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: dpfit.logit("y ~ x", DF, rho=1.0), TypeError, "bounds are required"),
        (lambda: dpfit.poisson("c ~ x", DF, rho=1.0, bounds=BOUNDS, y_bounds=None), TypeError,
         "y_bounds"),
        (lambda: dpfit.poisson("c ~ x", DF, rho=1.0, bounds=BOUNDS, y_bounds=(1, 5)), ValueError,
         r"\(0, K\)"),
        (lambda: dpfit.glm("y ~ x", DF, rho=1.0, bounds=BOUNDS, y_bounds=(0, 1)), ValueError,
         "Poisson family only"),
        (lambda: dpfit.glm("y ~ x", DF, rho=1.0, bounds=BOUNDS, family="gamma"), ValueError,
         "family"),
        (lambda: dpfit.logit("y ~ x", DF, rho=1.0, bounds=BOUNDS, clip=2.0), TypeError, "clip"),
        (lambda: dpfit.logit("y ~ x", DF, rho=1.0, bounds=BOUNDS, steps=0), ValueError, "steps"),
        (lambda: dpfit.poisson("c ~ x", DF, rho=1.0, bounds=BOUNDS, y_bounds=(0, 5),
                               exposure="nope"), ValueError, "exposure"),
    ],
)  # fmt: skip
def test_bad_public_inputs_raise_before_any_release(call, exc, match):
    with recording() as rec, pytest.raises(exc, match=match):
        call()
    assert len(rec) == 0


def test_a_budget_pays_for_the_fit_and_its_bounds_check():
    budget = Budget(rho=1.0)
    res = dpfit.logit("y ~ x + z", DF, rho=0.6, bounds=BOUNDS, budget=budget, random_state=4)
    assert budget.spent == pytest.approx(0.6) and res.rho == pytest.approx(0.6)
    assert res.ledger.releases[-1].label == "bounds-check/outside-counts"
    with recording() as rec, pytest.raises(BudgetExceededError):
        dpfit.logit("y ~ x + z", DF, rho=0.6, bounds=BOUNDS, budget=budget, random_state=4)
    assert len(rec) == 0 and budget.spent == pytest.approx(0.6)


def test_the_classifier_uses_its_labels():
    X = DF[["x", "z"]].to_numpy()
    labels = np.where(DF.y == 1, "yes", "no")
    model = DPLogisticRegression(rho=1.0, bounds=[(-1, 1), (0, 10)], random_state=5)
    with pytest.warns(dpfit.exceptions.UndeclaredLevelsWarning, match="classes="):
        model.fit(X, labels)
    assert list(model.classes_) == ["no", "yes"]
    assert model.coef_.shape == (1, 2) and model.intercept_.shape == (1,)
    proba = model.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(model.predict(X)) <= {"no", "yes"}
    np.testing.assert_array_equal(model.decision_function(X[:5]) > 0, proba[:, 1] > 0.5)
    assert 0.6 < model.score(X, labels) < 0.9
    assert model.conf_int().shape == (3, 2)
    declared = DPLogisticRegression(rho=1.0, bounds=[(-1, 1), (0, 10)], classes=["no", "yes"],
                                    random_state=5).fit(X, labels)  # fmt: skip
    np.testing.assert_array_equal(declared.coef_, model.coef_)  # no warning, same fit


def test_declared_or_0_1_labels_never_depend_on_which_labels_occur():
    """A record whose label is neither class is a non-event, not an error; 0/1 data need
    no declaration, even when one class is absent."""
    X, y = DF[["x"]].to_numpy()[:500], DF.y.to_numpy()[:500].astype(float)
    odd = y.copy()
    odd[0] = 7.0
    model = DPLogisticRegression(rho=1.0, bounds=(-1, 1), classes=[0, 1], random_state=1)
    assert list(model.fit(X, odd).classes_) == [0, 1]
    with pytest.warns(dpfit.exceptions.CoverageWarning, match="per coefficient"):
        zeros = DPLogisticRegression(rho=1.0, bounds=(-1, 1), random_state=1).fit(X, 0 * y)
    assert list(zeros.classes_) == [0, 1]


def test_the_classifier_refuses_other_than_two_labels_with_one_message():
    """Three or four undeclared text labels, or one: the same message (no label, no count),
    naming what to do instead of a multinomial fit; declared classes other than two too."""
    messages = []
    for labels in ("abc", "abcd", "a"):
        y = np.array(list(labels))[np.arange(N) % len(labels)]
        with recording() as rec, pytest.raises(ValueError, match="binary classifier") as err:
            DPLogisticRegression(rho=1.0, bounds=(-1, 1)).fit(DF[["x"]], y)
        assert len(rec) == 0
        messages.append(str(err.value))
    assert len(set(messages)) == 1 and "classes=[non-event, event]" in messages[0]
    with pytest.raises(ValueError, match="multinomial logistic regression is not implemented"):
        DPLogisticRegression(rho=1.0, bounds=(-1, 1), classes=["a", "b", "c"]).fit(DF[["x"]], y)


def test_the_poisson_regressor_takes_exposure_and_pickles_without_diagnostics():
    X = DF[["x", "z"]]
    model = DPPoissonRegressor(rho=1.0, bounds={"x": (-1, 1), "z": (0, 10)}, y_bounds=(0, 30),
                               random_state=6).fit(X, DF.c, exposure=DF.expo)  # fmt: skip
    assert model.coef_.shape == (2,) and isinstance(model.intercept_, float)
    np.testing.assert_allclose(model.predict(X[:3]), np.exp(X[:3].to_numpy() @ model.coef_
                                                            + model.intercept_))  # fmt: skip
    restored = pickle.loads(pickle.dumps(model))
    assert dict(restored.result_.diagnostics) == {}
    assert restored.result_.summary().as_text() == model.result_.summary().as_text()


def test_few_events_warn_through_the_formula():
    df = _frame(3000, seed=7)
    df["rare"] = (np.random.default_rng(8).uniform(size=3000) < 0.005).astype(int)
    with pytest.warns(dpfit.exceptions.CoverageWarning, match="per coefficient"):
        res = dpfit.logit("rare ~ x + z", df, rho=1.0, bounds=BOUNDS, random_state=9)
    assert any("per coefficient" in note for note in res.notes)
