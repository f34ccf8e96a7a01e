"""Privacy units: one person's rows protected together (dpfit.privacy.unit_level)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
import dpfit.testing
from dpfit.algorithms._unit_sums import cap_rows, unit_sums
from dpfit.exceptions import CoverageWarning, InsecureRandomnessWarning, LargeBudgetWarning
from dpfit.mechanisms import make_noise_source
from dpfit.models._panel import bound_units, panel_formula, within
from dpfit.privacy import query_sensitivity
from dpfit.testing import check_neighbours

ROWS = 20  # rows per person in the demonstration


def _source(seed: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return make_noise_source(seed)


def test_unit_sensitivities_scale_with_the_row_cap():
    # exact parts (no n: no rounding allowance): K rows can all move by B
    assert query_sensitivity("sum", bound=1.5, rows_per_unit=20) == 2 * 20 * 1.5
    assert query_sensitivity("sum", bound=1.5, rows_per_unit=20, relation="add-remove") == 30.0
    assert query_sensitivity("second-moment-sum", bound=2.0, rows_per_unit=5) == pytest.approx(
        math.sqrt(2) * 5 * 4.0, rel=1e-15
    )
    assert query_sensitivity("count", rows_per_unit=7) == 7.0
    # the allowance counts n K rows: gamma_{nK} n K B = 2.2e-9 relative here
    with_n = query_sensitivity("sum", bound=1.0, n=1000, rows_per_unit=20)
    assert 40.0 * (1 + 2e-9) < with_n < 40.0 * (1 + 3e-9)
    assert with_n > query_sensitivity("sum", bound=20.0, n=1000)  # gamma_{nK} > gamma_n


def test_cap_keeps_a_uniform_subset_and_ignores_other_units():
    groups = np.array(["a"] * 5 + ["b"] * 3)
    seen: dict[tuple, int] = {}
    draws = 3000
    for seed in range(draws):
        kept = cap_rows(groups, 8, 2, _source(seed))
        assert np.bincount(kept.codes).tolist() == [2, 2]
        key = tuple(sorted(kept.rows[kept.codes == 0]))
        seen[key] = seen.get(key, 0) + 1
    # 10 subsets of 2 of unit a's 5 rows, each with probability 1/10: 5 binomial s.d.
    assert len(seen) == 10
    sd = math.sqrt(draws * 0.1 * 0.9)
    assert all(abs(c - draws / 10) < 5 * sd for c in seen.values())
    # one unit's rows (here: more of them, elsewhere in the data) never change another's pick
    before = cap_rows(groups, 8, 2, _source(1))
    grown = np.r_[["b"] * 6, groups[:5]]  # unit b now first and with 6 rows
    after = cap_rows(grown, 11, 2, _source(1))
    a_before = sorted(before.rows[groups[before.rows] == "a"])
    a_after = sorted(after.rows[grown[after.rows] == "a"] - 6)
    assert a_before == a_after


def test_within_transform_keeps_each_units_bounds():
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(50), 4)
    D = rng.uniform(-1, 1, (200, 3))
    y = rng.uniform(-1, 1, 200)
    Dw, yw = within(D, y, codes, 50)
    np.testing.assert_allclose(unit_sums(Dw, codes, 50), 0.0, atol=1e-12)
    Db, yb = bound_units(Dw, yw, codes, 50, max_rows=4, x_bound=math.sqrt(3))
    assert (unit_sums(np.einsum("ij,ij->i", Db, Db), codes, 50) <= 4 * 3).all()
    assert (unit_sums(yb * yb, codes, 50) <= 4).all()
    np.testing.assert_array_equal(Db, Dw)  # demeaning never exceeds them: nothing rescaled


def test_panel_formula():
    assert panel_formula("y ~ x + EntityEffects", time=None, time_levels=None) == ("y ~ x", True)
    text, entity = panel_formula(
        "y ~ x + EntityEffects + TimeEffects", time="year", time_levels=[1, 2]
    )
    assert (text, entity) == ("y ~ x + C(year, levels=[1, 2])", True)
    with pytest.raises(ValueError, match="time_levels"):
        panel_formula("y ~ x + TimeEffects", time=None, time_levels=None)


def _people(seed: int, n_people: int, rows: int, effect: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(n_people), rows)
    a = rng.standard_normal(n_people)
    x = np.clip(rng.standard_normal(pid.size) + effect * a[pid], -4, 4)
    y = np.clip(0.5 * x + a[pid] + rng.standard_normal(pid.size), -8, 8)
    return pd.DataFrame({"person_id": pid, "x": x, "y": y})


UNIT = {"bounds": {"x": (-4, 4)}, "y_bounds": (-8, 8), "privacy_unit": "person_id"}


def test_statement_summary_and_ledger_name_the_unit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpfit.ols("y ~ x", _people(0, 300, 5), rho=1.0, max_rows_per_unit=5,
                        random_state=0, **UNIT)  # fmt: skip
    text = "1 unit = all rows with the same person_id"
    assert text in res.ledger.statement()
    assert text in res.summary().as_text()
    assert "clustered by person_id (300 units)" in res.summary().as_text()
    assert res.ledger.unit.max_rows == 5


def test_unit_fit_refuses_what_it_cannot_do():
    frame = _people(0, 50, 3)
    with pytest.raises(ValueError, match="max_rows_per_unit is required"):
        dpfit.ols("y ~ x", frame, rho=1.0, **UNIT)
    with pytest.raises(ValueError, match="EntityEffects needs a privacy unit"):
        dpfit.ols("y ~ x + EntityEffects", frame, rho=1.0, bounds={"x": (-4, 4)},
                  y_bounds=(-8, 8))  # fmt: skip
    with pytest.raises(ValueError, match="bounds"):
        dpfit.ols("y ~ x", frame, rho=1.0, privacy_unit="person_id", max_rows_per_unit=3,
                  clip=1.0, steps=10)  # fmt: skip
    with pytest.raises(ValueError, match="n_public"):
        dpfit.ols("y ~ x", frame, rho=1.0, max_rows_per_unit=3, relation="add-remove", **UNIT)


def test_fixed_effects_match_the_within_estimator_and_clustered_errors():
    """At a large rho the private FE fit is the within OLS estimate, and its standard error
    the cluster-robust one (statsmodels' cov_type='cluster', same G/(G-1) factor).
    Unit effects correlated with x: pooled OLS is biased (about 0.9), the within fit not."""
    sm = pytest.importorskip("statsmodels.api")
    frame = _people(3, 2000, 5, effect=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        warnings.simplefilter("ignore", LargeBudgetWarning)
        res = dpfit.ols("y ~ x + EntityEffects", frame, rho=1e7, max_rows_per_unit=5,
                        random_state=1, **UNIT)  # fmt: skip
    xw = frame["x"] - frame.groupby("person_id")["x"].transform("mean")
    yw = frame["y"] - frame.groupby("person_id")["y"].transform("mean")
    ols = sm.OLS(yw.to_numpy(), xw.to_numpy()[:, None]).fit(
        cov_type="cluster", cov_kwds={"groups": frame["person_id"], "use_correction": False}
    )
    G = 2000
    assert res.params["x"] == pytest.approx(ols.params[0], abs=1e-3)
    # the meat's clip grows with rho until its noise is MEAT_NOISE = 10% of its scale
    # (inference/clipping_bias.py), so the s.e. has about 5% noise: 4 s.d. = 20%
    assert res.bse["x"] == pytest.approx(ols.bse[0] * math.sqrt(G / (G - 1)), rel=0.2)
    assert abs(res.params["x"] - 0.5) < 4 * res.bse["x"]


def _demo_frame(flip: bool) -> pd.DataFrame:
    """Every person has ROWS rows with x = 1 and y = 1; person 0's become y = -1 in D'."""
    frame = pd.DataFrame({"person_id": np.repeat(np.arange(50), ROWS)})
    frame["x"] = 1.0
    frame["y"] = 1.0
    if flip:
        frame.loc[frame["person_id"] == 0, "y"] = -1.0
    return frame


def test_one_person_moves_a_row_level_fit_20x_and_a_unit_level_fit_at_most_1x():
    """The failure privacy units close: with 20 rows per person, changing one person moves
    the row-level fit's X'y by 20 times its declared sensitivity (one row moves it by 2,
    the declared bound); the unit-level fit declares 2 K B and moves at most that."""
    D, Dp = _demo_frame(False), _demo_frame(True)
    bounds = {"bounds": [(-1, 1)], "y_bounds": (-1, 1), "fit_intercept": False}

    def row_level(frame):
        model = dpfit.DPLinearRegression(rho=1.0, method="adassp", interval=None,
                                         random_state=5, **bounds)  # fmt: skip
        return model.fit(frame[["x"]].to_numpy(), frame["y"].to_numpy())

    def unit_level(frame):
        model = dpfit.DPLinearRegression(rho=1.0, max_rows_per_unit=ROWS, random_state=5,
                                         **bounds)  # fmt: skip
        return model.fit(frame[["x"]].to_numpy(), frame["y"].to_numpy(),
                         groups=frame["person_id"])  # fmt: skip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match=r"adassp/xty\): the query moved by (19\.9|20 )"):
            check_neighbours(row_level, (D,), (Dp,))
        report = check_neighbours(row_level, (D,), (Dp,), tolerance=ROWS)
        assert ROWS * 0.999 < report.max_share <= ROWS
        report = check_neighbours(unit_level, (D,), (Dp,), ignore=("warnings",))
    assert 0.999 < report.max_share <= 1.0


def test_coverage_warning_with_few_units():
    with pytest.warns(CoverageWarning, match="units for 2 coefficients"):
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        dpfit.ols("y ~ x", _people(1, 30, 4), rho=1.0, max_rows_per_unit=4, random_state=0,
                  **UNIT)  # fmt: skip


def test_a_budget_that_cannot_afford_the_fit_refuses_before_anything_is_drawn():
    budget = dpfit.Budget(rho=0.5)
    with dpfit.testing.recording() as calls, pytest.raises(dpfit.BudgetExceededError):
        dpfit.ols("y ~ x", _people(0, 100, 3), rho=1.0, budget=budget, max_rows_per_unit=3,
                  random_state=0, **UNIT)  # fmt: skip
    assert budget.remaining == 0.5 and len(calls) == 0


def test_add_remove_counts_the_units_privately():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpfit.ols("y ~ x", _people(0, 600, 3), rho=1.0, max_rows_per_unit=3,
                        relation="add-remove", n_public=650, random_state=0, **UNIT)  # fmt: skip
    (count,) = [e for e in res.ledger if e.label == "unit/n-units"]
    assert count.sensitivity == 1.0
    text = res.summary().as_text()
    assert "(a private count)" in text and "No. units:             650 (public" in text
    assert "adding or removing all rows of one unit" in res.ledger.statement()
    assert res.ledger.rho <= 1.0
