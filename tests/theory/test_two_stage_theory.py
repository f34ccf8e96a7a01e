"""Theory of DP-2S-GD: spec 4's worked values, eq. 3 / eq. 8 identities, the tuning helper."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfit.algorithms.two_stage import dp_two_stage_gd, two_stage_gd
from dpfit.baselines import two_sls
from dpfit.datasets import draw_iv_design
from dpfit.theory.two_stage import (
    Spectra,
    bound_based_clips,
    concentration_terms,
    contraction_rates,
    error_bound,
    heuristic_clip,
    iteration_regimes,
    step_sizes,
)
from dpfit.theory.two_stage_tuning import recommend_hyperparameters


@pytest.mark.parametrize(
    "n, q, delta, eta_paper, eta_max, clip",
    [
        (1000, 5, 0.141, 0.768, 1.535, 37.2),
        (2000, 5, 0.100, 0.826, 1.653, 38.3),
        (1000, 50, 0.294, 0.597, None, 119.5),
    ],
)
def test_worked_values_of_spec_4(n, q, delta, eta_paper, eta_max, clip):
    """Spec 4 table (unit constants, tau = 5), to the printed digits."""
    s = concentration_terms(n, q, q, theta_norm=1e3, theta_min_singular=1e2)
    assert math.sqrt(s.zz[1]) - 1 == pytest.approx(delta, abs=5e-4)
    eta, _ = step_sizes(s, "paper")
    assert eta == pytest.approx(eta_paper, abs=5e-4)
    if eta_max is not None:
        assert step_sizes(s, "max")[0] == pytest.approx(eta_max, abs=5e-4)
    assert heuristic_clip(n, q, 20) == pytest.approx(clip, abs=0.05)


def test_iteration_regimes_match_spec_4():
    """Tmax ~ 25 rho1 and T2 ~ 42 rmin at n = 1000, p = q = 5; Tmax ~ 0.03 rho1 at p = q = 50."""
    r = iteration_regimes(n=1000, p=5, q=5, rho_theta=2.0, rho_beta=3.0, kappa=0.5)
    assert r["Tmax"] == pytest.approx(25 * 2.0, rel=1e-9)
    assert r["T2"] == pytest.approx(42.2 * 2.0, rel=2e-3)
    r50 = iteration_regimes(n=1000, p=50, q=50, rho_theta=1.0, rho_beta=1.0, kappa=0.5)
    assert r50["Tmax"] == pytest.approx(0.03, abs=0.005)


def test_step_size_identities():
    """eq. 8: kappa_beta* = gbar / (gbar + gund), kappa_Theta* = 2 delta / (1 + delta^2);
    'paper' steps are half of eq. 3's bounds."""
    d = 0.2
    s = Spectra(zz=((1 - d) ** 2, (1 + d) ** 2), h=(0.5, 3.0))
    k_theta, k_beta, kappa = contraction_rates(s, *step_sizes(s, "optimal"))
    assert k_beta == pytest.approx(3.0 / 3.5, rel=1e-12)
    assert k_theta == pytest.approx(2 * d / (1 + d**2), rel=1e-12)
    assert kappa == max(k_theta, k_beta)
    np.testing.assert_allclose(np.array(step_sizes(s, "max")), 2 * np.array(step_sizes(s, "paper")))
    assert step_sizes(s, "max")[1] == pytest.approx(4 / (2 * 3.0 + 0.5))
    assert contraction_rates(s, *step_sizes(s, "max"))[2] == pytest.approx(1.0)  # boundary


def test_error_bound_shape():
    """Decay, then plateau, then sqrt(T) growth (Fig. 2), with a finite interior minimiser."""
    T = np.arange(1, 5001)
    b = error_bound(
        T, n=10_000, p=2, q=2, rho_theta=1.0, rho_beta=1.0, kappa_theta=0.5, kappa_beta=0.8
    )
    best = int(np.argmin(b["total"]))
    assert 0 < best < len(T) - 1
    assert np.all(np.diff(b["optimisation"]) < 0) and np.all(np.diff(b["privacy"]) > 0)
    assert b["privacy"][399] == pytest.approx(2 * b["privacy"][99])  # sqrt(T)
    refined = error_bound(
        T,
        n=10_000,
        p=2,
        q=2,
        rho_theta=1.0,
        rho_beta=1.0,
        kappa_theta=0.5,
        kappa_beta=0.8,
        refined=True,
    )
    assert refined["optimisation"][0] == pytest.approx(0.5**0.5 + 0.8**0.5)


