"""DPLinearRegression: fitting, intervals, budgets, clone/pickle, validation before any release."""

import copy
import dataclasses
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from dpfit import Budget, BudgetExceededError, DPLinearRegression, LargeBudgetWarning
from dpfit.baselines import adassp, nonprivate_ols
from dpfit.exceptions import InsecureRandomnessWarning, RepeatedFitWarning
from dpfit.mechanisms import recording

N, P = 2000, 3
THETA = np.array([2.0, -1.0, 0.5])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((N, P))
    y = 1.0 + X @ THETA + rng.standard_normal(N)
    return X, y


def _model(**kw):
    params = {"rho": 1.0, "clip": 20.0, "steps": 600, "step_size": 0.2, "random_state": 0}
    return DPLinearRegression(**{**params, **kw})


def test_fit_recovers_ols_and_charges_rho(data):
    X, y = data
    model = _model().fit(X, y)
    target = nonprivate_ols(np.column_stack([np.ones(N), X]), y).params
    # Batched-means centre over 580 iterates: per-coordinate s.d. ~ clip sqrt(2/rho)/n ~ 0.014
    # (Brown et al. 2024, Lemma 2.1: sensitivity 2 clip / n); 0.08 is > 5 s.d.
    np.testing.assert_allclose(model.intercept_, target[0], atol=0.08)
    np.testing.assert_allclose(model.coef_, target[1:], atol=0.08)
    assert model.privacy_.rho == pytest.approx(1.0, rel=1e-12)
    assert model.n_features_in_ == P
    assert sum(e.count for e in model.privacy_.releases) == 600  # releases (charged at once)


def test_conf_int_frame_names_and_order(data):
    X, y = data
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    model = _model().fit(df, pd.Series(y, name="outcome"))
    ci = model.conf_int(0.1, target="sample")  # no bounds: no population interval
    assert list(ci.columns) == ["lower", "upper"]
    assert list(ci.index) == ["Intercept", "a", "b", "c"]
    assert (ci["lower"] < model.result_.params).all() and (model.result_.params < ci["upper"]).all()
    wider = model.conf_int(0.01, target="sample")
    assert ((wider["upper"] - wider["lower"]) > (ci["upper"] - ci["lower"])).all()
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    assert model.result_.response == "outcome"


def test_predict_is_linear_in_the_release(data):
    X, y = data
    model = _model().fit(X, y)
    np.testing.assert_array_equal(model.predict(X[:5]), X[:5] @ model.coef_ + model.intercept_)


def test_no_intercept(data):
    X, y = data
    model = _model(fit_intercept=False).fit(X, y - 1.0)
    assert model.intercept_ == 0.0
    assert list(model.result_.names) == ["x0", "x1", "x2"]


def test_seeded_fits_are_reproducible_and_unseeded_differ(data):
    X, y = data
    a, b = _model().fit(X, y), _model().fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c, d = _model(random_state=None).fit(X, y), _model(random_state=None).fit(X, y)
    assert not np.array_equal(c.coef_, d.coef_)
    assert c.result_.seeded is False and a.result_.seeded is True


def test_budget_at_fit_time_is_spent_and_refused_when_short(data):
    X, y = data
    budget = Budget(rho=1.5)
    model = _model(rho=1.0).fit(X, y, budget=budget)
    assert budget.spent == pytest.approx(1.0)
    assert model.privacy_.budget is None  # the model keeps a budget-free snapshot
    with recording() as rec, pytest.raises(BudgetExceededError):
        _model(rho=1.0).fit(X, y, budget=budget)
    assert len(rec) == 0  # nothing was charged or drawn
    assert budget.spent == pytest.approx(1.0)


