"""DP-2S-GD, 2S-GD and the public-first-stage variant (Liang et al. 2025; spec 3, 6.6)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfit import BudgetExceededError, LargeBudgetWarning
from dpfit.algorithms.two_stage import dp_second_stage_gd, dp_two_stage_gd, two_stage_gd
from dpfit.baselines import two_sls
from dpfit.datasets import draw_iv_design
from dpfit.exceptions import InsecureRandomnessWarning
from dpfit.inference import confidence_interval
from dpfit.mechanisms import recording, replaying
from dpfit.privacy import Budget, PrivacyLedger, mean_sensitivity

KW = {
    "rho_theta": 1.0,
    "rho_beta": 1.0,
    "clip_theta": 50.0,
    "clip_beta": 100.0,
    "steps": 20,
    "step_size_theta": 1.0,
    "step_size_beta": 0.02,
}


@pytest.fixture(scope="module")
def data():
    design = draw_iv_design(3, 4, 3, rng=np.random.default_rng(7))
    X, y, Z = design.sample(800, np.random.default_rng(8))
    return X, y, Z


def _alpha(Z, X):
    """alpha = 1 / lambda_max(H_hat): a stable beta step size (spec 3.1)."""
    theta = two_sls(X, np.zeros(len(X)), Z).first_stage
    H = theta.T @ (Z.T @ Z / len(Z)) @ theta
    return 1.0 / np.linalg.eigvalsh(H)[-1]


@pytest.mark.parametrize("p, q", [(5, 5), (3, 7)])
def test_two_stage_gd_converges_to_2sls(p, q):
    """Spec 6.6 claim 1: the unclipped, noiseless iteration reaches 2SLS to numerical precision."""
    design = draw_iv_design(p, q, p, rng=np.random.default_rng(p + q))
    X, y, Z = design.sample(2000, np.random.default_rng(1))
    target = two_sls(X, y, Z)
    traj = two_stage_gd(X, y, Z, steps=400, step_size_theta=1.0, step_size_beta=_alpha(Z, X))
    assert np.linalg.norm(traj.estimate - target.params) < 1e-9 * np.linalg.norm(target.params)
    np.testing.assert_allclose(traj.releases["theta"][-1], target.first_stage, atol=1e-9)
    errors = np.linalg.norm(traj.iterates - target.params, axis=1)
    assert errors[4] > 1e-3 * np.linalg.norm(target.params)  # far after 5 steps: can fail
    assert len(traj.ledger) == 0 and traj.config["private"] is False


def test_first_beta_step_is_pure_noise(data):
    """Theta^(0) = 0, so the first beta gradient is exactly 0 (spec pitfall 6)."""
    X, y, Z = data
    with recording() as rec:
        dp_two_stage_gd(X, y, Z, **KW, rng=0)
    assert rec.releases[1].entry.label == "two_stage/beta-gradient"
    assert np.array_equal(rec.releases[1].value, np.zeros(3))
    assert [r.entry.label.split("/")[1] for r in rec.releases[:4]] == [
        "theta-gradient",
        "beta-gradient",
        "theta-gradient",
        "beta-gradient",
    ]


@pytest.mark.parametrize("calibration, factor", [("exact", 1.0), ("paper", 0.5)])
def test_accounting(data, calibration, factor):
    """Spec 6.6 claim 2: exact spends rho1 + rho2; Prop. 3.1's lambda spends half of it."""
    X, y, Z = data
    n, T = len(X), KW["steps"]
    traj = dp_two_stage_gd(X, y, Z, **KW, noise_calibration=calibration, rng=0)
    assert traj.rho == pytest.approx(factor * 2.0, rel=1e-12)
    assert len(traj.ledger) == 2 * T
    k = 1.0 if calibration == "exact" else math.sqrt(2.0)  # paper: (2 g / n) sqrt(T / rho)
    # Delta = mean_sensitivity(g, n): 2 g / n plus the float-rounding relaxation (~1e-12 here).
    for stage in ("theta", "beta"):
        delta = mean_sensitivity(KW[f"clip_{stage}"], n)
        assert delta == pytest.approx(2 * KW[f"clip_{stage}"] / n, rel=1e-9)
        assert traj.config[f"noise_std_{stage}"] == pytest.approx(
            k * delta * math.sqrt(T / (2 * KW[f"rho_{stage}"])), rel=1e-12
        )
    for e in traj.ledger:
        clip = KW["clip_theta"] if "theta" in e.label else KW["clip_beta"]
        assert e.sensitivity == mean_sensitivity(clip, n)


