"""DP-SSGD: record/replay, the choice of accountant (parallel vs shuffle), bad inputs."""

import math
import warnings

import numpy as np
import pytest

from dpfit.algorithms.ssgd import dp_ssgd, ssgd_noise_multiplier
from dpfit.mechanisms import recording, replaying
from dpfit.privacy import ParallelEntry, PrivacyLedger, cks_rho, sum_sensitivity


def make_data(n, d=2, seed=0):
    rng = np.random.default_rng(seed)  # synthetic data, not privacy noise
    X = rng.standard_normal((n, d))
    return X, X @ np.ones(d) + 0.3 * rng.standard_normal(n)


def test_record_replay_every_step_has_noise_alpha_times_its_sensitivity():
    X, y = make_data(300)
    with recording() as rec:
        first = dp_ssgd(X, y, clip=2.0, step_size=0.05, rho=0.5, shuffle=False, rng=0)
    X2, y2 = X.copy(), y.copy()
    X2[17], y2[17] = 1e4, -1e8  # saturates the clip at step 17
    with replaying(rec) as rep:
        second = dp_ssgd(X2, y2, clip=2.0, step_size=0.05, rho=0.5, shuffle=False, rng=0)
    alpha = first.config["noise_multiplier"]
    assert alpha == 1.0 and len(rec) == 300
    changed = []
    for k, (old, new) in enumerate(zip(rec.releases, rep.releases, strict=True)):
        # 2 * clip (replace-one) with the float64 allowance of a batch of one (<= 1 ulp)
        assert old.entry.sensitivity == sum_sensitivity(2.0, n=1)
        assert old.entry.noise_std / old.entry.sensitivity == pytest.approx(alpha, rel=1e-15)
        diff = float(np.linalg.norm(old.value - new.value))
        assert diff <= old.entry.sensitivity * (1 + 1e-12)
        if diff > 0:
            changed.append(k)
    assert changed == [17]
    assert np.array_equal(first.estimate, second.estimate)
    (entry,) = first.ledger.entries
    assert isinstance(entry, ParallelEntry) and entry.n_blocks == 300
    assert first.ledger.rho == pytest.approx(0.5, rel=1e-15)


def test_gradient_sensitivity_includes_the_rounding_allowance_of_a_batch_of_one():
    # At clip = 3 the allowance 2^-52 * 3 rounds 2 * 3 up by one ulp, so it shows.
    X, y = make_data(50)
    with recording() as rec:
        dp_ssgd(X, y, clip=3.0, step_size=0.05, rho=0.5, rng=0)
    assert {r.entry.sensitivity for r in rec.releases} == {sum_sensitivity(3.0, n=1)}
    assert sum_sensitivity(3.0, n=1) == np.nextafter(6.0, 7.0)


def test_epsilon_target_uses_the_better_valid_analysis():
    # Large n, tiny epsilon: amplification by shuffling beats parallel composition.
    alpha, how = ssgd_noise_multiplier(0.03, 1e-6, 2**22, shuffled=True)
    assert how == "shuffle" and alpha < 1 / math.sqrt(2 * cks_rho(0.03, 1e-6))
    # Not shuffled (a stream): only parallel composition is valid.
    alpha, how = ssgd_noise_multiplier(0.03, 1e-6, 2**22, shuffled=False)
    assert how == "parallel" and alpha == pytest.approx(1 / math.sqrt(2 * cks_rho(0.03, 1e-6)))
    # A large epsilon at small n: the precondition eps0 <= ln(n / (16 ln(2/delta))) caps the
    # amplification, so parallel composition gives the smaller alpha.
    assert ssgd_noise_multiplier(8.0, 1e-6, 1000, shuffled=True)[1] == "parallel"


def test_epsilon_mode_reports_the_guarantee_and_charges_the_zcdp_cost():
    X, y = make_data(4000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = dp_ssgd(X, y, clip=2.0, step_size=0.01, epsilon=0.5, delta=1e-6, rng=0)
    cfg = traj.config
    assert cfg["epsilon"] == 0.5 and cfg["delta"] == 1e-6
    alpha, how = ssgd_noise_multiplier(0.5, 1e-6, 4000, shuffled=True)
    assert cfg["accountant"] == how and cfg["noise_multiplier"] == alpha
    assert traj.ledger.rho == pytest.approx(1 / (2 * alpha**2), rel=1e-12)
    streamed = dp_ssgd(
        iter([(X, y)]), None, n=4000, clip=2.0, step_size=0.01, epsilon=0.5, delta=1e-6, rng=0
    )
    assert streamed.config["accountant"] == "parallel"


def test_iterates_and_tail_average():
    X, y = make_data(1000)
    traj = dp_ssgd(X, y, clip=2.0, step_size=0.02, rho=1.0, iterate_stride=100, rng=1)
    assert traj.iterates.shape == (10, 2)
    assert np.array_equal(traj.iterates[-1], traj.iterates[-1])
    assert np.all(np.abs(traj.estimate - 1.0) < 0.5)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(rho=None), TypeError, "either rho"),
        (dict(epsilon=1.0), TypeError, "either rho"),
        (dict(rho=None, epsilon=1.0), TypeError, "both epsilon and delta"),
        (dict(rho=None, epsilon=1.0, delta=0.0), ValueError, "delta"),
        (dict(rho=None, epsilon=-1.0, delta=1e-6), ValueError, "epsilon"),
        (dict(clip=0.0), ValueError, "clip"),
        (dict(step_size=float("nan")), ValueError, "step_size"),
        (dict(iterate_stride=0), ValueError, "iterate_stride"),
        (dict(relation="add-remove"), ValueError, "replace-one"),
        (dict(ledger=PrivacyLedger(relation="add-remove")), ValueError, "relation"),
        (dict(shuffle="yes"), TypeError, "shuffle"),
    ],
)
def test_bad_inputs_fail_before_any_release(kwargs, exc, match):
    X, y = make_data(50)
    base = dict(clip=1.0, step_size=0.1, rho=0.5, rng=0)
    with recording() as rec, pytest.raises(exc, match=match):
        dp_ssgd(X, y, **{**base, **kwargs})
    assert len(rec) == 0
