"""The non-private maximum-likelihood GLM with its robust (HC0) standard errors.

The reference of the private GLM (:func:`dpfit.algorithms.glm.dp_glm`): Newton's method on
the negative log-likelihood with the observed weights of
:class:`~dpfit.algorithms.glm_family.Family` (logit, probit or log link), started at zero
(Poisson: at the intercept-only fit), and the sandwich H^-1 Omega H^-1 with H the observed
information and Omega = sum r_i^2 d_i d_i' (r_i the score residual; y_i - mu_i for the
canonical links): what statsmodels' ``GLM(...).fit(cov_type="HC0")`` reports (checked
against it in tests/experiments/test_glm_coverage.py), in a few matrix products.

Everything here reads the raw data and is **not** differentially private.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..algorithms.glm_family import get_family

__all__ = ["glm_mle"]


def glm_mle(
    D: ArrayLike,
    y: ArrayLike,
    family: str = "binomial",
    offset: ArrayLike | None = None,
    link: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The MLE and its HC0 standard errors, for ``family`` ``"binomial"`` (``link`` logit,
    the default, or probit) or ``"poisson"`` (log); ``D`` includes the ones column if the
    model has an intercept (its first column, for the Poisson start). Not private."""
    fam = get_family(family, link)
    D, y = np.asarray(D, dtype=np.float64), np.asarray(y, dtype=np.float64)
    o = np.zeros(len(y)) if offset is None else np.asarray(offset, dtype=np.float64)
    theta = np.zeros(D.shape[1])
    if fam.name == "poisson":
        theta[0] = np.log(max(y.mean(), 1e-3)) - o.mean()
    with np.errstate(all="ignore"):
        for _ in range(100):
            eta = D @ theta + o
            w = fam.weight(eta, y)
            step = np.linalg.solve((D * w[:, None]).T @ D, D.T @ fam.score(eta, y))
            theta = theta + step
            if np.max(np.abs(step)) < 1e-10:
                break
        eta = D @ theta + o
        bread = np.linalg.inv((D * fam.weight(eta, y)[:, None]).T @ D)
        meat = (D * (fam.score(eta, y) ** 2)[:, None]).T @ D
    return theta, np.sqrt(np.diag(bread @ meat @ bread))