def _neighbour(X, y, Z, z_val, x_val, y_val):
    X2, y2, Z2 = X.copy(), y.copy(), Z.copy()
    Z2[0], X2[0], y2[0] = z_val, x_val, y_val
    return X2, y2, Z2


@pytest.mark.parametrize(
    "z_val, x_val, y_val",
    [(1e3, -1e3, 1e4), (0.0, 0.0, 0.0), (-50.0, 200.0, -1e6), (1e-300, 1e300, -1e300)],
)
def test_record_replay_on_neighbours(data, z_val, x_val, y_val):
    """Reliability 3.3: same calls, every query within its declared sensitivity, outputs equal."""
    X, y, Z = data
    with recording() as rec:
        a = dp_two_stage_gd(X, y, Z, **KW, rng=3)
    with replaying(rec) as rep:
        b = dp_two_stage_gd(*_neighbour(X, y, Z, z_val, x_val, y_val), **KW, rng=4)
    assert len(rec) == len(rep) == 2 * KW["steps"]
    moved = 0
    for r1, r2 in zip(rec.releases, rep.releases, strict=True):
        assert r1.entry == r2.entry
        diff = np.linalg.norm(r1.value - r2.value)
        assert diff <= r1.entry.sensitivity * (1 + 1e-12)
        moved += diff > 0
    assert moved > 0
    assert np.array_equal(a.iterates, b.iterates) and np.array_equal(a.estimate, b.estimate)
    assert np.array_equal(a.releases["theta"], b.releases["theta"])
    assert a.rho == b.rho


def test_public_first_stage_record_replay(data):
    X, y, Z = data
    theta = np.ones((4, 3))  # a public first stage (not fit on X, y, Z)
    kw = {"first_stage": theta, "rho": 1.0, "clip": 10.0, "steps": 10, "step_size": 0.05}
    with recording() as rec:
        a = dp_second_stage_gd(X, y, Z, **kw, rng=0)
    with replaying(rec) as rep:
        b = dp_second_stage_gd(*_neighbour(X, y, Z, 1e3, -1e3, 1e4), **kw, rng=1)
    for r1, r2 in zip(rec.releases, rep.releases, strict=True):
        assert np.linalg.norm(r1.value - r2.value) <= r1.entry.sensitivity * (1 + 1e-12)
    assert np.array_equal(a.iterates, b.iterates)
    assert a.rho == pytest.approx(1.0, rel=1e-12) and len(a.ledger) == 10


def test_first_stage_fit_on_private_data_breaks_the_beta_sensitivity():
    """Spec 3.3 / verification item 2: Lemma F.1's 2 gamma2 / n fails when Theta uses the data.

    n = 1000, p = q = 1, gamma2 = 1: replacing one x_i moves the mean clipped beta gradient
    at the data-fitted Theta by far more than 2 gamma2 / n = 0.002 (0.075 with this seed).
    """
    rng = np.random.default_rng(0)
    n = 1000
    z = rng.standard_normal((n, 1))
    x = z + 0.5 * rng.standard_normal((n, 1))
    y = x[:, 0] + 0.5 * rng.standard_normal(n)
    x2 = x.copy()
    x2[0] = -3000.0

    def beta_gradient(xx):
        theta = two_stage_gd(xx, y, z, steps=1, step_size_theta=1.0, step_size_beta=1.0)
        theta1 = theta.releases["theta"][0]  # Theta^(1), not clipped, not noised
        with recording() as rec:
            dp_second_stage_gd(
                xx,
                y,
                z,
                first_stage=np.stack([theta1, theta1]),
                rho=1.0,
                clip=1.0,
                steps=2,
                step_size=1.0,
                rng=0,
            )
        return rec.releases[0].value

    assert np.linalg.norm(beta_gradient(x) - beta_gradient(x2)) > 10 * 2.0 / n  # 37x here


def test_seeded_runs_are_reproducible(data):
    X, y, Z = data
    a = dp_two_stage_gd(X, y, Z, **KW, rng=11)
    b = dp_two_stage_gd(X, y, Z, **KW, rng=11)
    c = dp_two_stage_gd(X, y, Z, **KW, rng=12)
    assert np.array_equal(a.iterates, b.iterates)
    assert not np.array_equal(a.iterates, c.iterates)
    assert a.seeded and a.noise_backend == "fast"


