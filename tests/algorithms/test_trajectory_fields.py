"""``Trajectory.algorithm`` is the one place that names a run; ``config`` never does."""

import numpy as np
import pytest

import dpfit.algorithms as alg
import dpfit.baselines as base
from dpfit.algorithms import Trajectory
from dpfit.losses import SquaredLoss
from dpfit.privacy import PrivacyLedger

_GEN = np.random.default_rng(3)
X = _GEN.uniform(-0.5, 0.5, size=(200, 2))
Y = np.clip(X @ np.array([0.3, -0.2]) + 0.1 * _GEN.standard_normal(200), -1.0, 1.0)
LOSS = SquaredLoss(y_bound=1.0, radius=2.0)
RUNS = {
    "dp_gd": lambda: alg.dp_gd(X, Y, rho=0.5, clip=1.0, steps=3, rng=1),
    "noisy_gd": lambda: alg.noisy_gd(LOSS, X, Y, rho=0.5, steps=3, rng=1),
    "adaptive_gd": lambda: alg.adaptive_gd(LOSS, X, Y, rho=0.5, max_steps=5, rng=1),
    "ssp": lambda: base.ssp(X, Y, rho=0.5, x_bound=1.0, y_bound=1.0, rng=1),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_run_names_its_function(name):
    traj = RUNS[name]()
    assert traj.algorithm == name
    assert not {"algorithm", "method"} & set(traj.config)


def _trajectory(**change):
    fields = {"algorithm": "x", "iterates": np.zeros((1, 2)), "estimate": np.zeros(2)}
    fields |= {"ledger": PrivacyLedger(), "config": {}, "noise_backend": "fast", "seeded": True}
    return Trajectory(**{**fields, **change})


@pytest.mark.parametrize("key", ["algorithm", "method"])
def test_config_cannot_name_the_algorithm_a_second_way(key):
    with pytest.raises(ValueError, match="config must not name the algorithm"):
        _trajectory(config={key: "x"})


@pytest.mark.parametrize("value", ["", None, 3])
def test_algorithm_must_be_a_non_empty_str(value):
    with pytest.raises(TypeError, match="algorithm must be a non-empty str"):
        _trajectory(algorithm=value)


def test_paper_only_helpers_live_outside_the_core_namespaces():
    import dpfit.mechanisms
    import dpfit.paper_only
    import dpfit.testing
    import dpfit.theory

    assert "adassp_paper" not in dir(base) and "adassp_paper" not in base.__all__
    assert "lemma_2_6_c0" not in dpfit.theory.__all__ and "lemma_2_6_c0" not in dir(dpfit.theory)
    assert "literal_threshold" not in dpfit.mechanisms.__all__
    assert set(dpfit.paper_only.__all__) == {"adassp_paper", "lemma_2_6_c0", "literal_threshold"}
    hooks = {"recording", "replaying", "Recording", "ReplayMismatchError"}
    assert hooks <= set(dpfit.testing.__all__)
    assert all(getattr(dpfit.testing, h) is getattr(dpfit.mechanisms, h) for h in hooks)
