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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MomentTwoSLS", "moment_noise_covariance", "two_sls_from_moments"]


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
        tr(W): noise of std s in Q adds about s^2 tr(W) to Q' W Q (attenuation).
    """

    beta: np.ndarray
    G: np.ndarray
    strength: np.ndarray
    weight_trace: float


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
    return MomentTwoSLS(
        beta=G @ b,
        G=G,
        strength=np.linalg.eigvalsh((A + A.T) / 2.0),
        weight_trace=float(np.trace(W)),
    )


def moment_noise_covariance(
    k: int, x_idx: Sequence[int], z_idx: Sequence[int], y_idx: int, beta: np.ndarray
) -> np.ndarray:
    """Covariance / s^2 of v = E_zy - E_zx beta for E symmetric, i.i.d. N(0, s^2) upper triangle.

    With c the k-vector that is 1 at y and -beta at the regressors, v = E[z, :] c. Entry
    (a, b), a <= b, of the upper triangle enters row a with weight c_b and (when a != b) row
    b with weight c_a; so v = L u for the noise vector u and Cov(v) = s^2 L L'. Exact.
    """
    c = np.zeros(k)
    c[y_idx] = 1.0
    np.subtract.at(c, list(x_idx), np.asarray(beta, dtype=np.float64))
    row = {col: r for r, col in enumerate(z_idx)}
    upper = np.triu_indices(k)
    L = np.zeros((len(row), upper[0].size))
    for t, (a, b) in enumerate(zip(*upper, strict=True)):
        if a in row:
            L[row[a], t] += c[b]
        if a != b and b in row:
            L[row[b], t] += c[a]
    return L @ L.T
