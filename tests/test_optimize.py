"""dpfit.minimize: dispatch, bad inputs (reliability §6, checked before any release), utility."""

import warnings

import numpy as np
import pytest
from scipy import optimize

import dpfit
from dpfit.exceptions import InsecureRandomnessWarning, LargeBudgetWarning
from dpfit.losses import FunctionLoss, LogisticLoss, SquaredDistanceLoss, SquaredLoss
from dpfit.mechanisms import recording

RNG = np.random.default_rng(7)
X = RNG.standard_normal((500, 3)) / 2
Y = np.clip(X @ np.array([1.0, -1.0, 0.5]), -1, 1)
LOSS = SquaredLoss(radius=2.0)
SPIDER = dict(method="kl-spider", gamma=1.0, kappa=2.0, loss_bound=1.0)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(rho=None), TypeError, "rho is required"),
        (dict(rho=-1.0), ValueError, "rho must be finite and > 0"),
        (dict(rho=float("nan")), ValueError, "rho"),
        (dict(rho=True), TypeError, "rho"),
        (dict(rho=np.ones(2)), TypeError, "rho"),
        (dict(rho=1.0, theta0=np.zeros(2)), ValueError, "theta0 must have length 3"),
        (dict(rho=1.0, theta0=np.array([0.0, np.nan, 0.0])), ValueError, "theta0"),
        (dict(rho=1.0, relation="swap"), ValueError, "relation must be one of"),
        (dict(rho=1.0, random_state="seed"), TypeError, "rng must be"),
        (dict(rho=1.0, random_state=0, rng=0), TypeError, "give random_state only"),
        (dict(rho=1.0, budget=0.5), TypeError, "budget must be a dpfit.Budget"),
        (dict(rho=1.0, budget=dpfit.Budget(rho=1.0), ledger=None), TypeError, "not both"),
        (dict(rho=1.0, clipping=1.0), TypeError, "clipping must be a bool"),
        (dict(rho=1.0, clip=1.0), TypeError, "no clip norm"),
        (dict(rho=1.0, method="bfgs"), ValueError, "method must be one of"),
        (dict(rho=1.0, steps=10), TypeError, "does not accept"),
        (dict(rho=1.0, method="noisy-gd", steps=2.5), TypeError, "steps must be an integer"),
        (dict(rho=1.0, method="noisy-gd", steps=0), ValueError, "steps must be in"),
        (dict(rho=1.0, method="noisy-gd", steps=3, step_size=0.0), ValueError, "step_size"),
        (dict(rho=1.0, **dict(SPIDER, gamma=0.0)), ValueError, "gamma"),
        (dict(rho=1.0, **dict(SPIDER, kappa=3.0)), ValueError, "kappa must be in"),
        (dict(rho=1.0, **dict(SPIDER, loss_bound=-1.0)), ValueError, "loss_bound"),
        (dict(rho=1.0, **dict(SPIDER, preset="fast")), ValueError, "preset"),
        (dict(rho=1.0, **dict(SPIDER, kappa=1.5, method="proximal-point")), ValueError, "kappa"),
        (dict(rho=1.0, method="adaptive-gd", select="best"), ValueError, "select"),
        (dict(rho=1.0, method="adaptive-gd", fail_prob=1.0), ValueError, "fail_prob"),
    ],
)
def test_bad_inputs_raise_before_any_release(kwargs, exc, match):
    with recording() as rec, pytest.raises(exc, match=match):
        dpfit.minimize(LOSS, (X, Y), **kwargs)
    assert len(rec) == 0


@pytest.mark.parametrize(
    "data, exc, match",
    [
        ((np.full((4, 3), np.nan), np.zeros(4)), ValueError, "X contains NaN"),
        ((X, Y[:-1]), ValueError, "same number of rows"),
        ((X[:, 0], Y), ValueError, "2-dimensional"),
        ((X.astype(object), Y), TypeError, "numeric"),
        (X, ValueError, "y is missing"),
    ],
)
def test_bad_data_raise_before_any_release(data, exc, match):
    with recording() as rec, pytest.raises(exc, match=match):
        dpfit.minimize(LOSS, data, rho=1.0)
    assert len(rec) == 0


def test_non_loss_and_non_smooth_loss_are_refused():
    with pytest.raises(TypeError, match=r"dpfit\.losses\.Loss"):
        dpfit.minimize(lambda w: w, (X, Y), rho=1.0)
    rough = dpfit.losses.LpLoss(1.5)
    with recording() as rec, pytest.raises(ValueError, match="smooth"):
        dpfit.minimize(rough, (X, Y), rho=1.0, **SPIDER)
    assert len(rec) == 0


def test_large_rho_warns():
    with pytest.warns(LargeBudgetWarning, match="rho=10"):
        dpfit.minimize(LOSS, (X, Y), rho=10.0, method="noisy-gd", steps=2, random_state=0)


def test_float32_and_int_inputs_are_upcast():
    traj = dpfit.minimize(
        SquaredDistanceLoss(),
        (X * 0).astype(np.int32),
        rho=1.0,
        method="noisy-gd",
        steps=2,
        random_state=0,
    )
    assert traj.estimate.dtype == np.float64


