"""dpfit.minimize with a privacy unit: every release protects all rows of one unit."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.algorithms import noisy_gd
from dpfit.losses import SquaredLoss
from dpfit.privacy import PrivacyLedger, query_sensitivity
from dpfit.privacy.unit_level import PrivacyUnit
from dpfit.testing import check_neighbours, recording

LOSS = SquaredLoss(radius=2.0)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.exceptions.InsecureRandomnessWarning)
        yield


def _panel(seed: int = 0, units: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1 to 8 rows per unit, rows of a unit not adjacent; features in the unit ball."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(units), rng.integers(1, 9, units))
    labels = labels[rng.permutation(labels.size)]
    X = rng.uniform(-1, 1, (labels.size, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ [0.5, -0.3] + 0.3 * rng.standard_normal(labels.size), -1, 1)
    return X, y, labels


def test_every_release_is_declared_for_one_unit_and_the_outputs_say_so():
    X, y, labels = _panel()
    for method, extra in (("adaptive-gd", {}), ("noisy-gd", {"steps": 10})):
        with recording() as calls:
            res = dpfit.minimize(
                LOSS,
                (X, y),
                rho=1.0,
                method=method,
                random_state=3,
                groups=labels,
                max_rows_per_unit=5,
                privacy_unit="person_id",
                **extra,
            )
        units = len(np.unique(labels))
        unit_sens = query_sensitivity("mean", bound=LOSS.lipschitz, n=units, rows_per_unit=5)
        assert calls and {c.sensitivity for c in calls.entries} == {unit_sens}
        assert unit_sens > 4.99 * query_sensitivity("mean", bound=LOSS.lipschitz, n=units)
        assert res.config["n"] == units and res.config["max_rows_per_unit"] == 5
        said = "1 unit = all rows with the same person_id"
        assert said in res.config["privacy_unit"] and said in res.ledger.statement()
        assert res.ledger.unit == PrivacyUnit("person_id", 5) and res.rho <= 1.0


def test_one_row_per_unit_and_a_cap_of_one_is_the_row_level_run():
    """The unit-level run generalises the row-level one: with every row its own unit (in
    row order) and K = 1 it reads the same rows, divides by the same n and declares the
    same sensitivities, so it releases the same numbers."""
    X, y, _ = _panel()
    common = {"rho": 1.0, "method": "noisy-gd", "steps": 10, "random_state": 9}
    row = dpfit.minimize(LOSS, (X, y), **common)
    unit = dpfit.minimize(LOSS, (X, y), groups=np.arange(len(y)), max_rows_per_unit=1, **common)
    np.testing.assert_array_equal(unit.iterates, row.iterates)
    assert [e.sensitivity for e in unit.ledger] == [e.sensitivity for e in row.ledger]


def test_default_step_is_divided_by_the_cap():
    X, y, labels = _panel()
    res = noisy_gd(LOSS, X, y, rho=1.0, steps=3, rng=1, groups=labels, max_rows_per_unit=4)
    assert res.config["step_size"] == 1.0 / (4 * LOSS.smoothness)
    assert "1 unit = all rows with the same groups" in res.ledger.statement()
    named = noisy_gd(
        LOSS,
        X,
        y,
        rho=1.0,
        steps=3,
        rng=1,
        max_rows_per_unit=4,
        groups=pd.Series(labels, name="household"),
    )
    assert named.ledger.unit.column == "household"
    np.testing.assert_array_equal(named.iterates, res.iterates)


def _twenty_rows(flip: bool) -> pd.DataFrame:
    """100 people with 20 rows each; person 0's rows are extreme, with y's sign flipped in
    the neighbour, so each of their clipped gradients moves by twice the clip."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {
            "pid": np.repeat(np.arange(100), 20),
            "x0": rng.uniform(-1, 1, 2000),
            "x1": rng.uniform(-1, 1, 2000),
        }
    )
    frame["y"] = np.clip(frame["x0"] - frame["x1"] + rng.standard_normal(2000), -1, 1)
    first = frame["pid"] == 0
    frame.loc[first, ["x0", "x1"]] = (1e6, 0.0)
    frame.loc[first, "y"] = 1e6 if flip else -1e6
    return frame