def test_bound_based_clips_never_bind():
    """With the stated bounds, no per-example gradient of the first step exceeds the clips."""
    rng = np.random.default_rng(0)
    Z = rng.uniform(-1, 1, size=(500, 3))
    X = rng.uniform(-1, 1, size=(500, 2))
    y = rng.uniform(-2, 2, size=500)
    g1, g2 = bound_based_clips(
        z_norm=math.sqrt(3), x_norm=math.sqrt(2), y_abs=2.0, theta_norm=3.0, beta_norm=2.0
    )
    theta = rng.normal(size=(3, 2))
    theta *= 3.0 / np.linalg.norm(theta, 2)
    beta = np.array([2.0, 0.0])
    r = Z @ theta - X
    g1_norms = np.linalg.norm(Z, axis=1) * np.linalg.norm(r, axis=1)
    w = Z @ theta
    g2_norms = np.linalg.norm(w, axis=1) * np.abs(w @ beta - y)
    assert g1_norms.max() <= g1 and g2_norms.max() <= g2


def test_concentration_terms_refuse_vacuous_settings():
    with pytest.raises(ValueError, match="delta"):
        concentration_terms(20, 5, 5, theta_norm=5.0, theta_min_singular=1.0)
    with pytest.raises(ValueError, match="psi"):
        concentration_terms(1000, 5, 5, theta_norm=5.0, theta_min_singular=0.5)
    with pytest.raises(ValueError, match="zz_bounds"):
        Spectra(zz=(2.0, 1.0), h=(1.0, 2.0))
    with pytest.raises(TypeError, match="h_bounds"):
        Spectra(zz=(1.0, 2.0), h=3.0)


def test_recommendation_is_consistent_with_the_algorithm():
    """The recommended noise stds are exactly what dp_two_stage_gd uses, and rho adds up."""
    s = Spectra(zz=(0.35, 1.75), h=(1.5, 2.0))
    rec = recommend_hyperparameters(2191, 1, 4, rho_theta=0.5, rho_beta=0.5, spectra=s)
    assert rec.rho == pytest.approx(1.0, rel=1e-12)
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((2191, 4))
    X = Z @ np.ones((4, 1)) + rng.standard_normal((2191, 1))
    y = X[:, 0] + rng.standard_normal(2191)
    traj = dp_two_stage_gd(X, y, Z, rho_theta=0.5, rho_beta=0.5, **rec.algorithm_kwargs(), rng=0)
    assert traj.config["noise_std_theta"] == pytest.approx(rec.noise_std_theta, rel=1e-12)
    assert traj.config["noise_std_beta"] == pytest.approx(rec.noise_std_beta, rel=1e-12)
    assert traj.rho == pytest.approx(rec.rho, rel=1e-12)
    paper = recommend_hyperparameters(
        2191, 1, 4, rho_theta=0.5, rho_beta=0.5, spectra=s, noise_calibration="paper"
    )
    assert paper.rho == pytest.approx(0.5, rel=1e-12)


def test_recommended_steps_grow_with_rho():
    """Less noise makes more iterations worthwhile (the privacy term shrinks)."""
    s = Spectra(zz=(0.35, 1.75), h=(1.5, 2.0))
    steps = [
        recommend_hyperparameters(2191, 1, 4, rho_theta=r, rho_beta=r, spectra=s).steps
        for r in (0.05, 0.5, 5.0)
    ]
    assert steps[0] < steps[1] < steps[2]


def test_paper_step_sizes_make_2s_gd_converge():
    """Population spectra (delta = psi = 0) of the synthetic design give converging steps."""
    design = draw_iv_design(5, rng=np.random.default_rng(3))
    X, y, Z = design.sample(4000, np.random.default_rng(4))
    sv = np.linalg.svd(design.theta, compute_uv=False)
    eta, alpha = step_sizes(Spectra(zz=(1.0, 1.0), h=(sv[-1] ** 2, sv[0] ** 2)), "paper")
    traj = two_stage_gd(X, y, Z, steps=300, step_size_theta=eta, step_size_beta=alpha)
    assert np.linalg.norm(traj.estimate - two_sls(X, y, Z).params) < 1e-8


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"criterion": "best"}, ValueError, "criterion"),
        ({"preset": "fast"}, ValueError, "preset"),
        ({"beta_norm": 0.0}, ValueError, "beta_norm"),
        ({"max_steps": 0}, ValueError, "max_steps"),
        ({"clips": (1.0,)}, TypeError, "clips"),
        ({"spectra": (1, 2)}, TypeError, "Spectra"),
    ],
)
def test_recommendation_validation(kwargs, exc, match):
    base = {"rho_theta": 1.0, "rho_beta": 1.0, "spectra": Spectra(zz=(1.0, 1.0), h=(1.0, 2.0))}
    with pytest.raises(exc, match=match):
        recommend_hyperparameters(1000, 2, 3, **{**base, **kwargs})
