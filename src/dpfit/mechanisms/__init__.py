"""Mechanisms: the Gaussian mechanism, clipping, private counts and the noise source.

The record/replay hooks (``recording``, ``replaying``) are importable from here for the
library's own checks; their documented home is :mod:`dpfit.testing`.
"""

from .calibration import (
    noise_multiplier_for_rho,
    noise_std_for_rho,
    noise_std_within,
    rho_for_noise_std,
    rho_within,
)
from .clipping import (
    clip_factors,
    clip_residuals,
    clip_rows,
    residual_thresholds,
    row_norms,
    scale_rows,
)
from .counts import (
    DoublingSearch,
    margin_threshold,
    private_count,
)
from .counts import literal_threshold as literal_threshold  # paper-only: dpfit.paper_only
from .gaussian import GaussianReleases, gaussian, gaussian_releases
from .limits import (
    check_descent_scale,
    check_noisy_sum_scale,
    check_public_scale,
    check_smallest_factor,
    release_peaks,
)
from .recorder import Recording, ReplayMismatchError, recording, replaying
from .rng import NoiseSource, make_noise_source
from .stream import gaussian_rows

__all__ = [
    "DoublingSearch",
    "GaussianReleases",
    "NoiseSource",
    "Recording",
    "ReplayMismatchError",
    "check_descent_scale",
    "check_noisy_sum_scale",
    "check_public_scale",
    "check_smallest_factor",
    "clip_factors",
    "clip_residuals",
    "clip_rows",
    "gaussian",
    "gaussian_releases",
    "gaussian_rows",
    "make_noise_source",
    "margin_threshold",
    "noise_multiplier_for_rho",
    "noise_std_for_rho",
    "noise_std_within",
    "private_count",
    "recording",
    "release_peaks",
    "replaying",
    "residual_thresholds",
    "rho_for_noise_std",
    "rho_within",
    "row_norms",
    "scale_rows",
]