def test_small_budget_fails_before_any_draw(data):
    X, y, Z = data
    budget = Budget(rho=1.5)
    ledger = PrivacyLedger(budget=budget)
    with recording() as rec, pytest.raises(BudgetExceededError, match="nothing was charged"):
        dp_two_stage_gd(X, y, Z, **KW, ledger=ledger, rng=0)
    assert len(rec) == 0 and len(ledger) == 0 and budget.spent == 0.0
    # A shared ledger with enough budget is charged in full.
    big = PrivacyLedger(budget=Budget(rho=3.0))
    dp_two_stage_gd(X, y, Z, **KW, ledger=big, rng=0)
    assert big.rho == pytest.approx(2.0, rel=1e-12)


def test_independent_runs(data):
    X, y, Z = data
    traj = dp_two_stage_gd(X, y, Z, **{**KW, "steps": 30}, runs=5, rng=0)
    assert traj.iterates.shape == (150, 3) and traj.releases["theta"].shape == (150, 4, 3)
    np.testing.assert_allclose(traj.estimate, traj.iterates[29::30].mean(axis=0))
    assert traj.rho == pytest.approx(2.0, rel=1e-12)
    one = dp_two_stage_gd(X, y, Z, **{**KW, "steps": 30}, rng=0)
    assert traj.config["noise_std_beta"] == pytest.approx(
        math.sqrt(5) * one.config["noise_std_beta"], rel=1e-12
    )
    center, lower, upper = confidence_interval(traj, "independent-runs", burn_in=10)
    assert np.all(lower < center) and np.all(center < upper)


def test_large_total_budget_warns(data):
    X, y, Z = data
    with pytest.warns(LargeBudgetWarning, match="rho_theta"):
        dp_two_stage_gd(X, y, Z, **{**KW, "rho_theta": 5.0, "rho_beta": 5.0}, rng=0)


BAD = [
    ({"rho_theta": 0.0}, ValueError, "rho_theta"),
    ({"rho_beta": float("nan")}, ValueError, "rho_beta"),
    ({"rho_theta": float("inf")}, ValueError, "rho_theta"),
    ({"rho_theta": True}, TypeError, "rho_theta"),
    ({"rho_beta": None}, TypeError, "both rho_theta and rho_beta"),
    ({"clip_theta": -1.0}, ValueError, "clip_theta"),
    ({"clip_beta": float("inf")}, ValueError, "clip_beta"),
    ({"steps": 2.5}, TypeError, "steps"),
    ({"steps": 0}, ValueError, "steps"),
    ({"step_size_theta": 0.0}, ValueError, "step_size_theta"),
    ({"noise_calibration": "Paper"}, ValueError, "noise_calibration"),
    ({"runs": 0}, ValueError, "runs"),
    ({"relation": "add-remove"}, ValueError, "replace-one"),
    ({"relation": "swap"}, ValueError, "relation must be one of"),
    ({"ledger": PrivacyLedger(relation="add-remove")}, ValueError, "relation"),
    ({"rng": "seed"}, TypeError, "rng"),
]


@pytest.mark.parametrize("override, exc, match", BAD)
def test_bad_hyperparameters_release_nothing(data, override, exc, match):
    X, y, Z = data
    with recording() as rec, pytest.raises(exc, match=match):
        dp_two_stage_gd(X, y, Z, **{**KW, **override})
    assert len(rec) == 0


def _bad_data(X, y, Z):
    Xn = X.copy()
    Xn[3, 1] = np.nan
    yi = y.copy()
    yi[5] = np.inf
    Zi = Z.copy()
    Zi[0, 0] = -np.inf
    return [
        ((X, y, Z[:, :2]), "under-identified"),
        ((X, y[:-1], Z), "same number of rows"),
        ((X, y, Z[:-1]), "same number of rows"),
        ((Xn, y, Z), "X contains NaN or infinite"),
        ((X, yi, Z), "y contains NaN or infinite"),
        ((X, y, Zi), "Z contains NaN or infinite"),
        ((X[:0], y[:0], Z[:0]), "no rows"),
        ((X[:, 0], y, Z), "2-dimensional"),
    ]


