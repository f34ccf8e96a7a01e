"""Schedules of the KL algorithms: exact worst-case privacy cost, the spec's golden values."""

import math

import numpy as np
import pytest

from dpfit.mechanisms import rho_for_noise_std
from dpfit.privacy import mean_sensitivity
from dpfit.theory import (
    adaptive_gd_bound,
    adaptive_gd_params,
    gamma_from_pl,
    kl_rate,
    noisy_gd_steps,
    proximal_bound,
    proximal_schedule,
    spider_schedule,
    stationarity_bound,
)

B0 = dict(dim=10, gamma=1 / math.sqrt(2), lipschitz=3.0, smoothness=1.0, loss_bound=0.5)


def _spider_cost(s, lipschitz, smoothness):
    """Worst-case zCDP cost: K anchors + (T_k - 1) differences per phase (Delta^2/(2 sigma^2)),
    with the sensitivities the algorithm declares (mean_sensitivity of the clip bounds)."""
    total = s.K * rho_for_noise_std(mean_sensitivity(lipschitz, s.n, s.relation), s.anchor_noise)
    for T, step, sigma in zip(s.steps, s.step_lengths, s.difference_noise, strict=True):
        if T > 1:
            delta = mean_sensitivity(smoothness * step, s.n, s.relation)
            total += (T - 1) * rho_for_noise_std(delta, sigma)
    return total


@pytest.mark.parametrize("kappa", [1.0, 1.2, 1.5, 1.8, 2.0])
@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
@pytest.mark.parametrize("preset", ["practical", "theory"])
def test_spider_worst_case_costs_exactly_rho(kappa, relation, preset):
    s = spider_schedule(n=10**6, rho=0.5, kappa=kappa, relation=relation, preset=preset, **B0)
    assert s.is_nontrivial
    assert _spider_cost(s, 3.0, 1.0) == pytest.approx(0.5, rel=1e-12)
    if kappa == 2.0:  # every T_k = 1: no difference query, anchors get all of rho
        assert (s.steps == 1).all() and s.rho_anchor == 0.5 and s.rho_difference == 0.0
    else:
        assert s.steps.max() > 1 and s.rho_anchor == s.rho_difference == 0.25


def test_spider_golden_values_of_the_spec_b0():
    # spec §6.2 B0 (n = 1e4, d = 10, rho = 1, theory preset): K = 460 and trivial (floor = F0)
    s = spider_schedule(n=10_000, rho=1.0, kappa=2.0, preset="theory", **B0)
    assert s.K == 460 and not s.is_nontrivial and s.floor == 0.5
    # the paper-style floor is 16 (a' + b') gamma L0 sqrt(K d ln(1/beta')) / (n sqrt rho):
    # kappa = 2, rho_A = rho under replace-one gives a' = 2 sqrt(1/2), b' = 0
    s = spider_schedule(n=10**6, rho=1.0, kappa=2.0, preset="theory", **B0)
    c = 16 * math.sqrt(2)
    expected = (
        c * B0["gamma"] * 3.0 * math.sqrt(s.K * 10 * math.log(1 / s.fail_prob_step)) / 10**6
    ) ** 2
    assert s.floor == pytest.approx(expected, rel=1e-12)


def test_spider_paper_floor_constant_is_40_with_half_splits():
    # spec §3.1: replace-one with rho/2 splits gives a' = 2, b' = 1/2, so 16 (a' + b') = 40
    kw = dict(B0, loss_bound=0.5, gamma=1.0)
    s = spider_schedule(n=10**7, rho=1.0, kappa=1.5, preset="theory", **kw)
    expected = (40 * 3.0 * math.sqrt(s.K * 10 * math.log(1 / s.fail_prob_step)) / 10**7) ** 1.5
    assert s.floor == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("kappa", [1.1, 1.5, 1.9])
def test_spider_schedule_structure(kappa):
    s = spider_schedule(n=10**6, rho=1.0, kappa=kappa, **B0)
    F0, g = s.loss_bound, B0["gamma"]
    # targets decrease geometrically to the floor, which is reached by phase K
    assert np.all(np.diff(s.targets) <= 0) and s.targets[-1] == pytest.approx(s.floor)
    # T_k = ceil((F0 / Phi_k)^((2 - kappa)/kappa)), step s_k = Phi^(1/kappa) / (4 gamma L1)
    raw = (F0 / s.targets) ** ((2 - kappa) / kappa)
    assert np.all(s.steps >= raw * (1 - 1e-9)) and np.all(s.steps < raw + 1)
    np.testing.assert_allclose(s.step_lengths, s.targets ** (1 / kappa) / (4 * g), rtol=1e-12)
    np.testing.assert_allclose(s.thresholds, 0.875 * s.targets ** (1 / kappa) / g, rtol=1e-12)
    assert s.radius == pytest.approx(float(np.sum(s.steps * s.step_lengths)))
    # spec §3.1: sqrt(Q_k) sigma_k <= F0^(1/kappa) sqrt(K) / (2 gamma n sqrt(2 rho_D)), for
    # exact sensitivities; 1e-3 allows for any float-sum rounding term in the declared ones
    Q = s.steps - 1
    bound = F0 ** (1 / kappa) * math.sqrt(s.K) / (2 * g * 10**6 * math.sqrt(2 * 0.5))
    assert np.all(np.sqrt(Q[Q > 0]) * s.difference_noise[Q > 0] <= bound * (1 + 1e-3))


