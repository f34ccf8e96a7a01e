"""Fixed-clip Poisson DP-SGD baseline: full zCDP cost, sensitivity 2C, real Poisson batches."""

import numpy as np
import pytest

from dpfit.baselines.fixed_clip_sgd import fixed_clip_sgd
from dpfit.mechanisms import recording, replaying
from dpfit.privacy import sum_sensitivity


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)  # synthetic data, not privacy noise
    X = rng.standard_normal((n, 3))
    return X, X @ np.array([1.0, 0.0, -1.0]) + 0.2 * rng.standard_normal(n)


def run(X, y, **kw):
    base = dict(rho=0.5, clip=2.0, steps=20, step_size=0.3, sampling_rate=0.1, rng=4)
    return fixed_clip_sgd(X, y, **{**base, **kw})


def test_record_replay_full_cost_and_sensitivity():
    X, y = make_data(2000)
    with recording() as rec:
        first = run(X, y)
    X2, y2 = X.copy(), y.copy()
    X2[5], y2[5] = 1e3, -1e6  # saturates the clip whenever it is sampled
    with replaying(rec) as rep:
        second = run(X2, y2)
    assert len(rec) == 20
    moved = 0
    for old, new in zip(rec.releases, rep.releases, strict=True):
        # 2C plus the float64 allowance of a sum of at most n = 2000 clipped gradients
        assert sum_sensitivity(2.0) < old.entry.sensitivity < sum_sensitivity(2.0, n=2000)
        assert old.entry.subsampled
        assert old.entry.rho == pytest.approx(0.5 / 20, rel=1e-12)  # no amplification claimed
        diff = float(np.linalg.norm(old.value - new.value))
        assert diff <= 4.0 * (1 + 1e-12)
        moved += diff > 0
    assert 0 < moved < 20  # the canary is sampled in some steps only (rate 0.1)
    assert np.array_equal(first.estimate, second.estimate)
    assert first.ledger.rho == pytest.approx(0.5, rel=1e-12)
    assert first.ledger.gaussian_epsilon(1e-6) is None  # subsampled: no exact GDP claim


def test_sensitivity_includes_the_rounding_allowance_of_the_batch_sum():
    # sampling_rate = 1: every batch is all n records, so each step sums n clipped gradients.
    X, y = make_data(3000)
    with recording() as rec:
        traj = run(X, y, sampling_rate=1.0, steps=3)
    expected = sum_sensitivity(2.0, n=3000)  # 2C + float_sum_excess(C, n) (Casacuberta 2022)
    for release in rec.releases:
        assert release.entry.sensitivity == expected
        assert release.entry.noise_std == traj.config["noise_multiplier"] * expected
    assert traj.ledger.rho == pytest.approx(0.5, rel=1e-12)


def test_converges_with_a_generous_budget():
    X, y = make_data(20000)
    traj = run(X, y, rho=4.0, steps=200, clip=5.0)
    assert np.allclose(traj.estimate, [1.0, 0.0, -1.0], atol=0.1)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(sampling_rate=0.0), ValueError, "sampling_rate"),
        (dict(sampling_rate=1.5), ValueError, "sampling_rate"),
        (dict(steps=0), ValueError, "steps"),
        (dict(clip=-1.0), ValueError, "clip"),
        (dict(rho=None), TypeError, "rho is required"),
        (dict(relation="add-remove"), ValueError, "replace-one"),
    ],
)
def test_bad_inputs_fail_before_any_release(kwargs, exc, match):
    X, y = make_data(100)
    with recording() as rec, pytest.raises(exc, match=match):
        run(X, y, **kwargs)
    assert len(rec) == 0
