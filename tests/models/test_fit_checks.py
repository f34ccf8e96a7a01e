"""Silent-wrong fits become warnings: p close to n, default steps that cannot converge, bounds
that do not contain the data (a private count, charged on the ledger); formula errors as
one-line ValueErrors."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.exceptions import CoverageWarning, SideConditionWarning
from dpfit.mechanisms import recording

RNG = np.random.default_rng(11)
N = 2000
FRAME = pd.DataFrame({"x": RNG.uniform(0, 10, N), "z": RNG.integers(0, 2, N).astype(float)})
FRAME["y"] = 1.0 + 0.5 * FRAME["x"] - FRAME["z"] + RNG.normal(0, 1, N)
BOUNDS = {"x": (0, 10), "z": (0, 1)}
KW = {"rho": 1.0, "bounds": BOUNDS, "y_bounds": (-5, 15), "steps": 400, "random_state": 0}


def test_p_close_to_n_warns_with_public_quantities():
    wide = pd.DataFrame(RNG.uniform(0, 1, (300, 400)), columns=[f"c{j}" for j in range(400)])
    wide["y"] = RNG.normal(size=300)
    formula = "y ~ " + " + ".join(wide.columns[:-1])
    with pytest.warns(SideConditionWarning, match=r"p = 401 coefficients with n = 300"):
        dpfit.ols(formula, wide, rho=1.0, clip=1.0, steps=5, interval=None, random_state=0)


def test_default_steps_that_cannot_converge_warn():
    wide = pd.DataFrame(RNG.uniform(0, 1, (N, 60)), columns=[f"c{j}" for j in range(60)])
    wide["y"] = RNG.uniform(-1, 1, N)
    formula = "y ~ " + " + ".join(wide.columns[:-1])
    bounds = dict.fromkeys(wide.columns[:-1], (0, 1))
    kw = {"rho": 1.0, "bounds": bounds, "y_bounds": (-1, 1), "random_state": 0}
    kw["precondition"] = False  # plain DP-GD: 1000 steps by default, step size 1 / 61
    with pytest.warns(SideConditionWarning, match="default steps cannot converge"):
        dpfit.ols(formula, wide, **kw)
    dpfit.ols(formula, wide, steps=1000, **kw)  # chosen steps: the user's call, no warning


def test_bounds_check_is_charged_on_the_ledger_and_shown():
    budget = dpfit.Budget(rho=3.0)
    res = dpfit.ols("y ~ x + z", FRAME, budget=budget, **KW)
    labels = [e.label for e in res.ledger.releases]
    assert labels[-1] == "bounds-check/outside-counts" and labels.count(labels[-1]) == 1
    check = res.ledger.releases[-1]
    assert check.rho == pytest.approx(0.02 * KW["rho"], rel=1e-12)
    assert check.sensitivity == pytest.approx(math.sqrt(4))  # x, z, y and the zero records
    assert res.rho == pytest.approx(KW["rho"], rel=1e-12)
    assert budget.spent == pytest.approx(KW["rho"], rel=1e-12)
    assert "Bounds check" in " ".join(res.summary().as_text().split())


def test_bounds_that_clip_many_records_warn():
    with pytest.warns(SideConditionWarning, match=r"bounds of \['x'\] clip many records"):
        dpfit.ols("y ~ x + z", FRAME, **{**KW, "bounds": {"x": (0, 5), "z": (0, 1)}})


def test_values_outside_the_declared_levels_warn_through_the_noisy_zero_record_count():
    """Every value outside a categorical variable's declared levels makes its record the zero
    record; the charged count of zero records (not the data) says so, and a clean frame does
    not warn."""
    kw = {**KW, "bounds": {"x": (0, 10)}}
    terms = r"terms that can make one: C\(z, levels=\['no', 'yes'\]\) \(a value outside"
    with pytest.warns(SideConditionWarning, match=rf"zero records .* {terms}"):
        with warnings.catch_warnings():  # all-zero data: X'X/n is barely identified too
            warnings.simplefilter("ignore", CoverageWarning)
            dpfit.ols("y ~ x + C(z, levels=['no', 'yes'])", FRAME, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SideConditionWarning)
        res = dpfit.ols("y ~ x + z", FRAME, **KW)
    assert "zero records" in " ".join(res.summary().as_text().split())


def test_bounds_check_off_is_the_estimator():
    res = dpfit.ols("y ~ x + z", FRAME, bounds_check=0, **KW)
    model = dpfit.DPLinearRegression(**KW).fit(FRAME[["x", "z"]], FRAME["y"])
    np.testing.assert_array_equal(res.estimate[1:], model.coef_)
    assert res.estimate[0] == model.intercept_
    assert "bounds-check/outside-counts" not in [e.label for e in res.ledger]


def test_the_counts_move_by_at_most_their_sensitivity_on_neighbours():
    """Replace one record by an outlier outside every bound: each count moves by <= 1."""
    neighbour = FRAME.copy()
    neighbour.iloc[0] = [50.0, 7.0, -40.0]
    values = []
    for frame in (FRAME, neighbour):
        with recording() as rec:
            dpfit.ols("y ~ x + z", frame, **KW)
        values.append(rec.releases[-1].value)
    assert np.abs(values[1] - values[0]).max() <= 1.0
    assert np.linalg.norm(values[1] - values[0]) <= rec.releases[-1].entry.sensitivity


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        ({"bounds_check": 1.5}, ValueError, "bounds_check"),
        ({"bounds_check": "yes"}, TypeError, "bounds_check"),
        ({"bounds": {**BOUNDS, "y": (-5, 15)}}, ValueError, "y_bounds=\\(low, high\\)"),
    ],
)
def test_bad_check_settings_charge_nothing(kw, exc, match):
    budget = dpfit.Budget(rho=3.0)
    with recording() as rec, pytest.raises(exc, match=match):
        dpfit.ols("y ~ x + z", FRAME, budget=budget, **{**KW, **kw})
    assert len(rec) == 0 and budget.spent == 0.0


@pytest.mark.parametrize(
    "formula, match",
    [
        ("y ~ xx + z", "formula term 'xx'.*did you mean 'x'"),
        ("y ~ x +", "formula syntax error"),
        ("y ~ (x", "formula syntax error"),
    ],
)
def test_formula_errors_are_one_line_value_errors(formula, match):
    budget = dpfit.Budget(rho=3.0)
    with pytest.raises(ValueError, match=match) as info:
        dpfit.ols(formula, FRAME, budget=budget, **KW)
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)
    assert budget.spent == 0.0


def test_the_checks_warn_at_the_users_line():
    """Filters by module and the once-per-location rule need the caller's frame."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpfit.ols("y ~ x + z", FRAME, **{**KW, "bounds": {"x": (0, 5), "z": (0, 1)}})
    clipped = [w for w in caught if "clip many records" in str(w.message)]
    assert len(clipped) == 1 and clipped[0].filename == __file__


def test_the_clipping_limit_falls_like_sqrt_n():
    from dpfit.models._fit_checks import clipped_limit

    # 5% of n up to n = 400, then sqrt(n): 2% of 2e4 records (400) is above sqrt(2e4) = 141
    assert clipped_limit(300, 0.0) == pytest.approx(15.0)
    assert clipped_limit(20_000, 0.0) == pytest.approx(math.sqrt(20_000))
    assert clipped_limit(20_000, 10.0) == pytest.approx(math.sqrt(20_000) + 30.0)


def test_a_small_share_clipped_at_large_n_warns():
    rng = np.random.default_rng(7)  # synthetic data, not privacy noise
    n = 20_000
    frame = pd.DataFrame({"x": rng.uniform(0, 10, n)})
    frame["y"] = 1.0 + 0.5 * frame["x"] + rng.normal(0, 1, n)
    bounds = {"x": (0.0, 9.8)}  # clips 2% of x (400 records): under 5% of n, over sqrt(n)
    with pytest.warns(SideConditionWarning, match=r"\['x'\] clip many records"):
        dpfit.ols("y ~ x", frame, rho=5.0, bounds=bounds, y_bounds=(-5, 12), random_state=0)
