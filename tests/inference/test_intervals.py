"""The Student-t interval (eq. 12) and the three constructions of Brown et al. Section 3.1."""

import numpy as np
import pytest
from scipy import stats

from dpfit.algorithms import Trajectory, dp_gd
from dpfit.datasets import draw_linear_design
from dpfit.exceptions import CoverageWarning
from dpfit.inference import (
    confidence_interval,
    interval_estimates,
    t_interval,
    t_interval_from_stderr,
)
from dpfit.privacy import PrivacyLedger


def fake(total, p=2, runs=1):
    """A trajectory whose iterate t (1-based) is (t, -t, ...): indices are easy to read."""
    it = np.arange(1, total + 1, dtype=float)[:, None] * np.array([1.0, -1.0][:p])
    return Trajectory(
        algorithm="fake",
        iterates=it,
        estimate=it[-1],
        ledger=PrivacyLedger(),
        config={"runs": runs, "steps": total // runs},
        noise_backend="fast",
        seeded=True,
    )


def test_t_interval_matches_scipy():
    est = np.random.default_rng(0).standard_normal((10, 3))
    _, lower, upper = t_interval(est, alpha=0.05)
    sem = est.std(axis=0, ddof=1) / np.sqrt(10)
    lo, hi = stats.t.interval(0.95, 9, loc=est.mean(0), scale=sem)
    np.testing.assert_allclose(lower, lo, rtol=1e-12)
    np.testing.assert_allclose(upper, hi, rtol=1e-12)
    assert stats.t.ppf(0.975, 9) == pytest.approx(2.2622, abs=1e-4)  # spec verification 2


def test_t_interval_covers_at_its_level():
    # 4000 intervals from m = 10 Gaussians: coverage SE = sqrt(.95 * .05 / 4000) = 0.0034.
    rng = np.random.default_rng(1)
    est = rng.normal(2.0, 3.0, size=(4000, 10, 1))
    covered = [(lo <= 2.0 <= hi) for _, lo, hi in (t_interval(e) for e in est)]
    assert abs(np.mean(covered) - 0.95) < 4 * 0.0034


def test_t_interval_from_stderr_is_the_shared_step():
    c, _, hi = t_interval_from_stderr([1.0], [2.0], dof=5, alpha=0.1)
    assert hi[0] - c[0] == pytest.approx(2.0 * stats.t.ppf(0.95, 5))


@pytest.mark.parametrize(
    "bad, exc, fragment",
    [
        (np.ones((1, 2)), ValueError, "m >= 2"),
        (np.ones(3), ValueError, "2-dimensional"),
        (np.array([[1.0], [np.nan]]), ValueError, "NaN"),
    ],
)
def test_t_interval_rejects_bad_estimates(bad, exc, fragment):
    with pytest.raises(exc, match=fragment):
        t_interval(bad)


@pytest.mark.parametrize("alpha", [0.0, 1.0, float("nan"), -0.1])
def test_alpha_outside_unit_interval_is_rejected(alpha):  # reliability row 18
    with pytest.raises(ValueError, match="alpha"):
        t_interval(np.ones((3, 1)) + np.arange(3)[:, None], alpha=alpha)


def test_batched_means_drop_burn_in_then_the_remainder_at_the_front():
    # 53 iterates, burn-in 20 -> 33 usable, 10 batches of 3, 3 more dropped: starts at 24.
    est = interval_estimates(fake(53), "batched-means", m=10, burn_in=20)
    assert est[0, 0] == np.mean([24, 25, 26]) and est[-1, 0] == np.mean([51, 52, 53])
    formal = interval_estimates(fake(50), "batched-means", m=10, variant="formal")
    assert formal[0, 0] == 3.0 and formal[-1, 0] == 48.0


def test_checkpoints_are_the_last_iterate_of_each_block():
    formal = interval_estimates(fake(100), "checkpoints", m=10, variant="formal")
    assert formal[:, 0].tolist() == [10.0 * k for k in range(1, 11)]  # theta_{lT}
    exp = interval_estimates(fake(100), "checkpoints", m=10, burn_in=20)
    assert exp[:, 0].tolist() == [20.0 + 8 * k for k in range(1, 11)]


def test_independent_runs_use_each_run():
    traj = fake(40, runs=4)  # runs of 10 iterates
    formal = interval_estimates(traj, "independent-runs", variant="formal")
    assert formal[:, 0].tolist() == [10.0, 20.0, 30.0, 40.0]
    exp = interval_estimates(traj, "independent-runs", burn_in=6)
    assert exp[:, 0].tolist() == [8.5, 18.5, 28.5, 38.5]  # mean of iterates 7..10 of each


@pytest.mark.parametrize(
    "traj, kwargs, fragment",
    [
        (fake(40, runs=4), {"construction": "independent-runs", "m": 5}, "m >= 2 runs"),
        (fake(40), {"construction": "independent-runs"}, "m >= 2 runs"),
        (fake(40, runs=4), {"construction": "independent-runs"}, "steps > burn_in"),
        (fake(40, runs=4), {"construction": "checkpoints"}, "single run"),
        (fake(25), {"construction": "checkpoints", "m": 10}, "cannot make m=10 blocks"),
        (fake(40), {"construction": "checkpoints", "variant": "formal", "burn_in": 5}, "burn_in"),
        (fake(40), {"construction": "batched_means"}, "construction must be one of"),
        (fake(40), {"construction": "checkpoints", "variant": "exact"}, "variant must be"),
        (fake(40), {"construction": "checkpoints", "m": 1}, "m must be in"),
    ],
)
def test_construction_errors(traj, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        interval_estimates(traj, **kwargs)


def test_few_batches_warn():
    with pytest.warns(CoverageWarning, match="m=5"):
        interval_estimates(fake(100), "batched-means", m=5, burn_in=0)


def test_intervals_from_dp_gd_cover_theta_hat():
    """30 runs x 3 constructions on one dataset: each covers theta_hat in most coordinates.

    A smoke check of the wiring; calibrated coverage is asserted by the brown2024 experiments.
    """
    data = draw_linear_design(5000, 3, rng=7)
    theta_hat = np.linalg.lstsq(data.X, data.y, rcond=None)[0]
    hits = []
    for seed in range(30):
        one = dp_gd(
            data.X, data.y, rho=0.05, clip=5 * np.sqrt(3), steps=500, step_size=0.2, rng=seed
        )
        ten = dp_gd(
            data.X,
            data.y,
            rho=0.05,
            clip=5 * np.sqrt(3),
            steps=50,
            runs=10,
            step_size=0.2,
            rng=1000 + seed,
        )
        for traj, construction in [
            (one, "batched-means"),
            (one, "checkpoints"),
            (ten, "independent-runs"),
        ]:
            _, lo, hi = confidence_interval(traj, construction)
            hits.append((lo <= theta_hat) & (theta_hat <= hi))
    # 270 coordinate-intervals at nominal 0.95: SE ~ 0.013 (ignoring correlation).
    assert np.mean(hits) > 0.88
