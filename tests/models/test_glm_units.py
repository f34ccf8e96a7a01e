"""The GLM family with a privacy unit: public refusals before any charge, the plan, and the
clustered interval (the neighbour layer, tests/neighbours, checks the releases)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.algorithms.glm import dp_glm, plan_glm
from dpfit.algorithms.glm_family import get_family
from dpfit.privacy import Budget


def _visits(seed: int = 0, people: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    who = np.repeat(np.arange(people), rng.integers(1, 6, people))
    frame = pd.DataFrame({"pid": who, "x": rng.uniform(-1, 1, who.size)})
    frame["y"] = (rng.uniform(size=who.size) < 1 / (1 + np.exp(-frame["x"]))).astype(int)
    return frame


UNIT = {"privacy_unit": "pid", "max_rows_per_unit": 4, "bounds": {"x": (-1, 1)},
        "margins": False, "random_state": 0}  # fmt: skip


def test_plan_declares_unit_sensitivities_and_the_clustered_meat():
    fam = get_family("binomial", "logit")
    row = plan_glm(fam, n=400, k=2, rho=1.0)
    unit = plan_glm(fam, n=400, k=2, rho=1.0, rows_per_unit=4)
    assert "meat" in row.names and "cluster-meat" in unit.names and "rows" in unit.names
    for name in ("xtx", "whiten", "mean", "gradient", "bread"):
        ratio = unit.release(name).sensitivity / row.release(name).sensitivity
        assert ratio == pytest.approx(4.0, rel=1e-9)  # K rows of one unit
    assert "400 units of at most 4 rows" in str(unit)


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.InsecureRandomnessWarning")
def test_logit_with_a_unit_states_the_unit_and_clusters():
    res = dpfit.logit("y ~ x", _visits(people=3000), rho=1.0, **UNIT)
    text = res.summary().as_text()
    assert "No. units" in text and "clustered by pid (3000 units)" in text
    assert res.margins is None  # per-row means: not released with a unit
    assert "1 unit = all rows with the same pid" in res.ledger.statement()
    assert res.ledger.rho == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"max_rows_per_unit": None}, "max_rows_per_unit is required"),
        ({"bounds_check": 0.05}, "bounds_check counts rows"),
        ({"privacy_unit": "nope"}, "privacy_unit must name a column"),
    ],
)
def test_refusals_name_no_value_and_charge_nothing(extra, message):
    budget = Budget(rho=2.0)
    with pytest.raises(ValueError, match=message) as info:
        dpfit.logit("y ~ x", _visits(), rho=1.0, budget=budget, **{**UNIT, **extra})
    assert budget.spent == 0.0
    assert "0." not in str(info.value)  # no data value quoted


def test_dask_is_refused_naming_the_in_memory_alternative():
    da = pytest.importorskip("dask.array")
    frame = _visits()
    X = da.from_array(np.column_stack([np.ones(len(frame)), frame["x"]]), chunks=100)
    y = da.from_array(frame["y"].to_numpy(float), chunks=100)
    with pytest.raises(TypeError, match=r"needs in-memory data.*fit the same data in memory"):
        dp_glm(X, y, rho=1.0, groups=frame["pid"].to_numpy(), max_rows_per_unit=4,
               n_public=400, rng=0)  # fmt: skip


def test_max_rows_without_a_unit_is_refused():
    frame = _visits()
    with pytest.raises(ValueError, match="needs a privacy unit"):
        dp_glm(frame[["x"]].to_numpy(), frame["y"].to_numpy(float), rho=1.0,
               max_rows_per_unit=4, rng=0)  # fmt: skip


def test_dp_glm_refuses_margins_with_a_unit():
    frame = _visits()
    X = np.column_stack([np.ones(len(frame)), frame["x"]])
    with pytest.raises(ValueError, match="margins are not released with a privacy unit"):
        dp_glm(X, frame["y"].to_numpy(float), rho=1.0, margins=True,
               groups=frame["pid"].to_numpy(), max_rows_per_unit=4, rng=0)  # fmt: skip


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.InsecureRandomnessWarning")
def test_estimator_groups_match_the_formula_fit():
    frame = _visits(people=3000)
    model = dpfit.DPLogisticRegression(
        rho=1.0, bounds=(-1, 1), margins=False, max_rows_per_unit=4, random_state=0
    ).fit(frame[["x"]], frame["y"], groups=frame["pid"])
    res = dpfit.logit("y ~ x", frame, rho=1.0, **UNIT)
    np.testing.assert_allclose(model.result_.estimate, res.estimate, rtol=1e-12)
    assert model.privacy_.unit.column == "pid"


def test_estimator_cap_without_groups_is_refused():
    frame = _visits()
    model = dpfit.DPPoissonRegressor(rho=1.0, bounds=(-1, 1), y_bounds=(0, 1), max_rows_per_unit=4)
    with pytest.raises(ValueError, match="max_rows_per_unit needs a privacy unit"):
        model.fit(frame[["x"]], frame["y"])


def _twenty_rows(flip: bool) -> pd.DataFrame:
    """100 people with 20 rows each; with ``flip`` every row of person 0 is an event."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"pid": np.repeat(np.arange(100), 20), "x": rng.uniform(-1, 1, 2000)})
    frame["y"] = (rng.uniform(size=2000) < 0.3).astype(float)
    frame.loc[frame["pid"] == 0, "y"] = 1.0 if flip else 0.0
    return frame


def test_one_person_moves_a_row_level_logit_20x_and_a_unit_level_one_at_most_1x():
    """With 20 rows per person, changing one person moves the row-level logit's releases by
    about 20 times their declared sensitivity; the unit-level fit's by at most 1x."""
    from dpfit.testing import check_neighbours

    D, Dp = _twenty_rows(False), _twenty_rows(True)
    common = {"rho": 1.0, "bounds": {"x": (-1, 1)}, "margins": False, "random_state": 5,
              "steps": 20, "burn_in": 0, "m": 4}  # fmt: skip

    def row_level(frame):
        return dpfit.logit("y ~ x", frame, bounds_check=0.0, **common)

    def unit_level(frame):
        return dpfit.logit("y ~ x", frame, privacy_unit="pid", max_rows_per_unit=20, **common)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match=r"the query moved by (19\.9|20 )"):
            check_neighbours(row_level, (D,), (Dp,), ignore=("warnings",))
        report = check_neighbours(row_level, (D,), (Dp,), tolerance=20, ignore=("warnings",))
        assert 19.9 < report.max_share <= 20.0
        report = check_neighbours(unit_level, (D,), (Dp,), ignore=("warnings",))
    assert 0.9 < report.max_share <= 1.0
