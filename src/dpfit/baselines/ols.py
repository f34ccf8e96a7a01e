"""Ordinary least squares with its classical interval: the non-private reference of DP-GD.

theta_hat = argmin ||y - X theta||^2 (computed by ``lstsq``, never an explicit inverse) is
the target of DP-GD's intervals (Brown et al. 2024, Section 3.1). The classical interval for
theta* (the dashed line of Figs. 6/11) is theta_hat_j +/- t_{1 - alpha/2, n - p} * s *
sqrt([(X^T X)^{-1}]_jj), with s^2 = RSS / (n - p).

Everything here reads the raw data and is **not** differentially private.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from .._arrays import readonly
from .._deprecation import renamed_function
from .._validation import check_X_y
from ..inference.intervals import t_interval_from_stderr
from ._classical_result import ClassicalFit

__all__ = ["OLSResult", "nonprivate_ols", "ols"]


@dataclass(frozen=True, kw_only=True)
class OLSResult(ClassicalFit):
    """A non-private least-squares fit.

    Attributes
    ----------
    params : ndarray of shape (p,)
        theta_hat.
    bse : ndarray of shape (p,)
        Classical (homoskedastic) standard errors s * sqrt([(X^T X)^{-1}]_jj).
    sigma2 : float
        s^2 = RSS / (n - p).
    nobs : int
        Number of rows n.
    """

    params: np.ndarray
    bse: np.ndarray
    sigma2: float
    nobs: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", readonly(self.params))
        object.__setattr__(self, "bse", readonly(self.bse))

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Classical t(n - p) intervals of level 1 - alpha for theta*, shape (p, 2)."""
        _, lower, upper = t_interval_from_stderr(
            self.params, self.bse, dof=self.df_resid, alpha=alpha
        )
        return np.column_stack([lower, upper])


def nonprivate_ols(X: Any, y: Any) -> OLSResult:
    """Fit y = X theta + e by least squares (non-private).

    Parameters
    ----------
    X : array-like of shape (n, p)
        Design matrix with n > p and full column rank (add a column of ones for an intercept).
    y : array-like of shape (n,)
        Response.

    Returns
    -------
    OLSResult

    Raises
    ------
    ValueError
        Invalid data, n <= p or a rank-deficient X.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> fit = nonprivate_ols(X, [1.0, 3.0, 5.0, 7.5])
    >>> np.round(fit.params, 3).tolist()
    [0.9, 2.15]
    """
    X, y = check_X_y(X, y)
    n, p = X.shape
    if n <= p:
        raise ValueError(f"ols needs more rows than columns, got n={n}, p={p}")
    Q, R = scipy.linalg.qr(X, mode="economic")
    diag = np.abs(np.diag(R))
    if not diag.min() > diag.max() * n * np.finfo(float).eps:
        raise ValueError("X is rank deficient: ols needs full column rank")
    params = scipy.linalg.solve_triangular(R, Q.T @ y)
    resid = y - X @ params
    sigma2 = float(resid @ resid) / (n - p)
    r_inv = scipy.linalg.solve_triangular(R, np.eye(p))  # (X^T X)^{-1} = R^{-1} R^{-T}
    bse = np.sqrt(sigma2 * np.einsum("ij,ij->i", r_inv, r_inv))
    return OLSResult(params=params, bse=bse, sigma2=sigma2, nobs=n)


#: Deprecated name of :func:`nonprivate_ols` (it read like the private :func:`dpfit.ols`).
ols = renamed_function(nonprivate_ols, "dpfit.baselines.ols", "dpfit.baselines.nonprivate_ols")
