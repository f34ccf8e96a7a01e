"""2SLS from released second moments, its robust sandwich and the law of the moment noise.

The private IV default of :class:`~dpfit.DPIVRegression` releases one noisy second-moment
matrix M~ = (1/n) sum_i a_i a_i' + E of the rows a_i = (design columns, y) (intercept,
exogenous regressors, endogenous regressors, excluded instruments, response; each column
once) and computes 2SLS from its blocks (docs/inference.md):

    S = M_zz,  Q = M_zx,  b = M_zy,  W = S^-1,  G = (Q' W Q)^-1 Q' W,  beta = G b.

Its error around the population beta* has two parts (Evans et al. 2024 for the
noisy-sufficient-statistics route; Avella-Medina et al. 2023, Thm 3, for adding them):

* **sampling** -- the heteroscedasticity-robust 2SLS sandwich G Omega G' / n with
  Omega = (1/n) sum z_i z_i' e_i^2 (the covariance linearmodels' ``IV2SLS`` reports with
  ``cov_type="robust"``), with G from M~ and Omega from a second private release;
* **privacy** -- to first order in the noise E, beta~ - beta_hat = G (E_zy - E_zx beta) (the
  terms E_zz and E_zx' W (b - Q beta) multiply the moment residual b - Q beta, which is zero
  when just identified and O(n^-1/2 + noise) otherwise: second order). E has i.i.d.
  N(0, s^2) entries on its upper triangle, so this part's covariance G C G' is exact in
  closed form (:func:`moment_noise_covariance`).

Everything here is post-processing of releases.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MomentTwoSLS", "moment_noise_covariance", "noise_rows", "two_sls_from_moments"]


@dataclass(frozen=True, kw_only=True)
class MomentTwoSLS:
    """2SLS computed from a (released) second-moment matrix.

    Attributes
    ----------
    beta : ndarray (p,)
        The coefficients.
    G : ndarray (p, q)
        (Q' W Q)^-1 Q' W: d beta / d b, the map of a moment perturbation to the coefficients.
    strength : ndarray (p,)
        Eigenvalues of Q' W Q (the first stage's strength in the moments' units).
    weight_trace : float
        tr(W): noise of std s in Q adds about s^2 tr(W) I to Q' W Q, which attenuates beta
        by about s^2 tr(W) (Q' W Q)^-1 beta (:meth:`attenuation_bias`).
    strength_inverse : ndarray (p, p)
        (Q' W Q)^-1.
    strength_reach : float
        |W Q v| for v the eigenvector of Q' W Q's smallest eigenvalue: that eigenvalue's first
        order noise is v' dA v = 2 u' E_zx v - u' E_zz u with u = W Q v, of s.d. at most
        s sqrt(2) (2 |u| + |u|^2) (:meth:`unidentified`).
    weakest : ndarray (p,)
        That eigenvector v: the direction of the coefficients the moments identify least.
    """

    beta: np.ndarray
    G: np.ndarray
    strength: np.ndarray
    weight_trace: float
    strength_inverse: np.ndarray
    strength_reach: float
    weakest: np.ndarray

    def unidentified(self, noise_std: float, z: float = 2.0) -> bool:
        """Whether the smallest strength is within ``z`` of its noise s.d. bounds of zero
        (a bilinear form a' E b of the symmetric noise has s.d. at most s sqrt(2) |a| |b|,
        :meth:`~dpfit.inference.population.NoisyMoment.floor_binds`): there the first-order
        law of the noise, on which the interval rests, no longer holds."""
        u = self.strength_reach
        return float(self.strength[0]) < z * noise_std * math.sqrt(2.0) * (2.0 * u + u**2)

    def attenuation_bias(self, noise_std: float) -> np.ndarray:
        """The first-order bias the moment noise (s.d. ``noise_std`` per entry) puts on beta:
        E[Q~' W Q~] = Q' W Q + s^2 tr(W) I, so beta~ is shrunk by s^2 tr(W) (Q' W Q)^-1 beta."""
        return noise_std**2 * self.weight_trace * self.strength_inverse @ self.beta


def two_sls_from_moments(
    M: np.ndarray, x_idx: Sequence[int], z_idx: Sequence[int], y_idx: int, *, zz_floor: float
) -> MomentTwoSLS:
    """beta = (Q' W Q)^-1 Q' W b from the blocks of M (module docstring).

    ``zz_floor`` is the public eigenvalue floor of M_zz (its noise level): M_zz is projected
    onto eigenvalues >= it before inversion, so a noisy release never yields a negative
    weight matrix.
    """
    x_idx, z_idx = list(x_idx), list(z_idx)
    S = M[np.ix_(z_idx, z_idx)]
    values, vectors = np.linalg.eigh((S + S.T) / 2.0)
    W = (vectors / np.maximum(values, zz_floor)) @ vectors.T
    Q = M[np.ix_(z_idx, x_idx)]
    b = M[z_idx, y_idx]
    A = Q.T @ W @ Q
    G = np.linalg.solve(A, Q.T @ W)
    strength, directions = np.linalg.eigh((A + A.T) / 2.0)
    return MomentTwoSLS(
        beta=G @ b,
        G=G,
        strength=strength,
        weight_trace=float(np.trace(W)),
        strength_inverse=np.linalg.inv(A),
        strength_reach=float(np.linalg.norm(W @ Q @ directions[:, 0])),
        weakest=directions[:, 0],
    )


def moment_noise_covariance(
    k: int, x_idx: Sequence[int], z_idx: Sequence[int], y_idx: int, beta: np.ndarray
) -> np.ndarray:
    """Covariance / s^2 of v = E_zy - E_zx beta for E symmetric, i.i.d. N(0, s^2) upper triangle.

    With c the k-vector that is 1 at y and -beta at the regressors, v = E[z, :] c = L u for
    the noise vector u (:func:`noise_rows`), so Cov(v) = s^2 L L'. Exact.
    """
    c = np.zeros(k)
    c[y_idx] = 1.0
    np.subtract.at(c, list(x_idx), np.asarray(beta, dtype=np.float64))
    L = noise_rows(c, z_idx)
    return L @ L.T


def noise_rows(c: np.ndarray, rows: Sequence[int]) -> np.ndarray:
    """The matrix L with E[rows, :] c = L u, u the upper-triangle noise of a symmetric E.

    Entry (a, b), a <= b, of the upper triangle enters row a of E c with weight c_b and (when
    a != b) row b with weight c_a. Shape (len(rows), k (k + 1) / 2), in the order of
    ``numpy.triu_indices(k)``; for i.i.d. N(0, s^2) noise, Cov(E[rows, :] c) = s^2 L L'.
    """
    c = np.asarray(c, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.intp)
    position = np.full(c.size, -1)
    position[rows] = np.arange(rows.size)
    a, b = np.triu_indices(c.size)
    t = np.arange(a.size)
    L = np.zeros((rows.size, a.size))
    first = position[a] >= 0
    np.add.at(L, (position[a][first], t[first]), c[b][first])
    second = (position[b] >= 0) & (a != b)
    np.add.at(L, (position[b][second], t[second]), c[a][second])
    return L
