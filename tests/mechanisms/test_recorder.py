"""Record/replay hooks (reliability 3.3): a toy algorithm run on neighbouring datasets."""

import numpy as np
import pytest

from dpfit.mechanisms import (
    ReplayMismatchError,
    clip_rows,
    gaussian,
    make_noise_source,
    recording,
    replaying,
)
from dpfit.privacy import PrivacyLedger, sum_sensitivity


def noisy_mean_steps(G, *, clip=1.0, std=1.0, steps=3, seed=0, data_dependent=False):
    """A toy private algorithm: repeated noisy clipped sums, optionally with a data branch."""
    ledger = PrivacyLedger()
    source = make_noise_source(seed)
    outs = []
    steps = steps + int(data_dependent and G.sum() > 0)  # a bug the replay must catch
    for _ in range(steps):
        outs.append(
            gaussian(
                clip_rows(G, clip).sum(0),
                sensitivity=sum_sensitivity(clip),
                noise_std=std,
                ledger=ledger,
                rng=source,
                label="sum",
            )
        )
    return np.array(outs), ledger


def test_replay_reproduces_outputs_and_exposes_input_differences():
    D = np.zeros((10, 2))
    D_prime = D.copy()
    D_prime[0] = [100.0, 0.0]  # worst-case replacement: saturates the clip
    with recording() as rec:
        out, ledger = noisy_mean_steps(D)
    with replaying(rec) as rep:
        out2, ledger2 = noisy_mean_steps(D_prime, seed=1)
    assert np.array_equal(out, out2)
    assert ledger.rho == ledger2.rho
    for a, b in zip(rec.releases, rep.releases, strict=True):
        diff = np.linalg.norm(a.value - b.value)
        assert diff <= a.entry.sensitivity * (1 + 1e-12)
        assert diff > 0


def test_replay_catches_data_dependent_control_flow():
    D = np.zeros((10, 2))
    with recording() as rec:
        noisy_mean_steps(D, data_dependent=True)
    with pytest.raises(ReplayMismatchError), replaying(rec):
        noisy_mean_steps(np.ones((10, 2)), data_dependent=True)


def test_replay_catches_changed_calibration():
    D = np.zeros((10, 2))
    with recording() as rec:
        noisy_mean_steps(D)
    with pytest.raises(ReplayMismatchError, match="differs"), replaying(rec):
        noisy_mean_steps(D, std=0.5)


def test_recording_is_inert_outside_a_context():
    out_a, _ = noisy_mean_steps(np.zeros((4, 2)), seed=5)
    with recording() as rec:
        out_b, _ = noisy_mean_steps(np.zeros((4, 2)), seed=5)
    assert np.array_equal(out_a, out_b) and len(rec) == 3
