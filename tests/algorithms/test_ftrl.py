"""DP-FTRL training loop: one charged release, declared participation enforced, replay-safe."""

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.algorithms.ftrl import dp_ftrl, linear_cooldown
from dpfit.losses import FunctionLoss, SquaredLoss
from dpfit.mechanisms import recording, replaying
from dpfit.noise import nu_dpftrl, optimal_blt, release_sensitivity
from dpfit.privacy import Budget, PrivacyLedger

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3))
Y = X @ np.array([1.0, -0.5, 0.2]) + 0.1 * RNG.normal(size=120)
LOSS = SquaredLoss(x_bound=4.0, y_bound=4.0, radius=2.0)
KW = dict(loss=LOSS, clip=1.0, epochs=4, batch_size=12, step_size=0.3)


def test_one_release_calibrated_exactly_to_epsilon():
    traj = dp_ftrl(X, Y, epsilon=2.0, delta=1e-5, rng=0, **KW)
    assert traj.iterates.shape == (40, 3) and traj.config["steps"] == 40
    (entry,) = traj.ledger.entries
    assert entry.label == "ftrl/gradients"
    assert traj.ledger.gaussian_epsilon(1e-5) == pytest.approx(2.0, rel=1e-9)
    # the default streams the optimal BLT for (T, k, b) = (40, 4, 10) at the same rho
    mech = optimal_blt(40, participations=4, separation=10)
    assert traj.config["mechanism"] == mech.name and traj.config["noise_mode"] == "recurrence"
    assert traj.config["requested_mechanism"].startswith("nu-dpftrl")
    assert traj.config["error_ratio"] <= 1.02
    pattern = dict(participations=4, separation=10)
    sens = release_sensitivity(mech, clip=1.0, batch_size=12, **pattern)
    assert entry.sensitivity == sens
    assert traj.config["pattern"] == "fixed-epoch"
    assert traj.releases["noisy_gradients"].shape == (40, 3)
    assert 0 <= traj.diagnostics["fraction_clipped"] <= 1


def test_dpsgd_sensitivity_is_sqrt_k_and_rho_budget_is_spent_exactly():
    traj = dp_ftrl(X, Y, rho=0.3, mechanism="dp-sgd", rng=0, **KW)
    (entry,) = traj.ledger.entries
    assert entry.sensitivity == pytest.approx(2 * np.sqrt(4))
    assert traj.ledger.rho == pytest.approx(0.3, rel=1e-12)
    assert traj.ledger.budget.remaining == pytest.approx(0.0, abs=1e-12)


def test_exact_mode_keeps_nu_dpftrl_and_its_declared_sensitivity():
    traj = dp_ftrl(X, Y, epsilon=2.0, delta=1e-5, noise_mode="regenerate", rng=0, **KW)
    (entry,) = traj.ledger.entries
    mech = nu_dpftrl(traj.config["nu"], steps=40)
    assert traj.config["mechanism"] == mech.name and traj.config["error_ratio"] == 1.0
    pattern = dict(participations=4, separation=10)
    assert entry.sensitivity == release_sensitivity(mech, clip=1.0, batch_size=12, **pattern)
    assert traj.ledger.gaussian_epsilon(1e-5) == pytest.approx(2.0, rel=1e-9)


def test_noise_modes_give_the_same_trajectory():
    a = dp_ftrl(X, Y, rho=0.5, noise_mode="regenerate", rng=3, **KW).iterates
    b = dp_ftrl(X, Y, rho=0.5, noise_mode="buffered", rng=3, **KW).iterates
    c = dp_ftrl(X, Y, rho=0.5, noise_mode="fft", rng=3, **KW).iterates
    assert np.array_equal(a, b)
    np.testing.assert_allclose(a, c, atol=1e-9)


