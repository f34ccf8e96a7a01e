"""The one helper every algorithm and baseline gets its ledger from (dpfit.privacy.ledger)."""

from __future__ import annotations

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.algorithms.two_stage import dp_second_stage_gd, dp_two_stage_gd
from dpfit.datasets import draw_iv_design
from dpfit.mechanisms import recording
from dpfit.privacy import Budget, PrivacyLedger, Relation
from dpfit.privacy.ledger import (
    check_affordable,
    ledger_for,
    prepare_ledger,
    require_replace_one,
)


def test_none_gives_a_new_ledger_with_exactly_the_run_budget():
    ledger = prepare_ledger(None, "add-remove", 0.25, name="alg")
    assert ledger.relation is Relation.ADD_REMOVE and len(ledger) == 0
    assert ledger.budget.can_afford(0.25) and not ledger.budget.can_afford(0.2500001)


def test_a_given_ledger_is_returned_itself():
    given = PrivacyLedger(budget=Budget(rho=1.0))
    assert prepare_ledger(given, Relation.REPLACE_ONE, 1.0, name="alg") is given


@pytest.mark.parametrize(
    ("ledger", "relation", "error", "match"),
    [
        ("ledger", "replace-one", TypeError, "ledger must be a PrivacyLedger, got str"),
        (
            PrivacyLedger(relation="add-remove"),
            "replace-one",
            ValueError,
            "ledger relation add-remove does not match relation='replace-one'",
        ),
        (None, "swap", ValueError, "relation must be one of"),
    ],
)
def test_bad_ledgers_are_refused(ledger, relation, error, match):
    with pytest.raises(error, match=match):
        prepare_ledger(ledger, relation, 1.0, name="alg")


def test_an_unaffordable_run_is_refused_by_name_and_nothing_is_spent():
    budget = Budget(rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    with pytest.raises(BudgetExceededError, match=r"^alg needs rho=1\.5 but .* has 1 left; "):
        prepare_ledger(ledger, "replace-one", 1.5, name="alg")
    assert budget.spent == 0.0 and len(ledger) == 0
    check_affordable(ledger, 1.0, name="alg")  # exactly the remainder is affordable
    check_affordable(PrivacyLedger(), 1e300, name="alg")  # no budget: nothing to check


def test_ledger_for_does_not_check_the_budget():
    ledger = PrivacyLedger(budget=Budget(rho=0.1))
    assert ledger_for(ledger, "replace-one", 5.0) is ledger


def test_require_replace_one_raises_the_callers_message():
    assert require_replace_one("replace-one", "msg") is Relation.REPLACE_ONE
    with pytest.raises(ValueError, match=r"^why not$"):
        require_replace_one(Relation.ADD_REMOVE, "why not")


@pytest.fixture(scope="module")
def iv_data():
    design = draw_iv_design(2, 2, 2, rng=np.random.default_rng(3))
    return design.sample(300, np.random.default_rng(4))


KW = {"clip_theta": 5.0, "clip_beta": 5.0, "steps": 5, "step_size_theta": 1.0}


def test_two_stage_checks_the_cost_it_charges_not_the_rho_it_was_given(iv_data):
    # The paper calibration charges half of rho_theta + rho_beta = 2, so a budget of 1.2
    # affords it; checking the requested 2 instead would refuse the run.
    X, y, Z = iv_data
    ledger = PrivacyLedger(budget=Budget(rho=1.2))
    kw = {**KW, "rho_theta": 1.0, "rho_beta": 1.0, "step_size_beta": 0.1}
    dp_two_stage_gd(X, y, Z, **kw, noise_calibration="paper", ledger=ledger, rng=0)
    assert ledger.rho == pytest.approx(1.0, rel=1e-12)
    small = PrivacyLedger(budget=Budget(rho=0.9))
    with recording() as rec, pytest.raises(BudgetExceededError, match=r"^dp_two_stage_gd needs"):
        dp_two_stage_gd(X, y, Z, **kw, noise_calibration="paper", ledger=small, rng=0)
    assert len(rec) == 0 and len(small) == 0


@pytest.mark.parametrize("fit", ["dp_two_stage_gd", "dp_second_stage_gd"])
def test_two_stage_family_refuses_add_remove_with_its_reason(iv_data, fit):
    X, y, Z = iv_data
    with pytest.raises(ValueError, match="two-stage GD averages over the public n"):
        if fit == "dp_two_stage_gd":
            dp_two_stage_gd(
                X,
                y,
                Z,
                **KW,
                rho_theta=1.0,
                rho_beta=1.0,
                step_size_beta=0.1,
                relation="add-remove",
            )
        else:
            dp_second_stage_gd(
                X,
                y,
                Z,
                first_stage=np.ones((2, 2)),
                rho=1.0,
                clip=5.0,
                steps=5,
                step_size=0.1,
                relation="add-remove",
            )