@pytest.mark.parametrize("case", range(8))
@pytest.mark.parametrize("algorithm", ["dp", "public-first-stage", "non-private"])
def test_bad_data_gives_clear_errors_before_any_noise(data, case, algorithm):
    args, match = _bad_data(*data)[case]
    with recording() as rec, pytest.raises(ValueError, match=match):
        if algorithm == "dp":
            dp_two_stage_gd(*args, **KW, rng=0)
        elif algorithm == "public-first-stage":
            dp_second_stage_gd(
                *args,
                first_stage=np.ones((4, 3)),
                rho=1.0,
                clip=1.0,
                steps=3,
                step_size=0.1,
                rng=0,
            )
        else:
            two_stage_gd(*args, steps=3, step_size_theta=1.0, step_size_beta=0.1)
    assert len(rec) == 0


def test_error_messages_do_not_echo_data(data):
    X, y, Z = data
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError) as info:
        dp_two_stage_gd(Xn, y, Z, **KW)
    message = str(info.value)
    assert message.startswith("X contains NaN or infinite values;")  # an array: no column
    assert not any(ch.isdigit() for ch in message)  # no value, no row index


@pytest.mark.parametrize("shape", [(3, 4), (10, 4, 3), (4,)])
def test_first_stage_shape_is_checked(data, shape):
    X, y, Z = data
    with pytest.raises(ValueError, match="first_stage"):
        dp_second_stage_gd(
            X, y, Z, first_stage=np.ones(shape), rho=1.0, clip=1.0, steps=3, step_size=0.1
        )


def test_dp_error_to_2sls_falls_with_rho(data):
    """Acceptance: the mean error to 2SLS over 20 seeds falls as rho grows (0.1 -> 1 -> 10).

    Each step of rho multiplies the noise std by 1/sqrt(10); with 20 runs the standard error
    of each mean error is well under a third of the gap between neighbouring rho.
    """
    X, y, Z = data
    target = two_sls(X, y, Z).params
    alpha = _alpha(Z, X)
    means = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LargeBudgetWarning)
        for rho in (0.1, 1.0, 10.0):
            errs = [
                np.linalg.norm(
                    dp_two_stage_gd(
                        X,
                        y,
                        Z,
                        **{
                            **KW,
                            "rho_theta": rho / 2,
                            "rho_beta": rho / 2,
                            "step_size_beta": alpha,
                            "steps": 30,
                        },
                        rng=s,
                    ).estimate
                    - target
                )
                for s in range(20)
            ]
            means.append(np.mean(errs))
    assert means[0] > 2 * means[1] > 4 * means[2]


def _extreme_record_data(value):
    """Strong first stage (Theta -> 3) and one finite record z = value: w = Theta z overflows."""
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((300, 1))
    X = 3.0 * Z + rng.standard_normal((300, 1))
    y = 2.0 * X[:, 0] + rng.standard_normal(300)
    Z[0, 0] = value
    return X, y, Z


@pytest.mark.parametrize("value", [1.7e308, -1.7e308, 1e-308])
@pytest.mark.parametrize("algorithm", ["dp_two_stage_gd", "dp_second_stage_gd"])
def test_extreme_finite_record_neither_fails_nor_warns_after_a_charge(value, algorithm):
    # A record whose w_i = Theta^T z_i overflows has clip factor 0; its *features* must be
    # zeroed too (inf * 0 = NaN made the beta query non-finite and the run raise after
    # releases were charged, revealing the record). No numpy warning may depend on it.
    X, y, Z = _extreme_record_data(value)
    ledger = PrivacyLedger(budget=Budget(rho=1.0))
    common = {"steps": 10, "ledger": ledger, "rng": 1}
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose
        if algorithm == "dp_two_stage_gd":
            traj = dp_two_stage_gd(
                X, y, Z, rho_theta=0.5, rho_beta=0.5, clip_theta=5.0, clip_beta=5.0,
                step_size_theta=1.0, step_size_beta=0.5, **common,
            )  # fmt: skip
        else:
            traj = dp_second_stage_gd(
                X, y, Z, first_stage=np.array([[3.0]]), rho=1.0, clip=5.0, step_size=0.5,
                **common,
            )  # fmt: skip
    assert ledger.rho == pytest.approx(1.0, rel=1e-12)
    assert len(rec) == (20 if algorithm == "dp_two_stage_gd" else 10)
    assert all(np.isfinite(r.value).all() for r in rec.releases)
    assert np.isfinite(traj.iterates).all() and np.isfinite(traj.releases["theta"]).all()
