"""The exact law of unclipped DP-GD iterates against simulation and against brute force.

Statistical tolerances: with R independent replications, a sample mean has standard error
sqrt(var / R) and a sample covariance entry sqrt((s_ii s_jj + s_ij^2) / R); we allow 4.5
standard errors per entry (two-sided 7e-6, so the ~40 checks have a false alarm rate < 3e-4).
"""

import numpy as np
import pytest

from dpfit.algorithms import dp_gd, dp_gd_given_noise, dp_gd_noise_std
from dpfit.datasets import draw_linear_design
from dpfit.paper_only import lemma_2_6_c0
from dpfit.theory import (
    block_mean_covariance,
    c4,
    expected_interval_length,
    final_iterate_error,
    huber_target,
    iterate_cross_covariance,
    iterate_law,
    no_clipping_condition,
    recommend_dp_gd,
    stationary_covariance,
)

Z = 4.5
DATA = draw_linear_design(60, 3, design="anisotropic", rng=3)
X, Y = np.array(DATA.X), np.array(DATA.y)
SIGMA = X.T @ X / 60
THETA_HAT = np.linalg.lstsq(X, Y, rcond=None)[0]
ETA, LAM = 0.3, 0.7


def _simulate(reps, steps, seed):
    rng = np.random.default_rng(seed)
    return np.stack(
        [
            dp_gd_given_noise(X, Y, noise=LAM * rng.standard_normal((steps, 3)), step_size=ETA)
            for _ in range(reps)
        ]
    )  # (reps, steps, p)


@pytest.fixture(scope="module")
def runs():
    return _simulate(4000, 40, seed=0)


def _assert_cov_close(sample, theory, reps, var_a, var_b):
    se = np.sqrt((np.outer(var_a, var_b) + theory**2) / reps)
    assert np.all(np.abs(sample - theory) <= Z * se), (sample, theory)


@pytest.mark.parametrize("t", [1, 5, 40])
def test_iterate_mean_and_covariance_match_simulation(runs, t):
    mean, cov = iterate_law(
        SIGMA, step_size=ETA, noise_std=LAM, t=t, theta0=np.zeros(3), theta_hat=THETA_HAT
    )
    draws = runs[:, t - 1, :]
    reps = draws.shape[0]
    assert np.all(np.abs(draws.mean(0) - mean) <= Z * np.sqrt(np.diag(cov) / reps))
    _assert_cov_close(np.cov(draws.T), cov, reps, np.diag(cov), np.diag(cov))


def test_cross_covariance_matches_simulation(runs):
    s, t = 10, 5
    theory = iterate_cross_covariance(SIGMA, step_size=ETA, noise_std=LAM, s=s, t=t)
    a, b = runs[:, s - 1, :], runs[:, t - 1, :]
    sample = (a - a.mean(0)).T @ (b - b.mean(0)) / (a.shape[0] - 1)
    var = [
        np.diag(
            iterate_law(
                SIGMA, step_size=ETA, noise_std=LAM, t=k, theta0=np.zeros(3), theta_hat=THETA_HAT
            )[1]
        )
        for k in (s, t)
    ]
    _assert_cov_close(sample, theory, a.shape[0], var[0], var[1])


def test_public_dp_gd_has_the_predicted_law():
    """The mechanism's calibrated noise, not a re-derivation: 1000 seeded unclipped runs."""
    steps, reps = 8, 1000
    finals = np.array(
        [
            dp_gd(X, Y, rho=1.0, clip=1e4, steps=steps, step_size=ETA, rng=s).estimate
            for s in range(reps)
        ]
    )
    noise_std = dp_gd_noise_std(rho=1.0, clip=1e4, n=60, total_steps=steps)
    mean, cov = iterate_law(
        SIGMA,
        step_size=ETA,
        noise_std=noise_std,
        t=steps,
        theta0=np.zeros(3),
        theta_hat=THETA_HAT,
    )
    assert np.all(np.abs(finals.mean(0) - mean) <= Z * np.sqrt(np.diag(cov) / reps))
    _assert_cov_close(np.cov(finals.T), cov, reps, np.diag(cov), np.diag(cov))


