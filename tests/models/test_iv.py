"""DPIVRegression and dpfit.iv: accounting, formula, validation before any noise, replay."""

from __future__ import annotations

import dataclasses
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import dpfit
from dpfit import Budget, BudgetExceededError, DPIVRegression
from dpfit.baselines import two_sls
from dpfit.exceptions import InsecureRandomnessWarning, LargeBudgetWarning, SideConditionWarning
from dpfit.mechanisms import recording, replaying

#: The short DP-2S-GD runs here (the default 20 steps) are too short for the convergence check;
#: that warning is tested in tests/models/test_iv_warnings.py.
pytestmark = pytest.mark.filterwarnings(
    "ignore:The convergence of DP-2S-GD cannot be checked:dpfit.exceptions.CoverageWarning"
)

N = 3000
BOUNDS = {"x": (-8, 11), "w": (-4, 4), "z": (0, 1)}
Y_BOUNDS = (-10, 14)


@pytest.fixture(scope="module")
def frame(iv_frame):
    """A strong binary instrument z, a confounder u and an exogenous control w."""
    return iv_frame(N)


def _fit(frame, **kw):
    params = {"rho": 2.0, "bounds": BOUNDS, "y_bounds": Y_BOUNDS, "random_state": 0, **kw}
    model = DPIVRegression(**params)
    return model.fit(frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]])


def _two_sls(frame):
    one = np.ones((len(frame), 1))
    return two_sls(
        np.column_stack([one, frame[["w", "x"]]]),
        frame["y"].to_numpy(),
        np.column_stack([one, frame[["w", "z"]]]),
    ).params


def test_fit_is_close_to_2sls_and_spends_exactly_rho(frame):
    model = _fit(frame, method="2s-gd")
    target = _two_sls(frame)
    # rho = 2 on n = 3000 standardised rows: the privacy noise of the released coefficients
    # is ~0.01 (run-to-run sd over seeds); 0.06 is > 5 sd while the 2SLS-vs-OLS gap is 0.2.
    np.testing.assert_allclose(model.coef_, target[1:], atol=0.06)
    assert model.privacy_.rho == pytest.approx(2.0, rel=1e-12)
    labels = [e.label for e in model.privacy_.releases]
    assert labels.count("iv/column-moments") == 1
    assert labels.count("two_stage/theta-gradient") == 10 * 20  # m runs x steps
    assert model.result_.names == ("Intercept", "w", "x")
    assert list(model.conf_int(target="sample").index) == ["Intercept", "w", "x"]


def test_formula_matches_the_estimator(frame):
    res = dpfit.iv(
        "y ~ w + [x ~ z]",
        frame,
        rho=2.0,
        bounds=BOUNDS,
        y_bounds=Y_BOUNDS,
        random_state=0,
        bounds_check=0,  # the whole rho to the fit, as the estimator spends it
    )
    model = _fit(frame)
    assert list(res.params.index) == ["Intercept", "w", "x"]
    np.testing.assert_array_equal(res.estimate, model.result_.estimate)
    no_const = dpfit.iv(
        "y ~ 0 + w + [x ~ z]", frame, rho=2.0, bounds=BOUNDS, y_bounds=Y_BOUNDS, random_state=0
    )
    assert list(no_const.params.index) == ["w", "x"]


def test_paper_calibration_spends_half_of_the_two_stage_share(frame):
    model = _fit(frame, method="2s-gd", noise_calibration="paper")
    assert model.privacy_.rho == pytest.approx(0.2 + 0.9, rel=1e-12)  # 0.1 rho + (0.9 rho)/2


def test_summary_labels_the_interval_and_states_the_privacy(frame):
    text = " ".join(_fit(frame, method="2s-gd").summary().as_text().split())  # undo wrapping
    assert "EXPERIMENTAL interval" in text
    assert "2SLS estimate on these data" in text
    assert "2-zCDP" in text and "two_stage/theta-gradient" in text
    assert "standardised with privately released means" in text


