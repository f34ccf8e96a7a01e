"""The non-private maximum-likelihood GLM with its robust (HC0) standard errors.

The reference of the private GLM (:func:`dpfit.algorithms.glm.dp_glm`): Newton's method on
the negative log-likelihood of the logit or log link (canonical, so the observed and the
expected information agree), started at zero (Poisson: at the intercept-only fit), and the
sandwich H^-1 Omega H^-1 with Omega = sum (y_i - mu_i)^2 d_i d_i': what statsmodels'
``GLM(...).fit(cov_type="HC0")`` reports (checked against it in
tests/experiments/test_glm_coverage.py), in a few matrix products.

Everything here reads the raw data and is **not** differentially private.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_option

__all__ = ["glm_mle"]


def glm_mle(
    D: ArrayLike, y: ArrayLike, family: str = "binomial", offset: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The MLE and its HC0 standard errors, for ``family`` ``"binomial"`` (logit) or
    ``"poisson"`` (log); ``D`` includes the ones column if the model has an intercept (its
    first column, for the Poisson start). Not private."""
    family = check_option(family, "family", ("binomial", "poisson"))
    D, y = np.asarray(D, dtype=np.float64), np.asarray(y, dtype=np.float64)
    o = np.zeros(len(y)) if offset is None else np.asarray(offset, dtype=np.float64)
    theta = np.zeros(D.shape[1])
    if family == "poisson":
        theta[0] = np.log(max(y.mean(), 1e-3)) - o.mean()
    with np.errstate(all="ignore"):
        for _ in range(100):
            eta = np.clip(D @ theta + o, -50.0, 50.0)
            mu = 1.0 / (1.0 + np.exp(-eta)) if family == "binomial" else np.exp(eta)
            w = mu * (1.0 - mu) if family == "binomial" else mu
            step = np.linalg.solve((D * w[:, None]).T @ D, D.T @ (y - mu))
            theta = theta + step
            if np.max(np.abs(step)) < 1e-10:
                break
        bread = np.linalg.inv((D * w[:, None]).T @ D)
        meat = (D * ((y - mu) ** 2)[:, None]).T @ D
    return theta, np.sqrt(np.diag(bread @ meat @ bread))
