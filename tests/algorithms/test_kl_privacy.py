"""Record/replay checks for the KL optimisers: record on D, replay on a neighbour D'.

For every method: the same sequence of mechanism calls (count, labels, sensitivities,
noise), each query moving by at most its declared sensitivity, bit-identical outputs, and a
total rho as budgeted, including adaptive noisy GD, whose step count depends on noisy
releases. Plus the wrong-shape / non-finite gradient rules and the budget check.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpfit
from dpfit.exceptions import BudgetExceededError, SideConditionWarning
from dpfit.losses import FunctionLoss, SquaredLoss
from dpfit.mechanisms import recording, replaying
from dpfit.privacy import (
    Budget,
    PrivacyLedger,
    gaussian_epsilon,
    mean_sensitivity,
    zcdp_to_approx_dp,
)

N, D, RHO = 20_000, 3, 1.0
LOSS = SquaredLoss(y_bound=1.0, radius=2.0)  # L0 = 3, L1 = 1


def _dataset(seed=0, n=N):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.standard_normal(n), -1, 1)
    return X, y


def _neighbour(X, y):
    """Replace record 0 by one whose gradient saturates every clip (|residual| ~ 1e3)."""
    X2, y2 = X.copy(), y.copy()
    X2[0] = np.array([40.0, -40.0, 10.0])
    y2[0] = -1e3
    return X2, y2


CONFIGS = {
    "noisy-gd": dict(method="noisy-gd", steps=12),
    "adaptive-gd": dict(method="adaptive-gd"),
    "adaptive-gd-min-norm": dict(method="adaptive-gd", select="min-norm"),
    "kl-spider-pl": dict(method="kl-spider", gamma=1.0, kappa=2.0, loss_bound=1.0),
    "kl-spider-kappa-1.5": dict(method="kl-spider", gamma=1.0, kappa=1.5, loss_bound=0.5),
    "kl-spider-theory": dict(
        method="kl-spider", gamma=0.5, kappa=2.0, loss_bound=0.5, preset="theory"
    ),
    "proximal-point": dict(
        method="proximal-point", gamma=1.0, kappa=3.0, loss_bound=1.0, inner_cap=8
    ),
}
EXACT = {"noisy-gd", "proximal-point"}  # these always spend exactly rho


def _record_and_replay(config, D1, D2, **extra):
    with recording() as rec:
        t1 = dpfit.minimize(LOSS, D1, rho=RHO, random_state=11, **config, **extra)
    with replaying(rec) as rep:
        t2 = dpfit.minimize(LOSS, D2, rho=RHO, random_state=11, **config, **extra)
    return rec, rep, t1, t2


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_replay_on_neighbour(name):
    D1 = _dataset()
    rec, rep, t1, t2 = _record_and_replay(CONFIGS[name], D1, _neighbour(*D1))
    assert len(rec) > 0
    # 1. same sequence of calls (replaying raises otherwise): entries equal one by one
    assert rec.entries == rep.entries
    # 2. every query moves by at most its declared L2 sensitivity
    ratios = [
        np.linalg.norm(np.atleast_1d(a.value - b.value)) / a.entry.sensitivity
        for a, b in zip(rec.releases, rep.releases, strict=True)
    ]
    assert max(ratios) <= 1 + 1e-12
    # the neighbour is a real test: some query moves by a sizeable share of its sensitivity
    assert max(ratios) > 0.25
    # 3. post-processing invariance: everything released is bit-identical
    np.testing.assert_array_equal(t1.iterates, t2.iterates)
    np.testing.assert_array_equal(t1.estimate, t2.estimate)
    for key in t1.releases:
        np.testing.assert_array_equal(t1.releases[key], t2.releases[key])
    # 4. the realised spend is the sum of Delta^2/(2 sigma^2) over calls, <= rho, and the
    # same on both sides (post-processing); the guarantee is rho (a filter states its bound)
    total = math.fsum(e.sensitivity**2 / (2 * e.noise_std**2) for e in rec.entries)
    assert t1.rho_spent == pytest.approx(total, rel=1e-12) and t1.rho_spent == t2.rho_spent
    assert t1.rho_spent <= RHO * (1 + 1e-12)
    assert t1.rho == pytest.approx(RHO, rel=1e-12)
    if name in EXACT:
        assert t1.rho_spent == pytest.approx(RHO, rel=1e-12)


def test_kl_spider_spends_exactly_rho_when_no_phase_stops_early():
    D1 = _dataset()
    config = dict(CONFIGS["kl-spider-kappa-1.5"], loss_bound=0.5)
    traj = dpfit.minimize(LOSS, D1, rho=RHO, random_state=3, **config)
    schedule = dpfit.theory.spider_schedule(
        n=N,
        dim=D,
        rho=RHO,
        gamma=1.0,
        kappa=1.5,
        lipschitz=3.0,
        smoothness=1.0,
        loss_bound=0.5,
    )
    assert schedule.is_nontrivial and schedule.steps.max() > 1  # differences are queried
    full = traj.releases["phase_steps"] == schedule.steps
    assert traj.rho == pytest.approx(RHO, rel=1e-12)  # the guarantee: the worst case
    assert traj.rho_spent <= RHO * (1 + 1e-12)
    if full.all():
        assert traj.rho_spent == pytest.approx(RHO, rel=1e-12)
    # per phase: one anchor plus (steps - 1) differences at most
    (entry,) = traj.ledger.entries
    assert entry.counts["kl_spider/anchor"] == schedule.K


def test_adaptive_gd_step_count_is_random_but_replayed():
    D1, D2 = _dataset(), _neighbour(*_dataset())
    counts = set()
    for seed in range(6):
        with recording() as rec:
            t1 = dpfit.minimize(LOSS, D1, rho=RHO, random_state=seed, method="adaptive-gd")
        with replaying(rec):
            t2 = dpfit.minimize(LOSS, D2, rho=RHO, random_state=seed, method="adaptive-gd")
        assert len(t1.iterates) == len(t2.iterates)
        counts.add(len(t1.iterates))
    assert len(counts) > 1  # the count depends on noisy releases, and replay still matches


@pytest.mark.parametrize("method", ["adaptive-gd", "kl-spider-pl", "noisy-gd"])
def test_replay_under_add_remove_with_public_n(method):
    X, y = _dataset()
    Xp = np.vstack([X, [[40.0, 40.0, -40.0]]])
    yp = np.append(y, 1e3)
    config = CONFIGS[method]
    with recording() as rec:
        dpfit.minimize(
            LOSS, (X, y), rho=RHO, random_state=5, relation="add-remove", n_public=N, **config
        )
    with replaying(rec) as rep:
        dpfit.minimize(
            LOSS, (Xp, yp), rho=RHO, random_state=5, relation="add-remove", n_public=N, **config
        )
    assert rec.entries == rep.entries
    for a, b in zip(rec.releases, rep.releases, strict=True):
        moved = np.linalg.norm(np.atleast_1d(a.value - b.value))
        assert moved <= a.entry.sensitivity * (1 + 1e-12)
        if "difference" not in a.entry.label:  # add/remove: L0 / n_public, half of replace-one
            assert a.entry.sensitivity == mean_sensitivity(3.0, N, "add-remove")


def test_add_remove_requires_public_n():
    with recording() as rec, pytest.raises(ValueError, match="n_public is required"):
        dpfit.minimize(LOSS, _dataset(), rho=RHO, relation="add-remove", method="adaptive-gd")
    assert len(rec) == 0


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_wrong_shape_gradient_errors_at_first_call_before_any_release(name):
    calls = []

    def grads(w, X, y):
        calls.append(1)
        return np.zeros((X.shape[0], X.shape[1] + 1))

    bad = FunctionLoss(grads=grads, lipschitz=3.0, smoothness=1.0, weak_convexity=0.0)
    ledger = PrivacyLedger(budget=Budget(rho=RHO))
    with recording() as rec, pytest.raises(ValueError, match="per_example_grads returned shape"):
        dpfit.minimize(bad, _dataset(), rho=RHO, ledger=ledger, **CONFIGS[name])
    assert len(calls) == 1 and len(rec) == 0 and ledger.rho == 0.0


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_non_finite_per_example_gradient_is_zeroed_not_raised(name):
    X, y = _dataset()

    def grads(w, X, y):
        G = LOSS.per_example_grads(w, X, y)
        G[0] = np.nan
        G[1, 0] = -np.inf
        return G

    nan_loss = FunctionLoss(grads=grads, lipschitz=3.0, smoothness=1.0, weak_convexity=0.0)
    with recording() as rec:
        traj = dpfit.minimize(nan_loss, (X, y), rho=RHO, random_state=2, **CONFIGS[name])
    assert np.isfinite(traj.estimate).all() and len(rec) > 0
    # the first query is the mean gradient at theta0 with rows 0 and 1 set to 0
    G0 = LOSS.per_example_grads(np.zeros(D), X, y)
    G0[:2] = 0.0
    first = rec.releases[0].value
    expected = np.linalg.norm(G0.mean(axis=0)) if first.ndim == 0 else G0.mean(axis=0)
    np.testing.assert_allclose(first, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_budget_too_small_fails_before_any_draw(name):
    ledger = PrivacyLedger(budget=Budget(rho=RHO / 2))
    with recording() as rec, pytest.raises(BudgetExceededError, match="nothing was charged"):
        dpfit.minimize(LOSS, _dataset(), rho=RHO, ledger=ledger, **CONFIGS[name])
    assert len(rec) == 0 and ledger.rho == 0.0


@given(
    scales=st.lists(
        st.one_of(st.just(0.0), st.floats(1e-12, 1e12), st.just(float("nan"))),
        min_size=1,
        max_size=30,
    ),
    log_rho=st.floats(-4, 0.69),  # rho <= 4.9: above 5 the large-budget warning fires
    n=st.integers(5, 10**6),
    reserve=st.floats(0.05, 0.95),
)
def test_adaptive_filter_never_exceeds_rho(scales, log_rho, n, reserve):
    """Adversarial gradient-norm sequences (N_t anywhere from 0 to L0, which clipping
    enforces even with clipping=False): total <= rho.

    The default ledger carries a Budget(rho): an overshooting release would raise.
    """
    rho = 10.0**log_rho
    it = iter(scales * 200)

    def grads(w, X, y):
        return np.full(X.shape, next(it, 1.0))

    loss = FunctionLoss(grads=grads, lipschitz=1.0, smoothness=1.0)
    X = np.zeros((4, 2))
    traj = dpfit.algorithms.adaptive_gd(
        loss,
        X,
        np.zeros(4),
        rho=rho,
        rng=0,
        clipping=False,
        n_public=n,
        relation="add-remove",
        reserve_share=reserve,
        max_steps=400,
    )
    assert traj.rho_spent <= rho * (1 + 1e-12) and traj.rho == pytest.approx(rho, rel=1e-12)


@pytest.mark.parametrize(
    "options",
    [
        dict(method="kl-spider", gamma=1.0, kappa=2.0, loss_bound=1.0),
        dict(method="proximal-point", gamma=1.0, kappa=3.0, loss_bound=1.0),
    ],
)
def test_trivial_schedule_warns_and_releases_nothing(options):
    X, y = _dataset(n=50)
    with recording() as rec, pytest.warns(SideConditionWarning, match="nothing is released"):
        traj = dpfit.minimize(LOSS, (X, y), rho=0.01, random_state=0, **options)
    assert len(rec) == 0 and traj.rho == 0.0 and not traj.config["is_nontrivial"]
    np.testing.assert_array_equal(traj.estimate, np.zeros(D))


@pytest.mark.parametrize("name", ["adaptive-gd", "kl-spider-kappa-1.5"])
def test_filtered_runs_state_the_bound_not_the_realised_spend(name):
    # Adaptive GD (data-dependent noise and stop) and KL-Spider (early stop) spend a
    # data-dependent amount: only the filter's bound, fixed up front, is a guarantee. The
    # realised spend used to be reported as rho, statement and epsilon.
    ledger = PrivacyLedger(budget=Budget(rho=2 * RHO))
    with recording() as rec:
        traj = dpfit.minimize(
            LOSS, _dataset(), rho=RHO, random_state=3, ledger=ledger, **CONFIGS[name]
        )
    realised = math.fsum(e.sensitivity**2 / (2 * e.noise_std**2) for e in rec.entries)
    assert realised < 0.9 * RHO  # stopped early on this dataset
    assert traj.rho == ledger.rho == pytest.approx(RHO, rel=1e-12)
    assert ledger.budget.spent == pytest.approx(RHO, rel=1e-12)  # the whole bound, up front
    assert traj.rho_spent == pytest.approx(realised, rel=1e-12)
    (entry,) = ledger.entries
    assert entry.rho_spent == pytest.approx(realised, rel=1e-12) and entry.count == len(rec)
    assert ledger.epsilon(1e-5) == pytest.approx(zcdp_to_approx_dp(RHO, 1e-5), rel=1e-12)
    assert ledger.gaussian_epsilon(1e-5) == pytest.approx(
        gaussian_epsilon(math.sqrt(2 * RHO), 1e-5), rel=1e-12
    )
    text = ledger.statement(1e-5)
    assert text.startswith(f"Privacy: {RHO:.6g}-zCDP")
    assert f"Realised spend {realised:.6g} (data-dependent, not a guarantee" in text
