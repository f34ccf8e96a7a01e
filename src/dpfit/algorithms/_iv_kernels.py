"""Two-stage least squares kernels (DP-2S-GD, Liang et al. 2025, Alg. 1): both stages' sums.

Each per-example gradient of either stage is a rank-1 outer product, so its Frobenius norm is
the product of two row norms and no n x q x p tensor is built (notation in
:mod:`dpfit.algorithms._kernels`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._floats import quiet_floats
from ..distributed import is_dask
from ..mechanisms import clip_factors, row_norms, scale_rows
from ._kernel_runs import run

__all__ = ["clipped_outer_sum", "two_stage_block", "two_stage_sums"]


@quiet_floats()
def clipped_outer_sum(
    features: np.ndarray, residuals: np.ndarray, feature_norms: np.ndarray, clip: float | None
) -> tuple[np.ndarray, int]:
    """sum_i CLIP(f_i r_i^T) = F^T (c * R) and the number of rows clipped.

    ``residuals`` is (n, k) or (n,); each per-example gradient is the outer product of a row of
    ``features`` with a row of ``residuals``, whose Frobenius norm is the product of the norms.
    A row whose norm is not finite (a non-finite feature or residual, or a product of norms
    beyond float64) gets factor 0 and contributes exactly 0: its feature row is zeroed too, as
    ``inf * 0`` would be NaN (the zero rule of :mod:`dpfit.mechanisms.clipping`).
    """
    R = residuals if residuals.ndim == 2 else residuals[:, None]
    if clip is None:
        grad = features.T @ R
        return (grad if residuals.ndim == 2 else grad[:, 0]), 0
    factors = clip_factors(feature_norms * row_norms(R), clip)
    if not factors.all():  # some row is zeroed: zero its features as well
        features = scale_rows(features, factors > 0)
    grad = features.T @ scale_rows(R, factors)
    return (grad if residuals.ndim == 2 else grad[:, 0]), int(np.count_nonzero(factors < 1.0))


@quiet_floats()
def two_stage_block(
    X: np.ndarray,
    y: np.ndarray,
    Z: np.ndarray,
    theta: np.ndarray,
    beta: np.ndarray,
    clip_theta: float | None,
    clip_beta: float | None,
    first: bool,
    z_norms=None,
) -> np.ndarray:
    """[G1 (q*p), #clipped1, g2 (p), #clipped2]: both stages' clipped sums at (Theta, beta).

    G1 = sum_i CLIP(z_i (Theta^T z_i - x_i)^T) (skipped, zeros, when ``first`` is False) and
    g2 = sum_i CLIP(w_i (w_i.beta - y_i)) with w_i = Theta^T z_i (Liang et al. 2025, Alg. 1).
    """
    W = Z @ theta  # w_i = Theta^T z_i; an overflowing row gets factor 0 below
    w_norms = row_norms(W)
    s = W @ beta - y
    if first:
        z_norms = row_norms(Z) if z_norms is None else z_norms
        g1, c1 = clipped_outer_sum(Z, W - X, z_norms, clip_theta)
    else:
        g1, c1 = np.zeros(theta.shape), 0
    g2, c2 = clipped_outer_sum(W, s, w_norms, clip_beta)
    return np.concatenate([g1.ravel(), [c1], g2, [c2]])


def two_stage_sums(X: Any, y: Any, Z: Any, *, clip_theta, clip_beta, first: bool):
    """``sums(Theta, beta) -> (G1, clipped1, g2, clipped2)`` in memory or on Dask."""
    p, q = X.shape[1], Z.shape[1]
    z_norms = () if is_dask(Z) else (row_norms(Z),)

    def sums(theta: np.ndarray, beta: np.ndarray):
        args = (theta, beta, clip_theta, clip_beta, first, *z_norms)
        out = run(two_stage_block, (X, y, Z), args, q * p + p + 2)
        k = q * p
        return out[:k].reshape(q, p), int(out[k]), out[k + 1 : k + 1 + p], int(out[-1])

    return sums
