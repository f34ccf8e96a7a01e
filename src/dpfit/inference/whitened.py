"""The steps shared by the two whitened population sandwiches of ``DPLinearRegression``.

The DP-GD default (src/dpfit/algorithms/preconditioned_gd.py) and AdaSSP
(src/dpfit/baselines/adassp_population.py) build the sampling part of their population interval
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
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..mechanisms import NoiseSource, gaussian, noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, Query, query_sensitivity
from .doubts import NOTE, Doubt
from .population import NoisyMoment

__all__ = [
    "GD_CLIP_MULTIPLIER",
    "MEAT_CLIP_MULTIPLIER",
    "NOISY_MEAT",
    "NoisySandwich",
    "gradient_clip",
    "inverse_sqrt",
    "noisy_sandwich",
    "release_mean",
]

#: Smallest residual scale the clip is built from, so that noise-free data still get C > 0.
SCALE_FLOOR = 1e-6

#: M of :func:`gradient_clip` for the preconditioned DP-GD's whitened gradients: the clip is
#: this many residual scales times sqrt(k) (a typical whitened ||z||). It bounds the descent,
#: so it trades clipping bias against noise.
GD_CLIP_MULTIPLIER = 3.0

#: M of :func:`gradient_clip` for AdaSSP's meat (Omega) only: the estimate itself is not
#: clipped, so a wider clip costs only the meat's noise and keeps its clipping bias small.
MEAT_CLIP_MULTIPLIER = 6.0

#: Fewest degrees of freedom the meat's noise may leave a coefficient's sampling variance
#: (:meth:`NoisySandwich.noisy_meat`).
MEAT_DOF = 4.0
#: The note when the released meat's noise leaves some coefficient's sampling variance
#: fewer than MEAT_DOF degrees of freedom (:meth:`NoisySandwich.noisy_meat`). A note, not a
#: warning, where everything is noisy (small n: the bread too, or AdaSSP's intervals): the
#: Student-t quantile at those degrees of freedom widens the interval, and such fits cover
#: (docs/inference.md, "Warning triage"). The DP-GD default warns instead where its bread
#: identifies every direction (``dpfit.algorithms._linear_doubts.HEAVY_TAILED_MEAT``).
NOISY_MEAT = Doubt(
    "The released second moment of the clipped gradients (the sandwich's meat) is so noisy "
    "that some coefficient's sampling variance has fewer than 4 degrees of freedom (the "
    "clip, set from a private residual scale, is large against the residuals): the "
    "interval's width is itself uncertain, and its Student-t quantile allows for that.",
    ("a larger rho", "tighter y bounds"),
    NOTE,
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
    rows_per_unit: int = 1,
) -> tuple[float, float]:
    """Release (1/n) x ``total``, a sum of one term per record in [0, ``cap``]; and its noise s.d.

    Used for the residual scale q~ = (1/n) sum min(e_i^2, cap) behind the gradient clip and
    for AdaSSP's share of responses at the y bounds. The caller guarantees the terms' range
    (the sum may come from a Dask reduction, :mod:`dpfit.algorithms._linear_moments`). One
    record's term moves the mean over the public n by at most cap / n under either relation
    (:func:`~dpfit.privacy.query_sensitivity`, ``"bounded-mean"``, with its float rounding
    allowance): Gaussian mechanism,
    rho-zCDP, charged to ``ledger`` before the draw. With a privacy unit of at most
    ``rows_per_unit`` = K rows (n counts units) one unit moves it by K cap / n.
    """
    sensitivity = query_sensitivity(
        Query.BOUNDED_MEAN, bound=cap, n=n, relation=ledger.relation, rows_per_unit=rows_per_unit
    )
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


@dataclass(frozen=True)
class NoisySandwich:
    """A sandwich covariance from released moments, and how much their noise makes it vary.

    ``cov`` is the sandwich itself; ``dof`` gives, per coordinate, Satterthwaite degrees of
    freedom 2 V_jj^2 / Var(V_jj), with Var(V_jj) the first-order (delta-method) variance
    that the bread's and the meat's noise give the diagonal (:func:`noisy_sandwich`);
    ``meat_dof`` the same from the meat's noise alone (V is linear in the meat, so for it the
    first-order variance is exact).
    """

    cov: np.ndarray
    dof: np.ndarray
    meat_dof: np.ndarray

    def noisy_meat(self) -> bool:
        """Whether the meat's noise alone leaves some coordinate fewer than
        :data:`MEAT_DOF` degrees of freedom: its variance estimate's noise s.d. exceeds
        sqrt(2 / MEAT_DOF) = 0.71 of itself, so it can be near zero or negative, and a
        Student-t interval no longer describes it (:data:`NOISY_MEAT`)."""
        return bool(np.min(self.meat_dof) < MEAT_DOF)


def _form_variance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Var(x_j' E y_j) / s^2 per column j, for E symmetric with i.i.d. N(0, s^2) upper triangle.

    x'Ey = sum_a E_aa x_a y_a + sum_{a<b} E_ab (x_a y_b + x_b y_a), so its variance is
    s^2 (|x|^2 |y|^2 + (x'y)^2 - sum_a x_a^2 y_a^2).
    """
    return (
        np.sum(x**2, axis=0) * np.sum(y**2, axis=0)
        + np.sum(x * y, axis=0) ** 2
        - np.sum(x**2 * y**2, axis=0)
    )


