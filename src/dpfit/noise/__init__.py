"""Correlated noise for private training (Choquette-Choo et al. 2024): DP-FTRL and nu-DP-FTRL.

Mechanisms (public factorisations of the noise, including buffered-linear-Toeplitz ones that
stream in O(buffers x d), the multi-epoch optimal dense one and banded encoders optimised for
amplification), their participation-aware sensitivity, the calibration of the one
Gaussian release they make, and streams that add the noise step by step. See
``docs/choquettechoo2024.md``.
"""

from .amplified import amplified_noise, amplified_sensitivity
from .banded_opt import BandChoice, amplified_banded_choice, optimal_banded
from .base import CorrelatedMechanism
from .blt import BLTMechanism, blt, optimal_blt
from .calibration import Calibration, NuSelection, calibrate, release_sensitivity, select_nu
from .dense import DenseMechanism, multi_epoch
from .sensitivity import (
    brute_force_sensitivity_squared,
    minsep_sensitivity_squared_bound,
    monotone_toeplitz_sensitivity_squared,
)
from .streams import NoiseStream, StreamChoice, correlated_noise
from .toeplitz import (
    ToeplitzMechanism,
    anti_pgd,
    banded,
    banded_encoder,
    dpsgd,
    fichtenberger,
    inverse_coefficients,
    nu_dpftrl,
    nu_dpftrl_coefficients,
    optimal_mean_estimation,
    toeplitz,
)
from .tree import RestartedMechanism, TreeMechanism, restarted, tree_aggregation

__all__ = [
    "BLTMechanism",
    "BandChoice",
    "Calibration",
    "CorrelatedMechanism",
    "DenseMechanism",
    "NoiseStream",
    "NuSelection",
    "RestartedMechanism",
    "StreamChoice",
    "ToeplitzMechanism",
    "TreeMechanism",
    "amplified_banded_choice",
    "amplified_noise",
    "amplified_sensitivity",
    "anti_pgd",
    "banded",
    "banded_encoder",
    "blt",
    "brute_force_sensitivity_squared",
    "calibrate",
    "correlated_noise",
    "dpsgd",
    "fichtenberger",
    "inverse_coefficients",
    "minsep_sensitivity_squared_bound",
    "monotone_toeplitz_sensitivity_squared",
    "multi_epoch",
    "nu_dpftrl",
    "nu_dpftrl_coefficients",
    "optimal_banded",
    "optimal_blt",
    "optimal_mean_estimation",
    "release_sensitivity",
    "restarted",
    "select_nu",
    "toeplitz",
    "tree_aggregation",
]
