"""The steps shared by the two whitened population sandwiches of ``DPLinearRegression``.

The DP-GD default (src/dpfit/models/_linear_population.py) and AdaSSP
(src/dpfit/models/_adassp_population.py) build the sampling part of their population interval
the same way (docs/inference.md): whiten each row by P = Hp^-1/2, the inverse square root of a
released X'X/n projected onto its noise floor (:func:`inverse_sqrt`); clip the whitened
gradients P d_i e_i at a multiple of a private residual scale (:func:`release_mean`,
:func:`gradient_clip`); release their second moment Omega~; and form the HC0 sandwich with
bread and meat both de-spread within noise-level groups (:func:`whitened_sandwich`), warning
(:data:`NOISY_MEAT`) when the meat's noise can dominate it. Written once, so that a fix to one
interval cannot miss the other.

:func:`release_mean` is the only release here: it goes through
:func:`dpfit.mechanisms.gaussian` with a declared sensitivity and is charged before the draw;
everything else is post-processing of releases.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ..mechanisms import NoiseSource, gaussian, noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, Query, query_sensitivity
from .population import NoisyMoment, sandwich

__all__ = ["NOISY_MEAT", "gradient_clip", "inverse_sqrt", "release_mean", "whitened_sandwich"]

#: Smallest residual scale the clip is built from, so that noise-free data still get C > 0.
SCALE_FLOOR = 1e-6

#: The warning when the released meat has an eigenvalue within two noise s.d. of zero
#: (:meth:`NoisyMoment.unidentified` on Omega~): its noise dominates along that direction.
NOISY_MEAT = (
    "The released second moment of the clipped gradients (the sandwich's meat) has an "
    "eigenvalue within two noise s.d. of zero: its noise dominates there (the clip, set "
    "from a private residual scale, is large against the residuals), so the sampling part "
    "of the interval is imprecise and coverage may be above or below nominal (a larger rho "
    "or tighter y bounds help)."
)


def inverse_sqrt(matrix: ArrayLike) -> np.ndarray:
    """M^-1/2 of a symmetric positive definite M (e.g. :meth:`NoisyMoment.psd`): the whitener.

    With M the released X'X/n projected onto its noise floor, the whitened rows P d_i have
    E[P d d' P] close to I whatever the conditioning of the features, so ||P d_i|| is about
    sqrt(k) and one clip relative to the residual scale suits every design.
    """
    values, vectors = np.linalg.eigh(np.asarray(matrix, dtype=np.float64))
    return (vectors / np.sqrt(values)) @ vectors.T


def release_mean(
    total: ArrayLike,
    *,
    cap: float,
    rho: float,
    n: int,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
) -> tuple[float, float]:
    """Release (1/n) x ``total``, a sum of one term per record in [0, ``cap``]; and its noise s.d.

    Used for the residual scale q~ = (1/n) sum min(e_i^2, cap) behind the gradient clip and
    for AdaSSP's share of responses at the y bounds. The caller guarantees the terms' range
    (the sum may come from a Dask reduction, :mod:`dpfit.models._linear_moments`). One
    record's term moves the mean over the public n by at most cap / n under either relation
    (:func:`~dpfit.privacy.query_sensitivity`, ``"bounded-mean"``, with its float rounding
    allowance): Gaussian mechanism,
    rho-zCDP, charged to ``ledger`` before the draw.
    """
    sensitivity = query_sensitivity(Query.BOUNDED_MEAN, bound=cap, n=n, relation=ledger.relation)
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho))  # charged <= rho
    with np.errstate(all="ignore"):
        value = np.asarray(total, dtype=np.float64).reshape(1) / n  # the public n
    noisy = gaussian(
        value, sensitivity=sensitivity, noise_std=noise_std, ledger=ledger, rng=rng, label=label
    )
    return float(noisy[0]), noise_std


def gradient_clip(multiplier: float, k: int, scale: float, scale_std: float) -> float:
    """The whitened-gradient clip M sqrt(k) sqrt(max(q~, s_q, 1e-6)) (post-processing).

    ||P d_i|| is about sqrt(k) and |e_i| about sqrt(q~), so M residual scales of a typical
    whitened gradient; the released q~ is raised to its own noise s.d. s_q (a small or
    negative release says only that q is within the noise) and to :data:`SCALE_FLOOR`.
    """
    return multiplier * math.sqrt(k) * math.sqrt(max(scale, scale_std, SCALE_FLOOR))


def whitened_sandwich(
    bread: NoisyMoment, meat: NoisyMoment, whitener: np.ndarray, n: int
) -> np.ndarray:
    """The HC0 sandwich Hs^-1 Omega_d Hs^-1 / n from a bread and a meat released whitened.

    ``meat`` is Omega~ of the whitened gradients P d_i e_i (``whitener`` = P), so in the
    design's coordinates Omega_d = P^-1 Omega_s P^-1. Both releases go through
    :meth:`NoisyMoment.shrunk` (eigenvalues de-spread within noise-level groups, raised to one
    noise s.d.): a projection onto the noise floor would inflate a meat whose noise is large
    against it (the clip large against the residuals) and understate the variance along a
    bread eigenvalue below the floor (docs/inference.md). Post-processing.
    """
    unwhiten = np.linalg.inv(whitener)
    return sandwich(bread.shrunk(), unwhiten @ meat.shrunk() @ unwhiten, n)