def noisy_sandwich(
    bread: NoisyMoment,
    meat: NoisyMoment,
    n: int,
    *,
    left: np.ndarray | None = None,
    right: np.ndarray | None = None,
) -> NoisySandwich:
    """V = L A^-1 R Omega R' A^-1 L' / n from a released bread A and meat Omega, with dof.

    A and Omega are the releases through :meth:`NoisyMoment.shrunk` (eigenvalues de-spread
    within noise-level groups, raised to one noise s.d.): a projection onto the noise floor
    would inflate a meat whose noise is large against it and understate the variance along a
    bread eigenvalue below the floor (docs/inference.md). ``left`` (L) maps the bread's
    coordinates to the coefficients' and ``right`` (R) the meat's to the bread's (identity
    when None): the DP-GD default releases both whitened (L = P, R = I), AdaSSP its bread in
    the design's coordinates and its meat whitened (L = I, R = P^-1).

    The noise of both releases is carried into the interval (so that it can never make the
    interval narrower than its sampling error warrants): to first order, the bread's noise E
    moves V_jj by -2 a_j' E w_j (a_j = A^-1 L' e_j, w_j = A^-1 S a_j, S = R Omega R' / n) and
    the meat's noise F by x_j' F x_j / n (x_j = R' a_j); with both noises Gaussian with public
    s.d., Var(V_jj) follows in closed form (:func:`_form_variance`) and V_jj is treated as
    chi-squared with dof_j = 2 V_jj^2 / Var(V_jj) degrees of freedom (Satterthwaite 1946).
    Post-processing of the releases.
    """
    A = bread.shrunk()
    k = A.shape[0]
    L = np.eye(k) if left is None else np.asarray(left, dtype=np.float64)
    R = np.eye(k) if right is None else np.asarray(right, dtype=np.float64)
    A_inv = np.linalg.inv(A)
    S = R @ meat.shrunk() @ R.T / n
    a = A_inv @ L.T  # column j: A^-1 L' e_j
    cov = a.T @ S @ a
    cov = (cov + cov.T) / 2.0
    from_meat = (meat.noise_std / n) ** 2 * _form_variance(R.T @ a, R.T @ a)
    from_bread = 4.0 * bread.noise_std**2 * _form_variance(a, A_inv @ S @ a)
    diag = np.clip(np.diag(cov), 0.0, None)

    def dof(variance: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(variance > 0, 2.0 * diag**2 / np.maximum(variance, 1e-300), np.inf)
        return np.maximum(out, 1.0)

    return NoisySandwich(cov=cov, dof=dof(from_meat + from_bread), meat_dof=dof(from_meat))