def test_one_person_moves_the_row_level_run_20x_and_the_unit_level_run_at_most_1x():
    """With 20 rows per person, changing one person moves the row-level run's releases by
    20 times their declared sensitivity (the failure a unit closes); the unit-level run's
    by at most 1x."""
    D, Dp = _twenty_rows(False), _twenty_rows(True)

    def row_level(frame):
        data = (frame[["x0", "x1"]].to_numpy(), frame["y"].to_numpy())
        return dpfit.minimize(LOSS, data, rho=1.0, method="noisy-gd", steps=3, random_state=5)

    def unit_level(frame):
        data = (frame[["x0", "x1"]].to_numpy(), frame["y"].to_numpy())
        return dpfit.minimize(
            LOSS,
            data,
            rho=1.0,
            method="noisy-gd",
            steps=3,
            random_state=5,
            groups=frame["pid"].to_numpy(),
            max_rows_per_unit=20,
        )

    with pytest.raises(AssertionError, match=r"the query moved by (19\.9|20 )"):
        check_neighbours(row_level, (D,), (Dp,))
    report = check_neighbours(row_level, (D,), (Dp,), tolerance=20)
    assert 19.9 < report.max_share <= 20.0
    report = check_neighbours(unit_level, (D,), (Dp,))
    assert 0.9 < report.max_share <= 1.0


def test_refusals_name_public_inputs_only_and_charge_nothing():
    X, y, labels = _panel()
    budget = dpfit.Budget(rho=2.0)
    unit = {"groups": labels, "max_rows_per_unit": 4}
    for method, extra in (
        ("kl-spider", {"gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0}),
        ("proximal-point", {"gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0}),
    ):
        with pytest.raises(TypeError, match=rf"method='{method}'\) does not take a privacy unit"):
            dpfit.minimize(LOSS, (X, y), rho=1.0, method=method, budget=budget, **unit, **extra)
    with pytest.raises(TypeError, match="pass its labels too"):
        dpfit.minimize(LOSS, (X, y), rho=1.0, privacy_unit="pid", max_rows_per_unit=4)
    with pytest.raises(ValueError, match="max_rows_per_unit is required"):
        dpfit.minimize(LOSS, (X, y), rho=1.0, budget=budget, groups=labels)
    with pytest.raises(ValueError, match="n_public must equal the number of units"):
        dpfit.minimize(LOSS, (X, y), rho=1.0, budget=budget, n_public=len(y), **unit)
    with pytest.raises(ValueError, match="one unit label per row"):
        dpfit.minimize(LOSS, (X, y), rho=1.0, budget=budget, groups=labels[1:], max_rows_per_unit=4)
    row_ledger = PrivacyLedger(relation="replace-one")
    with pytest.raises(ValueError, match="created with the run's privacy unit"):
        dpfit.minimize(LOSS, (X, y), rho=1.0, ledger=row_ledger, **unit)
    assert budget.spent == 0.0 and not len(row_ledger)


def test_dask_data_with_a_unit_is_refused_before_any_charge():
    da = pytest.importorskip("dask.array")
    X, y, labels = _panel()
    budget = dpfit.Budget(rho=2.0)
    with pytest.raises(TypeError, match="a privacy unit needs in-memory data"):
        dpfit.minimize(
            LOSS,
            (da.from_array(X), da.from_array(y)),
            rho=1.0,
            budget=budget,
            groups=labels,
            max_rows_per_unit=4,
        )
    assert budget.spent == 0.0


def test_a_budget_is_charged_with_the_units_statement():
    X, y, labels = _panel()
    budget = dpfit.Budget(rho=2.0)
    res = dpfit.minimize(
        LOSS,
        (X, y),
        rho=1.0,
        method="noisy-gd",
        steps=4,
        budget=budget,
        random_state=2,
        groups=labels,
        max_rows_per_unit=4,
        privacy_unit="pid",
    )
    assert budget.spent == pytest.approx(res.rho) and res.rho <= 1.0
    assert "1 unit = all rows with the same pid" in res.ledger.statement()


def test_add_remove_unit_divides_by_the_public_number_of_units():
    X, y, labels = _panel()
    with recording() as calls:
        res = dpfit.minimize(
            LOSS,
            (X, y),
            rho=1.0,
            method="noisy-gd",
            steps=4,
            random_state=2,
            groups=labels,
            max_rows_per_unit=4,
            relation="add-remove",
            n_public=1000,
        )
    expected = query_sensitivity(
        "mean", bound=LOSS.lipschitz, n=1000, relation="add-remove", rows_per_unit=4
    )
    assert {c.sensitivity for c in calls.entries} == {expected} and res.config["n"] == 1000
    assert "add/remove unit" in res.ledger.statement()
