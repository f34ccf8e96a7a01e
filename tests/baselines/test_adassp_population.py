"""AdaSSP with its population interval as a function: typed output, its own ledger, its shares.

End to end through ``DPLinearRegression(method="adassp")`` (coverage, warnings) it is tested
in tests/models/test_adassp_population.py; its neighbour contract in tests/neighbours.
"""

import numpy as np
import pytest

from dpfit.algorithms.trajectory import Trajectory
from dpfit.baselines.adassp_population import AdasspTrajectory, adassp_population
from dpfit.inference.population import CovarianceEstimate
from dpfit.mechanisms import recording


def _data(n=4000, seed=0):
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    X = np.hstack([np.ones((n, 1)), gen.uniform(-1, 1, (n, 2))])
    y = np.clip(0.3 * X[:, 1] - 0.2 * X[:, 2] + 0.2 * gen.standard_normal(n), -1, 1)
    return X, y


def test_a_run_returns_a_typed_trajectory_within_its_rho():
    X, y = _data()
    traj = adassp_population(X, y, rho=1.0, x_bound=np.sqrt(3), rng=1)
    assert isinstance(traj, AdasspTrajectory) and isinstance(traj, Trajectory)
    assert traj.algorithm == "adassp_population" and traj.rho <= 1.0
    assert isinstance(traj.population, CovarianceEstimate) and traj.population.cov.shape == (3, 3)
    assert traj.clip > 0 and np.isfinite(traj.clipped_y) and isinstance(traj.checks, tuple)
    labels = [entry.label for entry in traj.ledger.releases]
    assert labels[-3:] == ["adassp/residual-scale", "adassp/clipped-y", "adassp/omega"]


def test_add_remove_needs_a_public_n_before_anything_is_charged():
    X, y = _data(200)
    with recording() as rec, pytest.raises(ValueError, match="n_public"):
        adassp_population(X, y, rho=0.5, x_bound=2.0, relation="add-remove", rng=0)
    assert rec.releases == []