def test_clone_and_copies_never_hold_a_budget(data):
    X, y = data
    budget = Budget(rho=2.0)
    model = _model().fit(X, y, budget=budget)
    assert "budget" not in model.get_params()
    twin = clone(model)  # what GridSearchCV does: parameters only, no budget to fork
    assert not hasattr(twin, "result_")
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.coef_, model.coef_)
    assert restored.summary().as_text() == model.summary().as_text()
    copy.deepcopy(model)  # would raise if a Budget were reachable from the estimator
    with pytest.raises(TypeError, match="budget must be"):
        _model().fit(X, y, budget=1.0)


def test_public_bounds_rescaling_keeps_intervals_valid():
    """Bounds rescale before fitting; intervals, mapped back, cover the OLS fit (no clipping)."""
    rng = np.random.default_rng(3)
    n = 3000
    X = np.column_stack([rng.uniform(10, 20, n), rng.integers(0, 2, n)])
    y = 3.0 + 0.2 * X[:, 0] - 0.5 * X[:, 1] + rng.normal(0, 0.5, n)
    target = nonprivate_ols(np.column_stack([np.ones(n), X]), y).params
    kw = {
        "rho": 1.0,
        "steps": 1500,
        "bounds": [(0, 30), (0, 1)],
        "y_bounds": (-5, 15),
        "precondition": False,
    }
    covered = np.zeros(3)
    runs = 20
    for seed in range(runs):
        model = DPLinearRegression(random_state=seed, **kw).fit(X, y)
        assert model.result_.diagnostics["fraction_clipped"] == 0.0  # default clip clips nothing
        ci = model.conf_int(target="sample").to_numpy()
        covered += (ci[:, 0] <= target) & (target <= ci[:, 1])
    # 95% intervals: P(at most 15 of 20 cover) = 0.003 per coordinate, so >= 16 of 20 fails
    # only when the mapping back or the calibration is wrong.
    assert (covered >= 16).all(), covered


def test_bounds_mapping_by_name_and_errors(data):
    X, y = data
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    bounds = {"a": (-5, 5), "b": (-5, 5), "c": (-5, 5)}
    # bounds of 5 s.d. at n = 2000: X'X/n's eigenvalues (~0.04) are above the released Huber
    # Hessian's noise floor (~0.029), so no CoverageWarning (an error in tests)
    model = _model(bounds=bounds, y_bounds=(-20, 20), clip=None, step_size=None).fit(df, y)
    assert "bounds" in model.result_.config
    with pytest.raises(ValueError, match="missing \\['c'\\]"):
        _model(bounds={"a": (0, 1), "b": (0, 1)}).fit(df, y)
    with pytest.raises(ValueError, match="column names"):
        _model(bounds=bounds).fit(X, y)


def test_adassp_method_matches_the_baseline_on_the_rescaled_data(data):
    X, y = data
    model = DPLinearRegression(
        rho=1.0,
        method="adassp",
        interval=None,
        bounds=[(-5, 5)] * P,
        y_bounds=(-15, 15),
        random_state=0,
    ).fit(X, y)
    assert model.privacy_.rho == pytest.approx(1.0)
    assert {e.label for e in model.privacy_.releases} == {
        "adassp/lambda_min",
        "adassp/xtx",
        "adassp/xty",
    }
    with pytest.raises(ValueError, match="point estimate only"):
        model.conf_int(target="sample")
    assert "[0.025" not in model.summary().as_text()
    # Two routes: the baseline on [1, x / 5] and y / 15 (bounds centred at 0, half-ranges 5
    # and 15; no entry of this X exceeds 5), mapped back by hand: coef = 15 b / 5.
    assert np.abs(X).max() < 5
    design = np.column_stack([np.ones(N), X / 5.0])
    direct = adassp(design, np.clip(y, -15, 15) / 15.0, rho=1.0, x_bound=2.0, y_bound=1.0, rng=0)
    np.testing.assert_allclose(model.intercept_, 15.0 * direct.estimate[0], rtol=1e-12)
    np.testing.assert_allclose(model.coef_, 3.0 * direct.estimate[1:], rtol=1e-12)


