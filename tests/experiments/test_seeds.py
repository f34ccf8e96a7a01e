"""Per-trial seeds: deterministic, canonical, independent across replicates."""

import hashlib

import numpy as np
import pytest

from dpfit.experiments import get, trial_seed


def test_same_inputs_same_seed_and_key_order_irrelevant():
    a = trial_seed("exp", {"rho": 0.5, "n": 100}, 3)
    assert a == trial_seed("exp", {"n": 100, "rho": 0.5}, 3)
    assert a == trial_seed("exp", {"n": np.int64(100), "rho": np.float64(0.5)}, 3)
    assert 0 <= a < 2**63


def test_seed_changes_with_each_part_of_the_key():
    base = trial_seed("exp", {"rho": 0.5}, 0)
    others = [
        trial_seed("exp", {"rho": 0.5}, 1),
        trial_seed("exp2", {"rho": 0.5}, 0),
        trial_seed("exp", {"rho": 0.25}, 0),
    ]
    assert len({base, *others}) == 4


def test_derivation_is_the_documented_spawn_child():
    # The module docstring's recipe, written out independently.
    key = int.from_bytes(hashlib.sha256(b'exp\0{"n":5,"rho":0.5}').digest(), "big")
    child = np.random.SeedSequence(key).spawn(3)[2]
    expected = int(child.generate_state(1, dtype=np.uint64)[0]) >> 1
    assert trial_seed("exp", {"rho": 0.5, "n": 5}, 2) == expected


def test_all_tasks_of_an_experiment_get_distinct_seeds():
    exp = get("mechanism-check")
    seeds = [trial_seed(exp.name, p, r) for p, r in exp.tasks("paper")]
    assert len(set(seeds)) == len(seeds)


def test_replicate_streams_are_uncorrelated():
    # Independent streams: the sample correlation of N pairs has sd 1/sqrt(N); a bound of
    # 5/sqrt(N) is exceeded by chance with probability < 1e-6.
    n = 200_000
    draws = [
        np.random.default_rng(trial_seed("exp", {"rho": 1.0}, r)).standard_normal(n)
        for r in range(3)
    ]
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(np.corrcoef(draws[i], draws[j])[0, 1]) < 5 / np.sqrt(n)


@pytest.mark.parametrize("replicate", [-1, True, 1.5, "0"])
def test_bad_replicate(replicate):
    with pytest.raises(ValueError, match="replicate"):
        trial_seed("exp", {}, replicate)


@pytest.mark.parametrize("params", [{"x": float("nan")}, {"x": object()}])
def test_bad_params(params):
    with pytest.raises((TypeError, ValueError), match="parameter"):
        trial_seed("exp", params, 0)