def test_law_agrees_with_dense_matrix_powers():
    M = np.eye(3) - ETA * SIGMA
    t = 7
    dense = ETA**2 * LAM**2 * sum(np.linalg.matrix_power(M, 2 * k) for k in range(t))
    _, cov = iterate_law(
        SIGMA, step_size=ETA, noise_std=LAM, t=t, theta0=np.ones(3), theta_hat=THETA_HAT
    )
    np.testing.assert_allclose(cov, dense, rtol=1e-12, atol=1e-15)
    cross = iterate_cross_covariance(SIGMA, step_size=ETA, noise_std=LAM, s=t + 3, t=t)
    np.testing.assert_allclose(cross, np.linalg.matrix_power(M, 3) @ dense, rtol=1e-12)


def test_stationary_covariance_is_the_limit_and_has_the_closed_form():
    stat = stationary_covariance(SIGMA, step_size=ETA, noise_std=LAM)
    closed = ETA * LAM**2 * np.linalg.inv(SIGMA @ (2 * np.eye(3) - ETA * SIGMA))
    np.testing.assert_allclose(stat, closed, rtol=1e-10)
    _, late = iterate_law(
        SIGMA, step_size=ETA, noise_std=LAM, t=5000, theta0=np.zeros(3), theta_hat=THETA_HAT
    )
    np.testing.assert_allclose(late, stat, rtol=1e-10)
    iso = stationary_covariance(np.eye(2), step_size=0.2, noise_std=1.0)
    np.testing.assert_allclose(np.diag(iso), 0.2 / 1.8)  # eta lambda^2 / (2 - eta)


def test_stationary_law_needs_a_stable_step():
    with pytest.raises(ValueError, match="step_size"):
        stationary_covariance(SIGMA, step_size=10.0, noise_std=1.0)


def test_block_mean_covariance_against_the_double_sum():
    N = 7
    stat = stationary_covariance(SIGMA, step_size=ETA, noise_std=LAM)
    M = np.eye(3) - ETA * SIGMA
    total = np.zeros((3, 3))
    for i in range(N):
        for j in range(N):
            lag = np.linalg.matrix_power(M, abs(i - j)) @ stat
            total += lag if i >= j else lag.T
    np.testing.assert_allclose(
        block_mean_covariance(SIGMA, step_size=ETA, noise_std=LAM, length=N),
        total / N**2,
        rtol=1e-10,
    )


def test_block_mean_closed_form_continues_the_direct_sum():
    # N Var(N) changes by O(1/N^2) ~ 1e-6 between N = 4096 (direct) and 4097 (closed form).
    direct = 4096 * block_mean_covariance(SIGMA, step_size=ETA, noise_std=LAM, length=4096)
    closed = 4097 * block_mean_covariance(SIGMA, step_size=ETA, noise_std=LAM, length=4097)
    np.testing.assert_allclose(closed, direct, rtol=1e-5)
    # and N Var(N) -> lambda^2 Sigma^-2 (spec 3.2)
    limit = LAM**2 * np.linalg.inv(SIGMA @ SIGMA)
    np.testing.assert_allclose(closed, limit, rtol=2e-3)


def test_block_mean_variance_matches_an_ar1_simulation():
    """Spec verification item 4: phi = 0.8, N = 7 gives 0.641 (simulated 0.639)."""
    var = block_mean_covariance([[1.0]], step_size=0.2, noise_std=1.0 / 0.2, length=7)
    assert var[0, 0] * (1 - 0.8**2) == pytest.approx(0.641, abs=1e-3)