def test_add_remove_uses_the_public_count(data):
    X, y = data
    model = _model(relation="add-remove", n_public=2500).fit(X, y)
    entry = model.privacy_.releases[0]
    assert str(entry.relation) == "add-remove"
    assert entry.sensitivity == pytest.approx(20.0 / 2500)  # clip / n_public
    assert model.result_.n == 2500 and "2500 (public)" in model.summary().as_text()


def test_large_rho_warns_before_fitting(data):
    X, y = data
    with pytest.warns(LargeBudgetWarning, match="weak privacy guarantee"):
        _model(rho=10.0).fit(X, y)


def test_early_validation_can_leave_the_large_rho_warning_to_fit():
    """``_config(warn_large_rho=False)`` (for callers that validate before fitting, such as
    the formula API and the CLI) checks rho without warning; the default warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = _model(rho=10.0)._config(warn_large_rho=False)
    assert config.rho == 10.0
    with pytest.warns(LargeBudgetWarning, match="rho=10 is a weak"):
        _model(rho=10.0)._config()
    with pytest.raises(ValueError, match="rho"):  # still checked
        _model(rho=-1.0)._config(warn_large_rho=False)


def test_summary_delta_warning(data):
    X, y = data
    model = _model().fit(X, y)
    with pytest.warns(LargeBudgetWarning, match="exceeds 1/n"):
        model.summary(delta=0.01)


# -- validation: every bad input refused before any charge or draw ---------------------------
BAD_PARAMS = [
    ({"rho": None}, TypeError, "rho is required"),
    ({"rho": float("nan")}, ValueError, "rho"),
    ({"rho": -1.0}, ValueError, "rho"),
    ({"rho": True}, TypeError, "rho"),
    ({"clip": None}, TypeError, "clip is required"),
    ({"clip": 0.0}, ValueError, "clip"),
    ({"clip": float("inf")}, ValueError, "clip"),
    ({"steps": 2.5}, TypeError, "steps"),
    ({"steps": 0}, ValueError, "steps"),
    ({"steps": True}, TypeError, "steps"),
    ({"step_size": -0.1}, ValueError, "step_size"),
    ({"method": "sgd"}, ValueError, "method must be one of"),
    ({"interval": "bootstrap"}, ValueError, "interval must be one of"),
    ({"m": 1}, ValueError, "m must be"),
    ({"interval": "independent-runs", "steps": None, "total_steps": 605}, ValueError,
     "multiple of m"),
    ({"steps": 25}, ValueError, "too few"),
    ({"interval_variant": "formal", "burn_in": 5}, ValueError, "burn_in"),
    ({"relation": "neighbours"}, ValueError, "relation must be one of"),
    ({"relation": "add-remove"}, ValueError, "n_public is required"),
    ({"fit_intercept": 1}, TypeError, "fit_intercept"),
    ({"random_state": np.random.RandomState(0)}, TypeError, "random_state must be"),
    ({"secure": True, "random_state": 1}, ValueError, "secure"),
    ({"bounds": [(0, 1)] * 2}, ValueError, "bounds must have shape"),
    ({"bounds": [(1, 0)] * 3}, ValueError, "low must be < its high"),
    ({"bounds": [(0, np.nan)] * 3}, ValueError, "bounds must be finite"),
    ({"y_bounds": (0, 1, 2)}, ValueError, "y_bounds"),
    ({"bounds": "wide"}, TypeError, "bounds must be"),
    ({"method": "adassp", "interval": None}, ValueError, "needs public bounds"),
]


@pytest.mark.parametrize(("params", "exc", "match"), BAD_PARAMS)
def test_bad_parameters_release_nothing(data, params, exc, match):
    X, y = data
    with recording() as rec, pytest.raises(exc, match=match):
        _model(**params).fit(X, y)
    assert len(rec) == 0


def _bad_data(X, y):
    Xn = X.copy()
    Xn[3, 1] = np.nan
    yi = y.copy()
    yi[5] = np.inf
    return [
        (X[:, 0], y, ValueError, "2-dimensional"),
        (X[None], y, ValueError, "2-dimensional"),
        (X, y[:, None], ValueError, "1-dimensional"),
        (X, y[:-1], ValueError, "same number of rows"),
        (X[:0], y[:0], ValueError, "no rows"),
        (Xn, y, ValueError, "X contains NaN"),
        (X, yi, ValueError, "y contains NaN"),
        (X.astype(complex), y, TypeError, "numeric"),
        (X.astype(str), y, TypeError, "numeric"),
        (X, None, ValueError, "requires y"),
    ]


@pytest.mark.parametrize("case", range(10))
def test_bad_data_release_nothing(data, case):
    X, y = data
    Xb, yb, exc, match = _bad_data(X, y)[case]
    with recording() as rec, pytest.raises(exc, match=match):
        _model().fit(Xb, yb)
    assert len(rec) == 0


def test_sparse_is_refused(data):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    X, y = data
    with recording() as rec, pytest.raises(TypeError, match="sparse"):
        _model().fit(scipy_sparse.csr_matrix(X), y)
    assert len(rec) == 0


def test_low_precision_and_int_inputs_are_upcast(data):
    X, y = data
    a = _model().fit(X.astype(np.float32), y)
    b = _model().fit(X.astype(np.float32).astype(np.float64), y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.coef_.dtype == np.float64
    _model().fit(np.rint(X).astype(np.int64), y)


def test_error_messages_never_echo_data(data):
    X, y = data
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError) as info:
        _model().fit(Xn, y)
    assert str(X[1, 1])[:6] not in str(info.value) and "row" not in str(info.value)


@pytest.mark.parametrize("record", [[1.7e308, 1.0, 1.0], [-1.7e308, 1.7e308, 1e-308]])
def test_extreme_finite_record_neither_fails_nor_warns(data, record):
    # Without bounds, x_i . theta overflows for this finite record: its gradient is zeroed
    # silently (a numpy RuntimeWarning would depend on the record and reveal it).
    X, y = data[0].copy(), data[1]
    X[0] = record
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose
        warnings.simplefilter("ignore", RepeatedFitWarning)  # counted per shape, over the suite
        model = _model(steps=40, m=10, burn_in=0).fit(X, y)
    assert len(rec) == 40 and model.privacy_.rho == pytest.approx(1.0, rel=1e-12)
    assert (
        np.isfinite(model.coef_).all()
        and np.isfinite(model.conf_int(target="sample").to_numpy()).all()
    )


def _public_fields(model) -> dict:
    """Everything a fitted model holds except its noised values (coefficients, intervals)."""
    res = model.result_
    noised = {"estimate", "interval_estimates", "ledger"}
    out = {f.name: getattr(res, f.name) for f in dataclasses.fields(res) if f.name not in noised}
    out["ledger"], out["privacy_"] = res.ledger.entries, model.privacy_.entries
    kept = {k: v for k, v in vars(model).items() if k not in {"coef_", "intercept_", "result_"}}
    return {**out, **{k: v for k, v in kept.items() if k != "privacy_"}}


def test_pickle_of_a_fit_holds_no_non_private_diagnostic(data):
    # The fraction of clipped gradients is computed from the raw data: it must not travel in
    # a pickle. On neighbours whose clipped fraction differs, the pickles agree on every
    # non-noised field.
    X, y = data
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [50.0, -50.0, 50.0], -1e3  # clipped at every step
    fits = [_model(steps=40, m=10, burn_in=0).fit(*d) for d in ((X, y), (X2, y2))]
    assert fits[0].result_.diagnostics != fits[1].result_.diagnostics  # in memory only
    a, b = (_public_fields(pickle.loads(pickle.dumps(m))) for m in fits)
    assert a == b and a["diagnostics"] == {}
    assert _public_fields(copy.deepcopy(fits[0]))["diagnostics"] == {}
