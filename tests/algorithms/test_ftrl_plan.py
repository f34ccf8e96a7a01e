"""plan_ftrl: the public plan of a DP-FTRL run equals what dp_ftrl runs."""

import dataclasses

import numpy as np
import pytest

from dpfit.algorithms.ftrl import dp_ftrl, plan_ftrl, run_ftrl_plan
from dpfit.losses import SquaredLoss
from dpfit.privacy import PrivacyLedger

LOSS = SquaredLoss(x_bound=3.0, y_bound=6.0, radius=2.0)
SETTINGS = dict(loss=LOSS, clip=1.0, epochs=3, batch_size=20, step_size=0.3, rho=1.0)


def _data(n=200):
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(n, 3))
    return X, X @ np.ones(3)


def test_plan_is_what_the_run_reports():
    plan = plan_ftrl(200, 3, **SETTINGS)
    traj = dp_ftrl(*_data(), **SETTINGS, rng=0)
    for key in ("steps", "steps_per_epoch", "participations", "separation", "pattern", "nu"):
        assert traj.config[key] == getattr(plan, key), key
    assert traj.config["rho"] == plan.rho
    # the ledger recomputes Delta^2 / (2 sigma^2) from the released std: equal up to rounding
    assert traj.ledger.rho == pytest.approx(plan.rho, rel=1e-12)
    assert traj.config["requested_mechanism"] == plan.mechanism.name


@pytest.mark.parametrize("extra", [{}, dict(schedule="reshuffle", momentum=0.5)])
def test_running_a_plan_is_the_same_run_bit_for_bit(extra):
    X, y = _data()
    plan = plan_ftrl(200, 3, **SETTINGS, **extra)
    ref = dp_ftrl(X, y, **SETTINGS, **extra, rng=7)
    again = run_ftrl_plan(plan, X, y, rng=7)
    assert np.array_equal(ref.iterates, again.iterates)
    assert dict(ref.config) == dict(again.config)


def test_plan_is_frozen_read_only_and_leaves_inputs_writable():
    sizes = np.full(30, 0.2)
    plan = plan_ftrl(200, 3, **{**SETTINGS, "step_size": sizes})
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.clip = 2.0
    with pytest.raises(ValueError, match="read-only"):
        plan.step_sizes[0] = 1.0
    sizes[0] = 1.0  # the caller's array is not frozen by the plan
    assert plan.step_sizes[0] == 0.2


def test_plan_refuses_data_of_another_shape_before_any_charge():
    plan = plan_ftrl(200, 3, **SETTINGS)
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="shape"):
        run_ftrl_plan(plan, *_data(180), ledger=ledger, rng=0)
    assert ledger.rho == 0.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(clip=-1.0), "clip"),
        (dict(relation="add-remove"), "replace-one"),
        (dict(batch_size=500), "batch_size"),
        (dict(separation=100), "min-separation"),
    ],
)
def test_plan_validates_like_the_run(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan_ftrl(200, 3, **{**SETTINGS, **kwargs})