def test_batched_means_and_no_interval(frame):
    bm = _fit(
        frame,
        method="2s-gd",
        interval="batched-means",
        steps=120,
        interval_variant="experimental",
    )
    assert bm.result_.m == 10 and bm.privacy_.rho == pytest.approx(2.0, rel=1e-12)
    point = _fit(frame, method="2s-gd", interval=None)
    assert point.result_.interval_estimates is None
    with pytest.raises(ValueError, match="no confidence interval"):
        point.conf_int(target="sample")


def test_without_bounds_the_data_are_used_as_given(frame):
    std = (frame - frame.mean()) / frame.std()
    model = DPIVRegression(rho=1.0, random_state=0).fit(std[["x"]], std["y"], Z=std[["z"]])
    labels = {e.label for e in model.privacy_.releases}
    assert "iv/column-moments" not in labels
    assert model.privacy_.rho == pytest.approx(1.0, rel=1e-12)
    assert "No bounds were given" in " ".join(model.summary().as_text().split())


def test_shared_budget(frame):
    budget = Budget(rho=3.0)
    _fit(frame, random_state=1).fit(
        frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]], budget=budget
    )
    assert budget.spent == pytest.approx(2.0)
    with recording() as rec, pytest.raises(BudgetExceededError):
        DPIVRegression(rho=2.0, bounds=BOUNDS, y_bounds=Y_BOUNDS).fit(
            frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]], budget=budget
        )
    assert len(rec) == 0 and budget.spent == pytest.approx(2.0)


def test_record_replay_through_the_model(frame):
    """Reliability 3.3: a neighbour (one record at the bound corners) changes no output."""
    neighbour = frame.copy()
    neighbour.iloc[0] = [11.0, -4.0, 1.0, -10.0]
    with recording() as rec:
        a = _fit(frame, random_state=3)
    with replaying(rec) as rep:
        b = _fit(neighbour, random_state=4)
    for r1, r2 in zip(rec.releases, rep.releases, strict=True):
        assert r1.entry == r2.entry
        assert np.linalg.norm(r1.value - r2.value) <= r1.entry.sensitivity * (1 + 1e-12)
    np.testing.assert_array_equal(a.result_.estimate, b.result_.estimate)
    pd.testing.assert_frame_equal(a.conf_int(), b.conf_int())


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"rho": None}, TypeError, "rho is required"),
        ({"rho": -1.0}, ValueError, "rho"),
        ({"rho_split": 1.0}, ValueError, "rho_split"),
        ({"clip": (1.0,)}, ValueError, "clip"),
        ({"clip": 0.0}, ValueError, "clip"),
        ({"step_size": -1.0}, ValueError, "step_size"),
        ({"steps": 2.5}, TypeError, "steps"),
        ({"interval": "checkpoints"}, ValueError, "interval"),
        ({"m": 1}, ValueError, "m"),
        ({"noise_calibration": "loose"}, ValueError, "noise_calibration"),
        ({"fit_intercept": 1}, TypeError, "fit_intercept must be a bool"),
        ({"secure": "yes"}, TypeError, "secure must be a bool"),
        ({"burn_in": 5}, ValueError, "burn_in"),
        ({"bounds": [(0, 1)]}, TypeError, "bounds must be a mapping"),
        ({"bounds": {**BOUNDS, "extra": (0, 1)}}, ValueError, "unknown \\['extra'\\]"),
        ({"bounds": {k: v for k, v in BOUNDS.items() if k != "x"}}, ValueError, "missing"),
        ({"bounds": {**BOUNDS, "y": Y_BOUNDS}}, ValueError, "give its bounds as y_bounds"),
        ({"y_bounds": None}, ValueError, "y_bounds is required with bounds"),
        ({"bounds": {**BOUNDS, "x": (3, 1)}}, ValueError, "low must be < its high"),
        ({"random_state": "seed"}, TypeError, "random_state must be"),
    ],
)
def test_bad_parameters_release_nothing(frame, kwargs, exc, match):
    with recording() as rec, pytest.raises(exc, match=match):
        _fit(frame, **kwargs)
    assert len(rec) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"interval": "batched-means", "interval_variant": "experimental"},  # 20 <= burn-in 20
        {"interval": "batched-means", "steps": 5, "m": 10},  # 5 iterates, 10 blocks
        {
            "interval": "batched-means",
            "interval_variant": "experimental",
            "burn_in": 30,
            "steps": 35,
        },
    ],
)
def test_impossible_interval_settings_are_refused_before_any_charge(frame, kwargs):
    """Issue 14: batched means on IV used to spend the whole budget and then raise."""
    budget = Budget(rho=5.0)
    model = DPIVRegression(
        rho=2.0, method="2s-gd", bounds=BOUNDS, y_bounds=Y_BOUNDS, random_state=0, **kwargs
    )
    with recording() as rec, pytest.raises(ValueError, match="nothing was charged"):
        model.fit(frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]], budget=budget)
    assert len(rec) == 0 and budget.spent == 0.0


