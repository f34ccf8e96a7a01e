"""An IV fit gets the bounds check of dpfit.ols (``_iv_check.checked_iv_fit``): bounds that
do not contain the data warn through a charged noisy count, and the whole rho is charged once,
as one entry whose last release is the check.
Also: y_bounds without design bounds checks the response only (it raised a TypeError)."""

import warnings

import pytest

import dpfit
from dpfit.datasets import load_card
from dpfit.exceptions import BudgetExceededError, SideConditionWarning

CARD = load_card(sample="liang2025")  # n = 2191
FORMULA = "lwage ~ 1 + [educ ~ nearc4 + fatheduc]"
GOOD = {"educ": (0, 18), "nearc4": (0, 1), "fatheduc": (0, 18)}
Y_BOUNDS = (4.6, 8.0)


def _fit(bounds, *, budget=None, rho=1.0):
    return dpfit.iv(FORMULA, CARD, rho=rho, budget=budget, random_state=0, bounds=bounds,
                    y_bounds=Y_BOUNDS)  # fmt: skip


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.CoverageWarning")  # clipped educ: weak
@pytest.mark.filterwarnings("ignore::dpfit.exceptions.IdentificationWarning")  # educ barely varies
def test_bounds_that_clip_most_records_warn_and_the_check_is_charged():
    budget = dpfit.Budget(rho=2.0)
    # educ in [0, 5] clips about 2180 of 2191 records; the noise std of the 5 counts is
    # sqrt(5) / sqrt(2 * 0.02) = 11.2, so the warning threshold 0.05 n + 3 std = 143 is
    # crossed with a margin of about 180 standard deviations.
    with pytest.warns(SideConditionWarning, match=r"bounds of \['educ'\] clip many records"):
        res = _fit({**GOOD, "educ": (0, 5)}, budget=budget)
    (entry,) = res.ledger.entries
    assert entry.label == "dpfit.iv"
    assert res.ledger.releases[-1].label == "bounds-check/outside-counts"
    assert res.ledger.releases[-1].rho == pytest.approx(0.02, rel=1e-12)
    assert res.rho == pytest.approx(1.0, rel=1e-12)
    assert budget.spent == pytest.approx(1.0, rel=1e-12)
    assert any("Bounds check" in note for note in res.notes)


def test_bounds_that_hold_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SideConditionWarning)
        res = _fit(GOOD)
    assert res.rho == pytest.approx(1.0, rel=1e-12)


def test_a_stored_budget_is_reserved_once_and_refuses_before_drawing(tmp_path):
    store = tmp_path / "budget.sqlite"
    budget = dpfit.Budget.open(store, dataset="card", rho=1.5)
    _fit(GOOD, budget=budget)
    (charge,) = budget.history()
    assert charge.rho == pytest.approx(1.0) and charge.mechanism == f"dpfit.iv {FORMULA}"
    assert budget.spent == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(BudgetExceededError):
        _fit(GOOD, budget=budget)  # 0.5 left: refused before the fit
    assert budget.spent == pytest.approx(1.0, rel=1e-12)


def test_y_bounds_alone_check_the_response():
    res = dpfit.ols(
        "lwage ~ educ", CARD, rho=1.0, clip=1.0, steps=50, y_bounds=Y_BOUNDS, random_state=0
    )
    note = next(note for note in res.notes if "Bounds check" in note)
    assert "lwage" in note and "educ" not in note.partition(":")[2].partition(";")[0]