def test_record_replay_on_a_worst_case_neighbour():
    """Reliability 3.3 for FTRL: same calls, ||C (G - G')||_F <= declared, same outputs."""
    X2, Y2 = X.copy(), Y.copy()
    X2[7], Y2[7] = 50.0, -50.0  # a record whose gradient saturates the clip
    with recording() as rec:
        t1 = dp_ftrl(X, Y, rho=0.5, rng=5, **KW)
    with replaying(rec) as rep:
        t2 = dp_ftrl(X2, Y2, rho=0.5, rng=5, **KW)
    (r1,), (r2,) = rec.releases, rep.releases
    assert r1.entry == r2.entry
    C = optimal_blt(40, participations=4, separation=10).encoder_matrix()
    diff = np.linalg.norm(C @ (r1.value - r2.value))
    assert 0 < diff <= r1.entry.sensitivity * (1 + 1e-12)
    assert np.array_equal(t1.iterates, t2.iterates)  # post-processing of the same release


def test_reshuffling_uses_min_separation_one():
    traj = dp_ftrl(X, Y, rho=0.5, schedule="reshuffle", rng=0, **KW)
    assert (traj.config["separation"], traj.config["pattern"]) == (1, "min-separation")
    with pytest.raises(ValueError, match="consecutive"):
        dp_ftrl(X, Y, rho=0.5, schedule="reshuffle", separation=10, rng=0, **KW)


def test_declared_pattern_must_hold():
    with pytest.raises(ValueError, match="min-separation"):
        dp_ftrl(X, Y, rho=0.5, separation=11, rng=0, **KW)  # a record joins every 10 steps
    with pytest.raises(ValueError, match="participations"):
        dp_ftrl(X, Y, rho=0.5, participations=3, rng=0, **KW)
    looser = dp_ftrl(X, Y, rho=0.5, participations=6, separation=5, rng=0, **KW)
    assert looser.config["pattern"] == "min-separation"


def test_budget_is_checked_before_anything_is_drawn():
    ledger = PrivacyLedger(budget=Budget(rho=0.1))
    with recording() as rec, pytest.raises(BudgetExceededError):
        dp_ftrl(X, Y, rho=0.5, ledger=ledger, rng=0, **KW)
    assert len(ledger) == 0 and len(rec) == 0


def test_momentum_schedule_and_custom_mechanism():
    sched = linear_cooldown(0.3, 40, cooldown=10)
    assert sched[0] == 0.3 and sched[-1] == pytest.approx(0.015)
    kw = {**KW, "step_size": sched}
    traj = dp_ftrl(X, Y, rho=0.5, momentum=0.9, mechanism=nu_dpftrl(0.05, steps=40), rng=0, **kw)
    assert traj.config["momentum"] == 0.9 and traj.config["nu"] is None


def test_softmax_function_loss_with_more_parameters_than_features():
    def grads(theta, Xb, yb):
        W = theta.reshape(Xb.shape[1], 3)
        Z = Xb @ W
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        P[np.arange(len(yb)), yb.astype(int)] -= 1.0
        return (Xb[:, :, None] * P[:, None, :]).reshape(len(yb), -1)

    loss = FunctionLoss(grads=grads, n_params=9, lipschitz=1.0)
    labels = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0)
    traj = dp_ftrl(X, labels, rho=1.0, rng=0, **{**KW, "loss": loss})
    assert traj.estimate.shape == (9,)


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        (dict(relation="add-remove"), ValueError),
        (dict(batch_size=121), ValueError),
        (dict(epochs=0), ValueError),
        (dict(epochs=2.5), TypeError),
        (dict(step_size=-0.1), ValueError),
        (dict(step_size=np.ones(3)), ValueError),
        (dict(momentum=1.0), ValueError),
        (dict(clip=float("nan")), ValueError),
        (dict(mechanism="dp-sgd", nu=0.1), TypeError),
        (dict(mechanism="adam"), ValueError),
        (dict(mechanism=nu_dpftrl(0.1, steps=39)), ValueError),
        (dict(nu=1.5), ValueError),
        (dict(order="random"), ValueError),
        (dict(theta0=np.zeros(4)), ValueError),
        (dict(epsilon=1.0), TypeError),
        (dict(rho=None), TypeError),
        (dict(noise_mode="lazy"), ValueError),
    ],
)
def test_bad_inputs_release_nothing(kwargs, exc):
    call = {**KW, "rho": 0.5, "rng": 0, **kwargs}
    if "epsilon" in kwargs:
        call.pop("rho")
    with recording() as rec, pytest.raises(exc):
        dp_ftrl(X, Y, **call)
    assert len(rec) == 0
