"""Two-stage least squares (2SLS): the non-private benchmark of private IV regression.

Notation (Liang et al. 2025, Def. 2.3; linearmodels ``IV2SLS``):

=========  ==========================================================================
symbol     meaning
=========  ==========================================================================
X (n x p)  all regressors (exogenous ones included: they are their own instruments)
y (n,)     response
Z (n x q)  all instruments, q >= p
Theta_hat  first stage (Z^T Z)^{-1} Z^T X, shape (q, p)
X_hat      Z Theta_hat = P_Z X, the fitted regressors
beta_hat   (X_hat^T X_hat)^{-1} X_hat^T y = (X^T P_Z X)^{-1} X^T P_Z y
=========  ==========================================================================

Everything here reads the raw data and is **not** differentially private.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .._arrays import readonly
from .._validation import check_alpha, check_iv_data, check_option
from ._classical_result import ClassicalFit

__all__ = ["TwoSLSResult", "two_sls"]

_COV_TYPES = ("unadjusted", "robust")


@dataclass(frozen=True, kw_only=True)
class TwoSLSResult(ClassicalFit):
    """Point estimate, covariance and first stage of a 2SLS fit (non-private).

    Attributes
    ----------
    params : ndarray of shape (p,)
        beta_hat.
    cov : ndarray of shape (p, p)
        Estimated covariance of ``params`` (``cov_type``, ``debiased``).
    bse : ndarray of shape (p,)
        Square roots of the diagonal of ``cov``.
    first_stage : ndarray of shape (q, p)
        Theta_hat, the least-squares regression of X on Z.
    cov_type : str
        ``"unadjusted"`` (homoskedastic) or ``"robust"`` (heteroskedasticity-robust, HC0).
    debiased : bool
        Whether the small-sample factor n / (n - p) was applied (HC1 for ``"robust"``).
    nobs : int
        Number of rows n.
    """

    params: np.ndarray
    cov: np.ndarray
    bse: np.ndarray
    first_stage: np.ndarray
    cov_type: str
    debiased: bool
    nobs: int

    def __post_init__(self) -> None:
        for name in ("params", "cov", "bse", "first_stage"):
            object.__setattr__(self, name, readonly(getattr(self, name)))

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Wald intervals of level 1 - alpha, shape (p, 2); t(n - p) if debiased, else normal.

        This is linearmodels' rule (``IVResults.conf_int``).
        """
        alpha = check_alpha(alpha)
        dist = stats.t(self.df_resid) if self.debiased else stats.norm()
        half = dist.ppf(1.0 - alpha / 2.0) * self.bse
        return np.column_stack([self.params - half, self.params + half])


def two_sls(
    X: Any, y: Any, Z: Any, *, cov_type: str = "unadjusted", debiased: bool = False
) -> TwoSLSResult:
    """Fit y = X beta + e by two-stage least squares with instruments Z (non-private).

    Parameters
    ----------
    X : array-like of shape (n, p)
        All regressors; include a column of ones for an intercept and the exogenous
        regressors (which must then also be columns of ``Z``).
    y : array-like of shape (n,)
        Response.
    Z : array-like of shape (n, q)
        All instruments, q >= p.
    cov_type : {"unadjusted", "robust"}, default="unadjusted"
        Homoskedastic covariance s^2 (X_hat^T X_hat)^{-1} with s^2 = e^T e / n, or the
        heteroskedasticity-robust sandwich (HC0), exactly as ``linearmodels.IV2SLS``.
    debiased : bool, default=False
        Multiply the covariance by n / (n - p) (turns HC0 into HC1) and use t(n - p) intervals.

    Returns
    -------
    TwoSLSResult

    Raises
    ------
    ValueError
        Non-finite values, mismatched lengths or under-identification (q < p).
    numpy.linalg.LinAlgError
        Z or X_hat is rank deficient.

    Notes
    -----
    beta_hat = (X_hat^T X_hat)^{-1} X_hat^T y with X_hat = P_Z X (Liang et al. 2025,
    Def. 2.3; the bi-level problem eq. 2). Residuals use the original X: e = y - X beta_hat.
    Least-squares solves, no explicit inverse of a data matrix.

    Privacy: none. This is the benchmark DP-2S-GD is measured against; it reads the raw data.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(500, 1)); u = rng.normal(size=500)
    >>> x = z[:, 0] + u + rng.normal(size=500)
    >>> y = 2.0 * x + u + rng.normal(size=500)
    >>> fit = two_sls(x[:, None], y, z)
    >>> bool(abs(fit.params[0] - 2.0) < 0.2)
    True
    """
    X, y, Z = check_iv_data(X, y, Z)
    cov_type = check_option(cov_type, "cov_type", _COV_TYPES)
    if not isinstance(debiased, bool):
        raise TypeError(f"debiased must be a bool, got {type(debiased).__name__}")
    n, p = X.shape
    if debiased and n <= p:
        raise ValueError("debiased covariance needs more rows than regressor columns")
    theta = _lstsq(Z, X)
    X_hat = Z @ theta
    beta = _lstsq(X_hat, y)
    e = y - X @ beta
    # (X_hat^T X_hat)^{-1} via a solve against the identity of the small p x p Gram matrix.
    bread = np.linalg.solve(X_hat.T @ X_hat, np.eye(p))
    if cov_type == "unadjusted":
        cov = (e @ e / n) * bread
    else:
        meat = (X_hat * (e**2)[:, None]).T @ X_hat
        cov = bread @ meat @ bread
    if debiased:
        cov = cov * (n / (n - p))
    cov = (cov + cov.T) / 2.0
    return TwoSLSResult(
        params=beta,
        cov=cov,
        bse=np.sqrt(np.diag(cov)),
        first_stage=theta,
        cov_type=cov_type,
        debiased=debiased,
        nobs=n,
    )


def _lstsq(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Least-squares solution of A W = B; raises LinAlgError when A has deficient column rank."""
    W, _, rank, _ = np.linalg.lstsq(A, B, rcond=None)
    if rank < A.shape[1]:
        raise np.linalg.LinAlgError("2SLS: a design matrix is rank deficient")
    return W
