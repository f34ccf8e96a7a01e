"""Exact law of unclipped DP-GD iterates and the predictions built on it (Brown et al. 2024).

Notation (the paper's symbols clash with common usage; as in docs/brown2024.md):
Sigma = X^T X / n (uncentred), theta_hat the OLS solution, eta = ``step_size``,
lambda = ``noise_std`` (std of the noise on the mean gradient), M = I - eta Sigma, D = M^2,
A^(t) = (I - D)^{-1} (I - D^t) = sum_{k<t} M^{2k}.

Without clipping, theta_t - theta_hat = M (theta_{t-1} - theta_hat) + eta z_t with
z_t ~ N(0, lambda^2 I), so (Lemma 2.3 / C.4, eqs. 83-94)

    E[theta_t]               = theta_hat + M^t (theta_0 - theta_hat)
    Cov(theta_t)             = eta^2 lambda^2 A^(t)
    Cov(theta_s, theta_t)    = M^(s-t) Cov(theta_t)                      (s >= t)
    Cov(theta_inf)           = eta^2 lambda^2 (I - M^2)^{-1}
                             = eta lambda^2 [Sigma (2I - eta Sigma)]^{-1}     (stationary).

Everything is computed in the eigenbasis Sigma = U diag(mu) U^T, per eigenvalue with
phi = 1 - eta mu and a = 1 - phi^2 = eta mu (2 - eta mu) formed without cancellation. Only I - D
must be invertible where a stationary law is used (0 < eta mu < 2); the paper's extra assumption
that D is invertible is not needed (docs/brown2024.md, Departures). All functions are exact unless
they say "approximately". They take Sigma, theta_hat and lambda as inputs: fed with private
data they are **non-private** diagnostics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special, stats

from .._validation import check_alpha, check_array, check_int, check_positive, check_vector

__all__ = [
    "block_mean_covariance",
    "c4",
    "expected_interval_length",
    "final_iterate_error",
    "iterate_cross_covariance",
    "iterate_law",
    "stationary_covariance",
]

#: Blocks up to this length use the exact double sum for the block-mean variance.
_DIRECT_SUM_MAX = 4096


def _eig(Sigma: Any, step_size: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Eigenvalues mu, vectors U, phi = 1 - eta mu and a = eta mu (2 - eta mu)."""
    Sigma = check_array(Sigma, "Sigma", ndim=2)
    if Sigma.shape[0] != Sigma.shape[1]:
        raise ValueError(f"Sigma must be square, got shape {Sigma.shape}")
    mu, U = np.linalg.eigh((Sigma + Sigma.T) / 2.0)
    step = step_size * mu
    return mu, U, 1.0 - step, step * (2.0 - step)


def _require_stable(a: np.ndarray) -> None:
    if not np.all(a > 0):
        raise ValueError(
            "the stationary law needs 0 < step_size * mu < 2 for every eigenvalue mu of Sigma"
        )


def _geometric_ratio(a: np.ndarray, t: int) -> np.ndarray:
    """sum_{k<t} (1 - a)^k = (1 - (1 - a)^t) / a, accurate for a near 0 (= t at a = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -np.expm1(t * np.log1p(-a)) / a
    return np.where(np.abs(a) < 1e-300, float(t), out)


def _from_eig(U: np.ndarray, values: np.ndarray) -> np.ndarray:
    return (U * values) @ U.T


def iterate_law(
    Sigma: Any,
    *,
    step_size: float,
    noise_std: float,
    t: int,
    theta0: Any,
    theta_hat: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of the unclipped iterate theta_t (Lemma 2.3; exact).

    Parameters
    ----------
    Sigma : array-like of shape (p, p)
        X^T X / n.
    step_size, noise_std : float
        eta and lambda.
    t : int
        Iteration, t >= 0 (theta_0 has covariance 0).
    theta0, theta_hat : array-like of shape (p,)

    Returns
    -------
    mean : ndarray of shape (p,)
        theta_hat + M^t (theta_0 - theta_hat).
    cov : ndarray of shape (p, p)
        eta^2 lambda^2 A^(t).

    Examples
    --------
    >>> import numpy as np
    >>> mean, cov = iterate_law(np.eye(2), step_size=0.5, noise_std=1.0, t=1,
    ...                         theta0=np.zeros(2), theta_hat=np.ones(2))
    >>> mean.tolist(), np.diag(cov).tolist()
    ([0.5, 0.5], [0.25, 0.25])
    """
    step_size = check_positive(step_size, "step_size")
    noise_std = check_positive(noise_std, "noise_std")
    t = check_int(t, "t", low=0)
    _, U, phi, a = _eig(Sigma, step_size)
    p = U.shape[0]
    theta_hat = check_vector(theta_hat, "theta_hat", size=p)
    offset = check_vector(theta0, "theta0", size=p) - theta_hat
    mean = theta_hat + U @ (phi**t * (U.T @ offset))
    return mean, (step_size * noise_std) ** 2 * _from_eig(U, _geometric_ratio(a, t))


def iterate_cross_covariance(
    Sigma: Any, *, step_size: float, noise_std: float, s: int, t: int
) -> np.ndarray:
    """Cov(theta_s, theta_t) = M^(s-t) Cov(theta_t) for s >= t (eqs. 93-94; exact)."""
    step_size = check_positive(step_size, "step_size")
    noise_std = check_positive(noise_std, "noise_std")
    t = check_int(t, "t", low=0)
    s = check_int(s, "s", low=t)
    _, U, phi, a = _eig(Sigma, step_size)
    values = phi ** (s - t) * _geometric_ratio(a, t)
    return (step_size * noise_std) ** 2 * _from_eig(U, values)


