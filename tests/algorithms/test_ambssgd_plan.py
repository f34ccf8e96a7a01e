"""plan_ambssgd: the public plan of a DP-AMBSSGD run equals what dp_ambssgd runs."""

import dataclasses

import numpy as np
import pytest

from dpfit.algorithms.ambssgd import dp_ambssgd, plan_ambssgd, run_ambssgd_plan
from dpfit.exceptions import SideConditionWarning
from dpfit.privacy import PrivacyLedger

N = 6000
SETTINGS = dict(rho=2.0, feature_scale=2.0, residual_bound=20.0, accounting="parallel", steps=4)


def _data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((N, 2))
    return X, X @ np.array([1.0, -0.5]) + 0.1 * rng.standard_normal(N)


def test_plan_is_what_the_run_reports():
    plan = plan_ambssgd(N, **SETTINGS)
    traj = dp_ambssgd(*_data(), **SETTINGS, rng=0)
    for key in ("n", "steps", "stat_size", "batch_size", "leftover", "step_size", "rho"):
        assert traj.config[key] == getattr(plan, key), key
    assert traj.config["noise_multiplier"] == plan.noise_multiplier
    assert traj.config["threshold_value"] == plan.threshold_value
    assert traj.ledger.rho == plan.rho


def test_running_a_plan_is_the_same_run_bit_for_bit():
    X, y = _data()
    plan = plan_ambssgd(N, **SETTINGS)
    ref = dp_ambssgd(X, y, **SETTINGS, rng=5)
    again = run_ambssgd_plan(plan, X, y, rng=5)
    assert np.array_equal(ref.iterates, again.iterates)
    assert np.array_equal(ref.releases["stat_counts"], again.releases["stat_counts"])
    assert dict(ref.config) == dict(again.config)


def test_plan_is_frozen_and_refuses_data_of_another_size():
    plan = plan_ambssgd(N, **SETTINGS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.rho = 1.0
    X, y = _data()
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="does not match"):
        run_ambssgd_plan(plan, X[:-1], y[:-1], ledger=ledger, rng=0)
    assert ledger.rho == 0.0  # refused before any charge


def test_plan_warns_what_the_run_warns():
    small = dict(SETTINGS, rho=0.05, steps=10)
    with pytest.warns(SideConditionWarning, match="four noise margins"):
        plan = plan_ambssgd(N, **small)
    assert len(plan.side_conditions) >= 1 and plan.stat_margin > plan.stat_size / 4.0
    with pytest.warns(SideConditionWarning, match="four noise margins"):
        dp_ambssgd(*_data(), **small, rng=0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rho=-1.0), "rho"),
        (dict(relation="add-remove"), "plan_ambssgd supports relation='replace-one' only"),
        (dict(steps=3), "even"),
        (dict(n_levels=0), "n_levels"),
    ],
)
def test_plan_validates_like_the_run(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan_ambssgd(N, **{**SETTINGS, **kwargs})


@pytest.mark.parametrize("accounting", ["paper", "parallel"])
def test_a_run_inside_its_release_plan_is_the_same_run_charged_as_one_entry(accounting):
    """The release plan (one parallel composition of the T blocks' releases) charged up
    front: the same draws bit for bit, and the composition in the ledger equals the one a
    run outside a plan records, as the plan's one component."""
    from dpfit import Budget
    from dpfit.mechanisms.plan import charge_plan
    from dpfit.privacy.entries import ComposedEntry

    X, y = _data()
    settings = {**SETTINGS, "accounting": accounting}
    plan = plan_ambssgd(N, **settings)
    ref = dp_ambssgd(X, y, **settings, rng=5)
    budget = Budget(rho=plan.rho)
    ledger = PrivacyLedger(budget=budget)
    release_plan = plan.release_plan(label="fit")
    with charge_plan(release_plan, ledger):
        again = run_ambssgd_plan(plan, X, y, ledger=ledger, rng=5)
    assert np.array_equal(ref.iterates, again.iterates)
    (entry,) = ledger.entries
    assert isinstance(entry, ComposedEntry) and entry.components == ref.ledger.entries
    assert budget.spent == ledger.rho == ref.ledger.rho <= plan.rho
    (planned,) = release_plan.releases
    assert planned.count == (1 if accounting == "paper" else 2) * plan.steps


def test_the_run_names_its_releases_by_the_plans_labels_written_once():
    """The labels a run charges are the plan's constants: a literal copy in the algorithm
    can drift from the plan, and the run's releases would no longer match it."""
    import ast
    from pathlib import Path

    from dpfit.algorithms import _ambssgd_plan, ambssgd

    labels = {_ambssgd_plan.LABEL, _ambssgd_plan.STAT_LABEL, _ambssgd_plan.GRADIENT_LABEL}
    tree = ast.parse(Path(ambssgd.__file__).read_text(encoding="utf-8"))
    exported = {  # __all__ names the function dp_ambssgd, not a label
        id(node)
        for assign in tree.body
        if isinstance(assign, ast.Assign) and ast.unparse(assign.targets[0]) == "__all__"
        for node in ast.walk(assign.value)
    }
    copies = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in labels and id(node) not in exported
    ]
    assert copies == []
