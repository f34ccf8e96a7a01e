"""Average marginal effects of a private GLM, with delta-method intervals (post-processing).

The average marginal effect of feature j is AME_j = (1/n) sum_i dmu/deta(eta_i) beta_j
(statsmodels' ``get_margeff(at="overall")``), in the features' original units. Its target is
the population's E[dmu/deta(eta)] beta*_j, so its variance has three parts (delta method):

* the coefficients' population covariance V, through the gradient a0 J_j + beta_j b, with
  a0 = mean dmu/deta and b = mean d^2mu/deta^2 d_i its derivative in theta;
* the sampling spread of a0 over the records, (mean(a^2) - a0^2) / n;
* the noise of the release behind a0.

Binomial fits release (a0, mean a^2, b) at the estimate (``margins=True``,
:func:`dpfit.algorithms._glm_sums.margin_sums`). For the Poisson log link with an intercept
the maximum-likelihood fit has mean(mu_i) = mean(y_i) (the intercept's score equation), so
a0 is the released mean count, with no derivative in theta and the released residual scale
for its spread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...algorithms.glm_family import get_family
from ...inference.population import CovarianceEstimate
from .results import GLMMargins

__all__ = ["glm_margins"]


def glm_margins(
    traj: Any,
    population: CovarianceEstimate,
    J: np.ndarray,
    x_names: list[str],
    intercept: bool,
) -> GLMMargins | None:
    """The average marginal effects of a :func:`~dpfit.algorithms.glm.dp_glm` trajectory in
    the units of ``J`` (design coordinates -> original units), or None when the fit
    released too little for them (module docstring)."""
    c, r = traj.config, traj.releases
    n = c["n"]
    if c["family"] == "poisson":
        if not intercept:
            return None
        a0 = float(np.asarray(r["mean"])[0])
        gradient = np.zeros(J.shape[1])
        spread = (c["scale"] ** 2) / n + c["mean_noise_std"] ** 2
    elif "margins" in r:
        first, _ = get_family(c["family"], c["link"]).margin_bounds()
        a0, mean_square = float(r["margins"][0]), float(r["margins"][1]) * first
        gradient = np.asarray(r["margins"][2:])
        spread = max(mean_square - a0**2, 0.0) / n + c["margins_noise_std"] ** 2
    else:
        return None
    rows = slice(int(intercept), None)  # the features' coefficients, not the intercept
    beta = (J @ traj.estimate)[rows]
    G = a0 * J[rows] + np.outer(beta, gradient)
    cov = G @ population.cov @ G.T + np.outer(beta, beta) * spread
    dof = np.array([population.dof[np.abs(g) > 0].min(initial=np.inf) for g in G])
    return GLMMargins(
        names=tuple(x_names),
        effect=a0 * beta,
        cov=(cov + cov.T) / 2.0,
        dof=np.maximum(dof, 1.0),
        description="Average marginal effects (1/n) sum_i dmu/deta(eta_i) beta_j with "
        "delta-method standard errors around the population's (coefficients' population "
        "covariance, the records' spread of dmu/deta and the release's noise).",
    )