def test_spider_f0_is_clamped_and_long_schedules_refused():
    s = spider_schedule(n=10**6, rho=1.0, kappa=2.0, **dict(B0, loss_bound=100.0))
    assert s.loss_bound == pytest.approx((B0["gamma"] * 3.0) ** 2)
    with pytest.raises(ValueError, match="schedule too long"):
        spider_schedule(n=10**6, rho=1.0, kappa=1.0, max_steps=1_000, **B0)  # 8226 steps
    with pytest.raises(ValueError, match="kappa"):
        spider_schedule(n=100, rho=1.0, kappa=2.5, **B0)
    with pytest.raises(ValueError, match="preset"):
        spider_schedule(n=100, rho=1.0, kappa=2.0, preset="fast", **B0)


@pytest.mark.parametrize("kappa", [2.0, 3.0, 5.0])
def test_proximal_schedule_costs_exactly_rho(kappa):
    s = proximal_schedule(
        n=10**5,
        dim=5,
        rho=2.0,
        gamma=3.0,
        kappa=kappa,
        lipschitz=1.5,
        loss_bound=0.01,
        inner_cap=500,
    )
    delta = mean_sensitivity(1.5, 10**5)  # 2 L0 / n (plus float-sum rounding, if any)
    cost = s.T * (s.inner_steps - 1) * rho_for_noise_std(delta, s.inner_noise)
    assert cost == pytest.approx(2.0, rel=1e-12)
    # convex default L1w = F0^((2-kappa)/kappa) / (32 gamma^2) makes T's multiplier 2
    F0 = s.loss_bound
    assert s.weak_convexity == pytest.approx(F0 ** ((2 - kappa) / kappa) / (32 * 9.0))
    G = math.log(F0) + kappa * math.log(10**5 * math.sqrt(2.0) / (3.0 * 1.5 * math.sqrt(5)))
    assert s.T == math.ceil(2 * G)
    assert s.prox_radius == pytest.approx(1.5 / (2 * s.weak_convexity))
    assert s.inner_steps == min(500, s.inner_steps_uncapped)
    assert 0 < proximal_bound(s, gamma=3.0, kappa=kappa, lipschitz=1.5) <= F0


def test_adaptive_defaults_are_the_papers_noise_under_replace_one():
    n, rho, L0 = 5000, 0.3, 2.0
    p = adaptive_gd_params(n=n, dim=7, rho=rho, lipschitz=L0, smoothness=4.0)
    # rel 1e-6: the declared sensitivity may include a float-sum rounding term (~n^2 2^-53)
    assert p.norm_noise == pytest.approx(L0 / (math.sqrt(n) * rho**0.25), rel=1e-6)
    assert p.floor_noise == pytest.approx(2 * L0 / (n * math.sqrt(rho)), rel=1e-6)
    assert p.reserve == pytest.approx(rho / 2) and p.step_size == 1 / 8
    assert p.norm_cost == pytest.approx(2 * math.sqrt(rho) / n)
    assert p.max_regular_steps == int((rho / 2) // (2 * math.sqrt(rho) / n))
    assert p.ell == pytest.approx(math.log(n * math.sqrt(rho) / 0.05))


def test_rates_and_bounds():
    assert kl_rate("spider", n=100, dim=4, rho=4.0, kappa=1.5) == pytest.approx(0.01**1.5)
    # kappa = 2: d/(n^2 rho) + 1/(n sqrt rho) (spec §4 special case)
    r = kl_rate("adaptive", n=100, dim=4, rho=4.0, kappa=2.0)
    assert r == pytest.approx(4 / (100**2 * 4) + 1 / 200)
    with pytest.raises(ValueError, match="method"):
        kl_rate("sgd", n=100, dim=4, rho=4.0, kappa=2.0)
    assert gamma_from_pl(0.5) == 1.0
    assert noisy_gd_steps(smoothness=1.0, strong_convexity=0.5, n=math.ceil(math.e**3)) == 7
    small = adaptive_gd_bound(
        n=10**6,
        dim=10,
        rho=1.0,
        gamma=1.0,
        kappa=2.0,
        lipschitz=3.0,
        smoothness=1.0,
        loss_bound=0.5,
    )
    large = adaptive_gd_bound(
        n=10**4,
        dim=10,
        rho=1.0,
        gamma=1.0,
        kappa=2.0,
        lipschitz=3.0,
        smoothness=1.0,
        loss_bound=0.5,
    )
    assert 0 < small < large
    s1 = stationarity_bound(
        n=1000, dim=5, rho=1.0, lipschitz=1.0, smoothness=1.0, loss_bound=1.0, steps=1
    )
    s2 = stationarity_bound(
        n=1000, dim=5, rho=1.0, lipschitz=1.0, smoothness=1.0, loss_bound=1.0, steps=100
    )
    assert s2 <= s1