def stationary_covariance(Sigma: Any, *, step_size: float, noise_std: float) -> np.ndarray:
    """eta^2 lambda^2 (I - M^2)^{-1}, the limit of Cov(theta_t) (needs 0 < eta mu < 2).

    Isotropic case Sigma = I: eta lambda^2 / (2 - eta) per coordinate.

    Examples
    --------
    >>> round(float(stationary_covariance([[1.0]], step_size=0.2, noise_std=1.0)[0, 0]), 6)
    0.111111
    """
    step_size = check_positive(step_size, "step_size")
    noise_std = check_positive(noise_std, "noise_std")
    _, U, _, a = _eig(Sigma, step_size)
    _require_stable(a)
    return (step_size * noise_std) ** 2 * _from_eig(U, 1.0 / a)


def _block_factor(phi: np.ndarray, length: int) -> np.ndarray:
    """(1/N^2) sum_{i,j<N} phi^|i-j| for each phi (|phi| < 1): the block-mean variance ratio."""
    if length <= _DIRECT_SUM_MAX:
        k = np.arange(1, length)
        lags = (length - k) * phi[:, None] ** k
        return (length + 2.0 * lags.sum(axis=1)) / length**2
    d = 1.0 - phi
    tail = -np.expm1(length * np.log1p(-d))  # 1 - phi^N
    return (length * (1.0 + phi) / d - 2.0 * phi * tail / d**2) / length**2


def block_mean_covariance(
    Sigma: Any, *, step_size: float, noise_std: float, length: int
) -> np.ndarray:
    """Covariance of the mean of ``length`` consecutive stationary iterates (from Lemma 2.3; exact).

    Per eigen-direction with v = eta^2 lambda^2 / (1 - phi^2):
    Var = v / N^2 [N (1 + phi) / (1 - phi) - 2 phi (1 - phi^N) / (1 - phi)^2]; for large N
    the covariance is approximately lambda^2 / N * Sigma^{-2}.
    """
    step_size = check_positive(step_size, "step_size")
    noise_std = check_positive(noise_std, "noise_std")
    length = check_int(length, "length", low=1)
    _, U, phi, a = _eig(Sigma, step_size)
    _require_stable(a)
    values = (step_size * noise_std) ** 2 / a * _block_factor(phi, length)
    return _from_eig(U, values)


def c4(m: int) -> float:
    """E[s] / sigma for the sample std of m Gaussians: sqrt(2/(m-1)) Gamma(m/2) / Gamma((m-1)/2).

    Examples
    --------
    >>> round(c4(10), 4)
    0.9727
    """
    m = check_int(m, "m", low=2)
    return math.sqrt(2.0 / (m - 1)) * math.exp(
        special.gammaln(m / 2) - special.gammaln((m - 1) / 2)
    )


def expected_interval_length(
    Sigma: Any,
    *,
    step_size: float,
    noise_std: float,
    m: int,
    length: int = 1,
    alpha: float = 0.05,
) -> np.ndarray:
    """Predicted mean length of each coordinate's t-interval from m estimates (from Lemma 2.3).

    2 t_{1-alpha/2, m-1} c4(m) sqrt(V_jj / m), where V is the stationary covariance of one
    estimate: the mean of ``length`` consecutive iterates (batched means with batches of
    ``length``; experimental independent runs with ``length`` post-burn-in iterates per run)
    or a single iterate (``length=1``: checkpoints, formal independent runs). Exact for m
    independent stationary estimates; consecutive checkpoints or batches are correlated
    (through phi^length), which this neglects, so it is approximate for them.

    Examples
    --------
    >>> import numpy as np
    >>> lam = 0.57735  # n = 1e4, p = 10, clip = 5 sqrt(10), rho = 0.015, 1000 steps
    >>> L = expected_interval_length(np.eye(10), step_size=0.2, noise_std=lam, m=10)
    >>> round(float(L[0]), 3)
    0.268
    """
    m = check_int(m, "m", low=2)
    alpha = check_alpha(alpha)
    V = block_mean_covariance(Sigma, step_size=step_size, noise_std=noise_std, length=length)
    quantile = stats.t.ppf(1.0 - alpha / 2.0, m - 1)
    return 2.0 * quantile * c4(m) * np.sqrt(np.diag(V) / m)


def final_iterate_error(
    Sigma: Any, *, step_size: float, noise_std: float, steps: int, theta0: Any, theta_hat: Any
) -> float:
    """E ||theta_T - theta_hat||^2 = ||M^T (theta_0 - theta_hat)||^2 + eta^2 lambda^2 tr A^(T).

    The privacy error of the unclipped final iterate (from Lemma 2.3; exact): a bias that decays
    like (1 - eta mu_min)^T and does not shrink with n, plus noise linear in p / n.
    """
    law = {"step_size": step_size, "noise_std": noise_std, "theta0": theta0}
    mean, cov = iterate_law(Sigma, t=steps, theta_hat=theta_hat, **law)
    bias = mean - np.asarray(theta_hat, dtype=np.float64)
    return float(bias @ bias + np.trace(cov))
