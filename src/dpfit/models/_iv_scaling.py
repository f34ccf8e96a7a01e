"""Private standardisation of IV data from public bounds (one charged Gaussian release).

Gradient descent on IV data converges at a rate set by the spectra of Z^T Z / n and
H = Theta^T Z^T Z Theta / n; raw columns (years, dollars, squares) make both badly
conditioned, and mapping them to [-1, 1] by wide public bounds still leaves small variances
(a weak first stage then needs thousands of steps). So :class:`DPIVRegression` spends a small
share of its budget to standardise every column with **privately estimated** means and
standard deviations:

1. each column v with public bounds [lo, hi] is clipped into them and mapped to
   u = (v - c) / h in [-1, 1] (c, h: the bounds' midpoint and half-range; public);
2. the vector (mean_i u_ij, mean_i u_ij^2)_j is released once with Gaussian noise: under
   replace-one with public n each mean moves by at most 2 / n and each mean square by 1 / n,
   so the L2 sensitivity is sqrt(4k + k) / n for k columns;
3. post-processing: mean_j = c + h m1_j, sd_j = h sqrt(max(m2_j - m1_j^2, floor)), and the
   algorithm sees (clip(v) - mean_j) / sd_j. Coefficients map back exactly (linear map).

The floor (1e-4 in u units, i.e. sd >= 0.01 h) keeps a noisy variance positive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms import NoiseSource, gaussian, noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, mean_sensitivity

__all__: list[str] = []

LABEL = "iv/column-moments"
_VAR_FLOOR = 1e-4


@dataclass(frozen=True, kw_only=True)
class Standardization:
    """Per-column released means and standard deviations, and the public bounds."""

    bounds: np.ndarray  # (k, 2)
    mean: np.ndarray  # (k,)
    sd: np.ndarray  # (k,)

    def apply(self, V: np.ndarray) -> np.ndarray:
        """(clip(V, bounds) - mean) / sd, column by column."""
        return (np.clip(V, self.bounds[:, 0], self.bounds[:, 1]) - self.mean) / self.sd


def release_moments(
    V: np.ndarray, bounds: np.ndarray, *, rho: float, ledger: PrivacyLedger, rng: NoiseSource
) -> Standardization:
    """Release the clipped columns' means and mean squares (rho-zCDP) and standardise with them.

    Privacy: one Gaussian release of sensitivity sqrt(5 k) / n (replace-one, public n).
    """
    n, k = V.shape
    centre = (bounds[:, 0] + bounds[:, 1]) / 2.0
    half = (bounds[:, 1] - bounds[:, 0]) / 2.0
    U = (np.clip(V, bounds[:, 0], bounds[:, 1]) - centre) / half
    # mean_sensitivity(1, n) = 2 / n: the per-coordinate bound of a mean of [-1, 1] values.
    sensitivity = math.sqrt(5.0 * k) / 2.0 * mean_sensitivity(1.0, n, ledger.relation)
    value = np.concatenate([U.mean(axis=0), (U**2).mean(axis=0)])
    noisy = gaussian(
        value,
        sensitivity=sensitivity,
        noise_std=noise_std_for_rho(sensitivity, rho_within(sensitivity, rho)),  # <= rho
        ledger=ledger,
        rng=rng,
        label=LABEL,
    )
    m1 = np.clip(noisy[:k], -1.0, 1.0)
    var = np.maximum(noisy[k:] - m1**2, _VAR_FLOOR)
    return Standardization(bounds=bounds, mean=centre + half * m1, sd=half * np.sqrt(var))