def test_c4_and_interval_length_golden_values():
    """Golden values from spec 3.2 (recomputed in its verification section, item 4)."""
    assert c4(10) == pytest.approx(0.97266, abs=1e-5)
    expected = [0.0847, 0.1198, 0.1894, 0.2678, 0.3787, 0.5988]
    for total, length in zip([100, 200, 500, 1000, 2000, 5000], expected, strict=True):
        lam = dp_gd_noise_std(rho=0.015, clip=5 * np.sqrt(10), n=10_000, total_steps=total)
        got = expected_interval_length(np.eye(10), step_size=0.2, noise_std=lam, m=10)
        assert got == pytest.approx(np.full(10, length), abs=1e-4)
    # batched means: approximately 2 t c4 gamma sqrt(2 / rho) / n for long batches = 0.0803
    lam = dp_gd_noise_std(rho=0.015, clip=5 * np.sqrt(10), n=10_000, total_steps=100_000)
    bm = expected_interval_length(np.eye(10), step_size=0.2, noise_std=lam, m=10, length=10_000)
    assert bm == pytest.approx(np.full(10, 0.0803), abs=1e-3)


def test_final_iterate_error_isotropic_formula():
    theta_hat = np.array([0.6, 0.8])
    got = final_iterate_error(
        np.eye(2),
        step_size=0.2,
        noise_std=0.5,
        steps=10,
        theta0=np.zeros(2),
        theta_hat=theta_hat,
    )
    decay = 0.8**20
    assert got == pytest.approx(decay + 0.2 * 0.25 * 2 * (1 - decay) / 1.8, rel=1e-12)


def test_recommendation_predicts_the_exact_error_and_minimises_it():
    rec = recommend_dp_gd(10_000, 10, rho=0.015)
    assert rec.clip == pytest.approx(5 * np.sqrt(10)) and rec.step_size == 0.25
    theta_hat = np.zeros(10)
    theta_hat[0] = 1.0

    def error(T):
        lam = dp_gd_noise_std(rho=0.015, clip=rec.clip, n=10_000, total_steps=T)
        return final_iterate_error(
            np.eye(10),
            step_size=0.25,
            noise_std=lam,
            steps=T,
            theta0=np.zeros(10),
            theta_hat=theta_hat,
        )

    assert rec.predicted_error**2 == pytest.approx(error(rec.steps), rel=1e-10)
    assert error(rec.steps) < min(error(rec.steps - 1), error(rec.steps + 1))


def test_huber_target_zeroes_the_clipped_gradient_and_is_the_gd_limit():
    data = draw_linear_design(300, 3, rng=1)
    Xd, yd = np.array(data.X), np.array(data.y)
    clip = 1.0  # heavy clipping
    target = huber_target(Xd, yd, clip=clip)
    r = yd - Xd @ target
    bounds = clip / np.linalg.norm(Xd, axis=1)
    grad = Xd.T @ np.clip(r, -bounds, bounds)
    assert np.abs(grad).max() < 1e-9 * len(yd)
    assert np.abs(target - np.linalg.lstsq(Xd, yd, rcond=None)[0]).max() > 1e-3
    limit = dp_gd_given_noise(Xd, yd, noise=np.zeros((4000, 3)), step_size=0.5, clip=clip)[-1]
    np.testing.assert_allclose(limit, target, atol=1e-8)


def test_no_clipping_condition_on_gaussian_data():
    data = draw_linear_design(5000, 5, rng=2)
    cond = no_clipping_condition(
        data.X, data.y, data.theta_star, sigma=1.0, step_size=0.25, steps=20
    )
    assert cond.eigen_ok
    # Gaussian data satisfy the condition with a c0 far below Lemma 2.6's (about 790 here).
    assert 1.0 < cond.c0 < 10.0 < lemma_2_6_c0(5000, 20, 0.05)
    squeezed = no_clipping_condition(
        0.1 * data.X, data.y, data.theta_star, sigma=1.0, step_size=0.25, steps=20
    )
    assert not squeezed.eigen_ok and squeezed.c0 == np.inf
