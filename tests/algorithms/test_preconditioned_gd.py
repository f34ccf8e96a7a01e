"""The preconditioned DP-GD default as an algorithm: typed output, its own ledger, its charges.

End to end through ``DPLinearRegression`` (coverage, warnings, Dask) it is tested in
tests/models/test_linear_population.py; its neighbour contract in tests/neighbours.
"""

import numpy as np
import pytest

from dpfit.algorithms._preconditioned_plan import release_shares
from dpfit.algorithms.preconditioned_gd import PreconditionedTrajectory, preconditioned_gd
from dpfit.algorithms.trajectory import Trajectory
from dpfit.inference.population import CovarianceEstimate, NoisyMoment
from dpfit.mechanisms import recording


def _data(n=2000, seed=0):
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    X = np.hstack([np.ones((n, 1)), gen.uniform(-1, 1, (n, 2))])
    y = np.clip(0.3 * X[:, 1] - 0.2 * X[:, 2] + 0.2 * gen.standard_normal(n), -1, 1)
    return X, y


def test_a_run_returns_a_typed_trajectory_within_its_rho():
    X, y = _data()
    traj = preconditioned_gd(X, y, rho=1.0, row_bound=np.sqrt(3), steps=200, m=10, rng=1)
    assert isinstance(traj, PreconditionedTrajectory) and isinstance(traj, Trajectory)
    assert traj.algorithm == "preconditioned_gd" and traj.rho <= 1.0
    assert isinstance(traj.population, CovarianceEstimate)
    assert isinstance(traj.xtx, NoisyMoment) and isinstance(traj.omega, NoisyMoment)
    assert traj.estimates.shape == (10, 3) and traj.iterates.shape == (200, 3)
    np.testing.assert_allclose(traj.estimate, traj.estimates.mean(axis=0), rtol=1e-12)
    assert isinstance(traj.checks, tuple) and traj.clip > 0


def test_every_release_charges_its_share_of_rho():
    X, y = _data()
    with recording() as rec:
        traj = preconditioned_gd(X, y, rho=0.5, row_bound=np.sqrt(3), steps=100, m=10, rng=2)
    shares = release_shares(0.5, 0.25, private_clip=True)
    labels = [entry.label for entry in traj.ledger.releases]
    assert labels[:2] == ["gd/xtx", "gd/whitened-xtx"] and "dp_gd/gradient" in labels
    assert traj.rho == pytest.approx(sum(shares.values()), rel=1e-12) and traj.rho <= 0.5
    assert len(rec.releases) >= len(labels)


def test_add_remove_needs_a_public_n_before_anything_is_charged():
    X, y = _data(200)
    with recording() as rec, pytest.raises(ValueError, match="n_public"):
        preconditioned_gd(X, y, rho=0.5, row_bound=2.0, relation="add-remove", rng=0)
    assert rec.releases == []
