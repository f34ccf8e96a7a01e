"""Intervals for the population parameter: private second moments and the sandwich.

A private fit's error has two parts: the sampling error of the data's own (clipped-loss)
minimiser theta_hat around the population parameter theta*, and the privacy noise around
theta_hat. Brown et al.'s intervals (:mod:`dpfit.inference.intervals`) cover only the second;
a population interval needs both (Avella-Medina, Bradshaw & Loh 2023, Thm 3; docs/inference.md):

    Cov(theta_dp) = V_sampling + V_privacy,   V_sampling = H^-1 Omega H^-T / n,

with the bread H (the Hessian of the loss; X'X / n for least squares, the Huber Hessian
(1/n) sum x_i x_i' 1{unclipped} when clipping binds) and the meat Omega = (1/n) sum g_i g_i'
of the per-example (clipped) gradients: the heteroscedasticity-robust (HC0) sandwich. H and
Omega are estimated privately by :func:`release_second_moment`.

Contract (shared by the linear and the IV estimators; signatures are stable)
---------------------------------------------------------------------------
``second_moment_sensitivity(bound, n, relation) -> float``
    L2 sensitivity of the upper triangle of (1/n) sum_i a_i a_i' for rows ||a_i|| <= bound.
``release_second_moment(rows, *, bound, rho, n, ledger, rng, label, weights=None)``
    Clips each row to ``bound`` (documented, data-independent), charges ``ledger`` and
    returns a :class:`NoisyMoment`: the symmetric noisy matrix and its entry noise std.
``NoisyMoment.psd()``
    Projection onto matrices with eigenvalues >= the public noise floor (post-processing).
``NoisyMoment.shrunk()``
    The release with eigenvalues de-spread within noise-level groups and raised to one
    noise s.d.: the sandwich's bread, so that the bread's noise neither narrows the interval
    (as a projection onto the noise floor does) nor widens it (as the plain inverse does).
``sandwich(bread, meat, n)``
    B^-1 M B^-T / n for a square (not necessarily symmetric) bread B.
``CovarianceEstimate``
    What a result needs to give intervals, tests and standard errors for one target:
    ``cov`` (p x p), per-coordinate ``dof`` (``inf`` = normal), the ``sampling`` and
    ``privacy`` parts, and a sentence saying what it covers.
``sample_covariance(estimates, description)`` / ``population_covariance(...)``
    Build one from m released estimates (Brown et al. 2024, eq. 12) or from a sandwich
    plus a privacy part (Satterthwaite degrees of freedom when the privacy part is itself
    estimated from m estimates).
``transform(estimate, matrix)``
    A covariance mapped through a linear map (e.g. back to the original units).

Every release goes through :func:`dpfit.mechanisms.gaussian` with a declared sensitivity and
is charged before anything is drawn; everything else here is post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_int, check_rho
from ..mechanisms import NoiseSource, clip_rows, gaussian, noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, Query, Relation, query_sensitivity
from .covariance import (
    TARGETS,
    CovarianceEstimate,
    population_covariance,
    sample_covariance,
    transform,
    welch_dof,
)

__all__ = [
    "TARGETS",
    "CovarianceEstimate",
    "NoisyMoment",
    "population_covariance",
    "release_moment_sum",
    "release_second_moment",
    "sample_covariance",
    "sandwich",
    "second_moment_sensitivity",
    "transform",
    "welch_dof",
]


def second_moment_sensitivity(
    bound: float, n: int, relation: Relation, *, rows_per_unit: int = 1
) -> float:
    """L2 sensitivity of the upper triangle of (1/n) sum_i a_i a_i' when ||a_i|| <= bound.

    Replace-one: ||a a' - b b'||_F^2 = ||a||^4 + ||b||^4 - 2 (a.b)^2 <= 2 bound^4 (the cross
    term is >= 0 for PSD rank-one terms), so the change is sqrt(2) bound^2 / n, not the
    2 bound^2 / n of the triangle inequality; the upper triangle's norm is at most the
    Frobenius norm. Add/remove (public n): bound^2 / n. Both include the float64 rounding
    allowance of the computed Gram sum and division
    (:func:`dpfit.privacy.query_sensitivity`, ``"second-moment"``). An upper bound. With a
    privacy unit of at most ``rows_per_unit`` = K rows (n then counts units) each bound is
    K times as large: a unit's term sum_i a_i a_i' is PSD with trace at most K bound^2.
    """
    return query_sensitivity(
        Query.SECOND_MOMENT, bound=bound, n=n, relation=relation, rows_per_unit=rows_per_unit
    )


@dataclass(frozen=True, kw_only=True)
class NoisyMoment:
    """A released symmetric second-moment matrix and the std of its noise per entry."""

    matrix: np.ndarray
    noise_std: float

    @property
    def floor(self) -> float:
        """Public eigenvalue floor 2 s sqrt(p): about the spectral norm of the noise.

        A symmetric matrix of i.i.d. N(0, s^2) entries has spectral norm close to 2 s sqrt(p)
        (Wigner); eigenvalues of the release below it are indistinguishable from noise.
        """
        return 2.0 * self.noise_std * math.sqrt(self.matrix.shape[0])

    def psd(self, floor: float | None = None) -> np.ndarray:
        """The release with eigenvalues raised to ``floor`` (default :attr:`floor`)."""
        floor = self.floor if floor is None else floor
        values, vectors = np.linalg.eigh(self.matrix)
        return (vectors * np.maximum(values, floor)) @ vectors.T

    def shrunk(self) -> np.ndarray:
        """The sandwich's bread: released eigenvalues de-spread within noise-level groups.

        The sandwich's variance along an eigenvector of its bread with eigenvalue mu is
        proportional to 1 / mu^2. Symmetric noise E spreads eigenvalues that lie within its
        reach of each other (the smallest of a group falls, the largest rises), so the plain
        inverse of the release overstates the variance in a cluster of near-equal eigenvalues
        (1.3-1.7 x the standard error at 1-1.4 x :attr:`floor`), while :meth:`psd`'s
        mu = max(lambda~, floor) understates it whenever a data eigenvalue is below the floor
        (docs/inference.md). Here the sorted released eigenvalues are grouped where adjacent
        gaps are below 2 s sqrt(2) (twice the bound s sqrt(2) on an eigenvalue's first-order
        noise s.d., see :meth:`floor_binds`); within a group of g, the noise alone adds about
        s^2 (g^2 - 1) to the sum of squared deviations from the group mean (E||E_g||_F^2 - the
        trace's share, for g x g noise with entries N(0, s^2)), so the deviations are shrunk
        by the factor max(0, 1 - s^2 (g^2 - 1) / observed), linear shrinkage towards the
        group mean (whose trace is unbiased), as Ledoit & Wolf (2004) do for sample
        covariances. Each eigenvalue is then raised to :attr:`identified` = s sqrt(2), one
        noise s.d., so that the interval stays finite where lambda is not distinguishable
        from zero; :meth:`unidentified` says when that can happen. Eigenvectors are kept.
        Post-processing of the release.
        """
        mu, vectors = self._despread()
        return (vectors * np.maximum(mu, self.identified)) @ vectors.T

    def preconditioner(self) -> np.ndarray:
        """The release de-spread like :meth:`shrunk`, with eigenvalues raised to 2 s sqrt(2).

        A preconditioner P = M^-1/2 for gradient descent at step size eta is stable along an
        eigenvector with data eigenvalue lambda and preconditioner eigenvalue mu as long as
        eta lambda / mu < 2. With mu at least two noise s.d. (2 s sqrt(2)) and an isolated
        eigenvalue's noise s.d. at most s sqrt(2), lambda / mu exceeds 4 (eta = 0.5) only
        when the noise pulls a release below half its data eigenvalue by more than three of
        its s.d.; and eigenvalues far below the projection floor of :meth:`psd` (2 s sqrt(p),
        a conservative bound on the whole noise matrix) are still whitened, so that descent
        converges along them in a few steps. Post-processing of the release.
        """
        mu, vectors = self._despread()
        return (vectors * np.maximum(mu, 2.0 * self.identified)) @ vectors.T

    def _despread(self) -> tuple[np.ndarray, np.ndarray]:
        """The released eigenvalues shrunk within noise-level groups (before the clamp of
        :meth:`shrunk`), ascending, with the release's eigenvectors."""
        values, vectors = np.linalg.eigh(self.matrix)  # ascending
        s = self.noise_std
        mu = values.copy()
        cuts = np.flatnonzero(np.diff(values) >= 2.0 * self.identified) + 1
        for group in np.split(np.arange(values.size), cuts):
            g = group.size
            if g < 2:
                continue
            centre = values[group].mean()
            spread = float(np.sum((values[group] - centre) ** 2))
            keep = max(0.0, 1.0 - s**2 * (g**2 - 1) / spread) if spread > 0.0 else 0.0
            mu[group] = centre + keep * (values[group] - centre)
        return mu, vectors

    @property
    def identified(self) -> float:
        """The least bread eigenvalue of :meth:`shrunk`: s sqrt(2), one noise s.d."""
        return self.noise_std * math.sqrt(2.0)

    def unidentified(self, z: float = 1.0) -> bool:
        """Whether the bread of :meth:`shrunk` may overstate the data's smallest eigenvalue.

        True when the lower confidence bound mu_min - z s sqrt(2) is below
        :attr:`identified`, the value :meth:`shrunk` raises eigenvalues to, where mu_min is
        the smallest de-spread eigenvalue (:meth:`shrunk` before its clamp; the smallest
        released eigenvalue itself is biased low wherever several lie within the noise's
        reach): the data cannot rule out lambda_min < s sqrt(2), where the sandwich built on
        :meth:`shrunk` understates the variance (by up to (lambda / (s sqrt(2)))^2). When it
        is False, lambda_min >= s sqrt(2) with confidence about Phi(z).
        """
        return float(self._despread()[0].min()) - z * self.identified < self.identified

    def min_eigenvalue(self) -> float:
        """Smallest eigenvalue of the release (post-processing)."""
        return float(np.linalg.eigvalsh(self.matrix)[0])

    def floor_binds(self, z: float = 1.0) -> bool:
        """Whether the data's own smallest eigenvalue is below :attr:`floor` (evidence z).

        :meth:`psd` raises released eigenvalues to the floor, which shrinks the inverse in
        that direction: harmless when the data's eigenvalue lambda is above the floor, but
        when it is below, a sandwich built on the projection understates the variance by up
        to (lambda / floor)^2 along it. A released eigenvalue below the floor is not enough
        evidence: for a simple eigenvalue with unit eigenvector v, to first order
        lambda~ - lambda = v'Ev with Var(v'Ev) = s^2 (sum_a v_a^4 + 4 sum_{a<b} v_a^2 v_b^2)
        <= 2 s^2 (upper-triangle noise N(0, s^2), shared by the symmetric entries). So the
        test is lambda~_min < floor - z s sqrt(2). With z = 1 a data eigenvalue exactly at
        the floor triggers it in at most about 16% of releases (one-sided normal tail), one
        at 1.4 x the floor (where coverage is nominal) in 8-10%, and one at 0.45 x the floor
        or below (where the sandwich's standard errors fall to about 0.6 of those with the
        noise-free bread) in 97-100% (measured, docs/inference.md); z = 2 halves the false
        alarms but misses 30-70% of the cases that matter. Post-processing of the release.
        """
        return self.min_eigenvalue() < self.floor - z * self.noise_std * math.sqrt(2.0)


def release_second_moment(
    rows: np.ndarray,
    *,
    bound: float,
    rho: float,
    n: int,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
    weights: np.ndarray | None = None,
) -> NoisyMoment:
    """Release (1/n) sum_i w_i a_i a_i' with Gaussian noise on its upper triangle.

    Parameters
    ----------
    rows : ndarray of shape (rows, k)
        The vectors a_i (private). Rows with norm above ``bound`` are rescaled to it
        first (documented, data-independent behaviour), so the bound always holds.
    bound : float
        Public bound on ||a_i||.
    rho : float
        zCDP cost of this release.
    n : int
        The public number of records that divides the sum.
    ledger, rng, label
        As for :func:`dpfit.mechanisms.gaussian`.
    weights : ndarray of shape (rows,), optional
        Weights in [0, 1] (e.g. 1{gradient unclipped} for the Huber Hessian); they keep
        the sensitivity of :func:`second_moment_sensitivity`.

    Returns
    -------
    NoisyMoment
        Symmetric; entry (j, k) has noise N(0, s^2) shared with (k, j).

    Notes
    -----
    Gaussian mechanism on the k (k + 1) / 2 upper-triangle entries with the sensitivity of
    :func:`second_moment_sensitivity`: rho-zCDP. The noisy matrix need not be PSD; use
    :meth:`NoisyMoment.psd`.
    """
    rows = clip_rows(np.asarray(rows, dtype=np.float64), bound)
    if weights is not None:
        weights = np.clip(np.asarray(weights, dtype=np.float64), 0.0, 1.0)
        rows = rows * np.sqrt(weights)[:, None]
    with np.errstate(all="ignore"):
        upper_sum = (rows.T @ rows)[np.triu_indices(rows.shape[1])]
    return release_moment_sum(
        upper_sum, bound=bound, rho=rho, n=n, ledger=ledger, rng=rng, label=label
    )


def release_moment_sum(
    upper_sum: np.ndarray,
    *,
    bound: float,
    rho: float,
    n: int,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
    rows_per_unit: int = 1,
) -> NoisyMoment:
    """Release (1/n) x an upper-triangle sum of w_i a_i a_i' with ||a_i|| <= ``bound``.

    The step :func:`release_second_moment` ends with, for sums reduced elsewhere (e.g. over a
    Dask array's blocks, :mod:`dpfit.algorithms._linear_moments`): the Gaussian mechanism on the
    k (k + 1) / 2 entries with :func:`second_moment_sensitivity` (rho-zCDP; the charge is at
    most ``rho`` exactly, :func:`dpfit.mechanisms.rho_within`), charged to ``ledger`` before
    the draw. The caller guarantees the bound (rows clipped to it, weights
    in [0, 1]); the sensitivity assumes it. ``rows_per_unit``: the row cap of a privacy
    unit (:func:`second_moment_sensitivity`; ``n`` then counts units).
    """
    rho = check_rho(rho, warn=False)  # a share of a fit's budget: the fit warns for its whole
    n = check_int(n, "n", low=1)
    upper_sum = np.asarray(upper_sum, dtype=np.float64)
    k = (math.isqrt(8 * upper_sum.shape[0] + 1) - 1) // 2
    sensitivity = second_moment_sensitivity(bound, n, ledger.relation, rows_per_unit=rows_per_unit)
    # rho_within: the charge Delta^2 / (2 sigma^2) never rounds above the share
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho))
    with np.errstate(all="ignore"):
        value = upper_sum / n
    noisy = gaussian(
        value, sensitivity=sensitivity, noise_std=noise_std, ledger=ledger, rng=rng, label=label
    )
    upper = np.triu_indices(k)
    out = np.empty((k, k))
    out[upper] = noisy
    out.T[upper] = noisy
    return NoisyMoment(matrix=out, noise_std=noise_std)


def sandwich(bread: ArrayLike, meat: ArrayLike, n: int) -> np.ndarray:
    """B^-1 M B^-T / n: the sampling covariance of an M-estimator (Huber 1967; HC0).

    Parameters
    ----------
    bread : array-like of shape (p, p)
        The Hessian H of the average loss (any square invertible matrix, e.g. the PSD
        projection of a :class:`NoisyMoment`).
    meat : array-like of shape (p, p)
        Omega = (1/n) sum g_i g_i' of the per-example gradients.
    n : int
        Public number of records.
    """
    bread = np.asarray(bread, dtype=np.float64)
    meat = np.asarray(meat, dtype=np.float64)
    left = np.linalg.solve(bread, meat)
    cov = np.linalg.solve(bread, left.T).T / check_int(n, "n", low=1)
    return (cov + cov.T) / 2.0
