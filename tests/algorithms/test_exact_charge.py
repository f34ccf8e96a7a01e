"""The ledger adds charges exactly (units of 2^-1074): T releases calibrated to rho / T are
charged at most rho even where rho / T rounds up (DP-GD, noisy GD, DP-2S-GD both stages).

Each grid holds settings where the plain share rho / T, rounded once into the noise std and
once back into the charge, overcharges (checked below, so the grid keeps testing the case).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpfit.algorithms import dp_gd, noisy_gd
from dpfit.algorithms.two_stage import dp_two_stage_gd
from dpfit.datasets import draw_iv_design
from dpfit.losses import SquaredLoss
from dpfit.mechanisms import noise_std_for_rho
from dpfit.mechanisms.gaussian import rho_for_noise_std
from dpfit.privacy import mean_sensitivity
from dpfit.privacy.budget import exact_units

RHOS = (0.1, 0.77, 0.9, 2.9)
STEPS = range(1, 31)
N = 200
_GEN = np.random.default_rng(0)
X = _GEN.uniform(-1.0, 1.0, (N, 2))
Y = np.clip(X @ np.array([0.5, -0.5]) + 0.1 * _GEN.standard_normal(N), -1.0, 1.0)


def _total(ledger, label: str | None = None) -> int:
    return sum(e.rho_units for e in ledger if label is None or e.label == label)


def _plain_share_overcharges(sensitivity: float, rho: float, steps: int) -> bool:
    """Whether ``steps`` releases at noise_std_for_rho(sensitivity, rho / steps) exceed rho."""
    each = rho_for_noise_std(sensitivity, noise_std_for_rho(sensitivity, rho / steps))
    return exact_units(each) * steps > exact_units(rho)


def test_the_grids_hold_settings_where_the_plain_share_overcharges():
    sensitivity = mean_sensitivity(1.0, N, "replace-one")
    over = [(r, t) for r in RHOS for t in STEPS if _plain_share_overcharges(sensitivity, r, t)]
    assert len(over) >= 10, over


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.InsecureRandomnessWarning")
def test_dp_gd_charges_at_most_rho_for_every_step_count():
    for rho in RHOS:
        for steps in STEPS:
            traj = dp_gd(X, Y, rho=rho, clip=1.0, steps=steps, step_size=0.1, rng=0)
            assert _total(traj.ledger) <= exact_units(rho), (rho, steps)


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.InsecureRandomnessWarning")
def test_noisy_gd_charges_at_most_rho_for_every_step_count():
    loss = SquaredLoss(y_bound=1.0, radius=2.0)
    for rho in RHOS:
        for steps in STEPS:
            traj = noisy_gd(loss, X, Y, rho=rho, steps=steps, step_size=0.1, rng=0)
            assert _total(traj.ledger) <= exact_units(rho), (rho, steps)


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.InsecureRandomnessWarning")
@pytest.mark.parametrize("calibration", ["exact", "paper"])
def test_dp_two_stage_gd_charges_each_stage_at_most_its_rho(calibration):
    """The paper calibration (Liang et al. 2025, Prop. 3.1) spends half of each stage's rho."""
    design = draw_iv_design(1, 2, 1, rng=np.random.default_rng(7))
    Xi, yi, Zi = design.sample(N, np.random.default_rng(8))
    spent = 1.0 if calibration == "exact" else 0.5
    for rho in RHOS:
        for steps in STEPS:
            traj = dp_two_stage_gd(
                Xi,
                yi,
                Zi,
                rho_theta=rho,
                rho_beta=rho,
                clip_theta=5.0,
                clip_beta=5.0,
                steps=steps,
                step_size_theta=0.5,
                step_size_beta=0.1,
                noise_calibration=calibration,
                rng=0,
                warn_large_rho=False,  # rho_theta + rho_beta = 5.8 at the top of the grid
            )
            for stage in ("theta", "beta"):
                label = f"two_stage/{stage}-gradient"
                assert _total(traj.ledger, label) <= exact_units(rho * spent), (rho, steps)