def test_config_is_a_frozen_record_of_the_checked_parameters():
    """The constraint table turns the stored parameters into a frozen config (as for
    DPLinearRegression): a scalar clip or step size becomes a (theta, beta) pair."""
    cfg = DPIVRegression(rho=1.0, method="2s-gd", clip=2.0, step_size=(0.5, 0.25))._config()
    assert (cfg.method, cfg.clip, cfg.step_size, cfg.interval) == (
        "2s-gd",
        (2.0, 2.0),
        (0.5, 0.25),
        "independent-runs",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.rho = 2.0  # type: ignore[misc]


def test_a_large_rho_warns_once_per_fit_and_not_on_early_validation(frame):
    """One LargeBudgetWarning per fit: DP-2S-GD, given the estimator's budget, does not warn
    again, and validating early (as dpfit.iv does) with warn_large_rho=False does not warn."""
    kw = {"rho": 50.0, "method": "2s-gd", "m": 2, "steps": 4}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPIVRegression(**kw)._config(warn_large_rho=False)
        _fit(frame, **kw)
        dpfit.iv("y ~ w + [x ~ z]", frame, bounds=BOUNDS, y_bounds=Y_BOUNDS, random_state=0, **kw)
    large = [str(w.message) for w in caught if issubclass(w.category, LargeBudgetWarning)]
    assert large == ["rho=50 is a weak privacy guarantee (epsilon > 19 at delta=1e-5)"] * 2


def test_bad_data_gives_clear_errors_before_any_noise(frame):
    X, y, Z = frame[["w", "x"]], frame["y"], frame[["w", "z"]]
    bad = frame.copy()
    bad.loc[3, "z"] = np.nan
    cases = [
        ((X, y, frame[["z"]]), "under-identified"),
        ((X, y.iloc[:-1], Z), "same number of rows"),
        ((X, y, Z.iloc[:-1]), "same number of rows"),
        ((X, y, bad[["w", "z"]]), "Z contains NaN"),
    ]
    for (Xb, yb, Zb), match in cases:
        with recording() as rec, pytest.raises(ValueError, match=match):
            DPIVRegression(rho=1.0).fit(Xb, yb, Z=Zb)
        assert len(rec) == 0
    with recording() as rec, pytest.raises(ValueError, match="under-identified"):
        dpfit.iv("y ~ [x + w ~ z]", frame, rho=1.0)
    with pytest.raises(ValueError, match="missing values"):
        dpfit.iv("y ~ w + [x ~ z]", bad, rho=1.0)
    with pytest.raises(TypeError, match="intercept is set by the formula"):
        dpfit.iv("y ~ w + [x ~ z]", frame, rho=1.0, fit_intercept=False)
    assert len(rec) == 0


def test_sklearn_contract(frame):
    model = DPIVRegression(rho=1.0, bounds=BOUNDS, y_bounds=Y_BOUNDS, m=5)
    assert clone(model).get_params() == model.get_params()
    fitted = _fit(frame)
    pred = fitted.predict(frame[["w", "x"]])
    np.testing.assert_allclose(
        pred, fitted.intercept_ + frame[["w", "x"]].to_numpy() @ fitted.coef_
    )
    assert not hasattr(fitted, "budget")


@pytest.mark.parametrize("value", [1.7e308, -1.7e308])
def test_extreme_finite_record_without_bounds_neither_fails_nor_warns(value):
    # Without bounds nothing clips z, so w = Theta^T z overflows for this finite record: the
    # fit used to raise after releases were charged (and to warn), revealing the record.
    rng = np.random.default_rng(4)
    Z = rng.standard_normal((500, 1))
    X = 3.0 * Z + rng.standard_normal((500, 1))
    y = 2.0 * X[:, 0] + rng.standard_normal(500)
    Z[0, 0] = value
    budget = Budget(rho=1.0)
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose
        # Public (10 steps): too few for the convergence check, whatever the data.
        warnings.filterwarnings("ignore", "The convergence of DP-2S-GD cannot be checked")
        model = DPIVRegression(rho=1.0, method="2s-gd", steps=10, m=2, random_state=0)
        model.fit(X, y, Z=Z, budget=budget)
    assert len(rec) == 2 * 2 * 10 and model.privacy_.rho == pytest.approx(1.0, rel=1e-12)
    ci = model.conf_int(target="sample").to_numpy()
    assert np.isfinite(model.coef_).all() and np.isfinite(ci).all()


def test_pickle_of_a_fit_holds_no_non_private_diagnostic():
    # The clipped fractions of both stages are computed from the raw data: they must not
    # travel in a pickle. On neighbours whose clipped fractions differ, the pickles agree on
    # every non-noised field.
    rng = np.random.default_rng(6)
    Z = rng.standard_normal((800, 1))
    X = Z + rng.standard_normal((800, 1))
    y = 0.5 * X[:, 0] + rng.standard_normal(800)
    X2, y2, Z2 = X.copy(), y.copy(), Z.copy()
    X2[0], y2[0], Z2[0] = 40.0, -300.0, -40.0  # clipped in both stages
    fits = [
        DPIVRegression(rho=1.0, method="2s-gd", steps=10, m=2, random_state=0).fit(a, b, Z=c)
        for a, b, c in ((X, y, Z), (X2, y2, Z2))
    ]
    assert fits[0].result_.diagnostics != fits[1].result_.diagnostics  # in memory only
    public = []
    for model in (pickle.loads(pickle.dumps(m)) for m in fits):
        res = model.result_
        fields = {f.name: getattr(res, f.name) for f in dataclasses.fields(res)}
        for noised in ("estimate", "interval_estimates", "ledger"):
            fields.pop(noised)
        public.append((fields, res.ledger.entries, model.privacy_.entries))
    assert public[0] == public[1] and public[0][0]["diagnostics"] == {}


def test_dpfit_iv_counts_the_records_outside_its_bounds(frame):
    # As dpfit.ols: bounds that cut most records warn through a private count charged on the
    # result's ledger (2% of rho by default), and the whole rho is the fit's total.
    bounds = {**BOUNDS, "x": (0.0, 0.01)}  # x has mean 2, sd 1.6: almost every x is outside
    with pytest.warns(SideConditionWarning, match=r"\['x'\] clip many records"):
        res = dpfit.iv(
            "y ~ w + [x ~ z]", frame, rho=2.0, bounds=bounds, y_bounds=Y_BOUNDS, random_state=0
        )
    assert "bounds-check/outside-counts" in [e.label for e in res.ledger.releases]
    assert res.rho == pytest.approx(2.0, rel=1e-12)