def test_seeded_runs_are_bit_identical_and_report_provenance():
    a = dpfit.minimize(LOSS, (X, Y), rho=1.0, random_state=3)
    b = dpfit.minimize(LOSS, (X, Y), rho=1.0, random_state=3)
    np.testing.assert_array_equal(a.iterates, b.iterates)
    assert a.seeded and a.noise_backend == "fast" and a.algorithm == "adaptive_gd"
    assert a.ledger.relation.value == "replace-one"


@pytest.mark.parametrize("method", ["noisy-gd", "adaptive-gd", "kl-spider", "proximal-point"])
def test_large_budget_recovers_the_regularised_logistic_minimiser(method):
    """With rho = 1e6 the noise is negligible (std ~ L0 sqrt(T/rho)/n < 1e-4)."""
    y = np.where(RNG.uniform(size=500) < 1 / (1 + np.exp(-X @ np.array([2.0, -1, 0]))), 1, -1)
    loss = LogisticLoss(l2=0.5, radius=2.0)
    ref = optimize.minimize(
        lambda w: loss.value(w, X, y), np.zeros(3), jac=lambda w: loss.grad(w, X, y), tol=1e-12
    ).x
    kw = {
        "noisy-gd": dict(steps=200),
        "adaptive-gd": dict(max_steps=2000),
        "kl-spider": dict(gamma=1.0, kappa=2.0, loss_bound=np.log(2)),  # mu = 0.5: gamma = 1
        # any L1w > 0 is valid for a convex loss (spec §2); 0.1 keeps T * T_in small
        "proximal-point": dict(
            gamma=1.0, kappa=2.0, loss_bound=np.log(2), inner_cap=50, weak_convexity=0.1
        ),
    }[method]
    with pytest.warns(LargeBudgetWarning):
        traj = dpfit.minimize(loss, (X, y), rho=1e6, method=method, random_state=1, **kw)
    excess = loss.value(traj.estimate, X, y) - loss.value(ref, X, y)
    assert 0 <= excess + 1e-12 and excess < 1e-4
    assert traj.rho <= 1e6 * (1 + 1e-12)


_EXTREME_OPTIONS = {
    "noisy-gd": dict(steps=5),
    "adaptive-gd": dict(max_steps=20),
    "kl-spider": dict(gamma=1.0, kappa=2.0, loss_bound=np.log(2)),
    "proximal-point": dict(gamma=1.0, kappa=2.0, loss_bound=np.log(2), inner_cap=4),
}


_EXTREME_LOSSES = {
    "logistic": LogisticLoss(l2=0.5, radius=2.0),
    "least-squares": FunctionLoss(  # x (x.w - y): overflows already at w = 0
        grads=lambda w, X, y: X * (X @ w - y)[:, None], lipschitz=1.0, smoothness=1.0
    ),
}


@pytest.mark.parametrize("record", ["huge", "-huge", "tiny", "mixed"])
@pytest.mark.parametrize("loss_name", sorted(_EXTREME_LOSSES))
@pytest.mark.parametrize("method", sorted(_EXTREME_OPTIONS))
def test_extreme_finite_record_neither_fails_nor_warns(method, loss_name, record):
    # One finite record at the edge of float64 overflows (or underflows) inside the
    # per-example gradients: its row is zeroed silently. A numpy RuntimeWarning, or an
    # error after a charge, would depend on (and reveal) that record.
    rng = np.random.default_rng(2)
    X2 = rng.standard_normal((2000, 3)) / 2
    y2 = np.where(X2 @ np.array([2.0, -1.0, 0.0]) > 0, 1.0, -1.0)
    X2[0] = {
        "huge": [1.7e308, 1.7e308, 1.0],
        "-huge": [-1.7e308, 1.0, 1.7e308],
        "tiny": [1e-308, 5e-324, -1e-308],
        "mixed": [1.7e308, -1.7e308, 1e-308],
    }[record]
    loss = _EXTREME_LOSSES[loss_name]
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose
        traj = dpfit.minimize(
            loss, (X2, y2), rho=1.0, method=method, random_state=3, **_EXTREME_OPTIONS[method]
        )
    assert len(rec) > 0 and all(np.isfinite(r.value).all() for r in rec.releases)
    assert np.isfinite(traj.estimate).all() and np.isfinite(traj.iterates).all()


def test_rng_is_a_deprecated_spelling_of_random_state():
    with pytest.warns(DeprecationWarning, match="use random_state"):
        old = dpfit.minimize(LOSS, (X, Y), rho=1.0, method="noisy-gd", steps=3, rng=5)
    new = dpfit.minimize(LOSS, (X, Y), rho=1.0, method="noisy-gd", steps=3, random_state=5)
    np.testing.assert_array_equal(old.estimate, new.estimate)


def test_minimize_spends_from_a_shared_budget():
    budget = dpfit.Budget(rho=1.5)
    traj = dpfit.minimize(
        LOSS, (X, Y), rho=1.0, method="noisy-gd", steps=3, random_state=0, budget=budget
    )
    assert budget.spent == pytest.approx(traj.ledger.rho) and budget.spent <= 1.0 + 1e-12
    with recording() as rec, pytest.raises(dpfit.BudgetExceededError):
        dpfit.minimize(LOSS, (X, Y), rho=1.0, method="noisy-gd", steps=3, budget=budget)
    assert len(rec) == 0 and budget.spent == pytest.approx(traj.ledger.rho)
