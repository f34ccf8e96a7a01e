"""The parametric bootstrap with bias correction for a private GLM, from its releases only.

The comparator of the sandwich interval in the ``glm-bootstrap`` study (Ferrando, Wang &
Sheldon 2022, "Parametric Bootstrap for Differentially Private Confidence Intervals",
AISTATS, https://proceedings.mlr.press/v151/ferrando22a.html): treat the released estimate
theta~ as the truth, simulate B datasets of the public size n from the fitted model, run the
*same* private fit on each (same plan, fresh privacy noise), and read the interval off the B
replicate estimates theta_b, which carry both the sampling and the privacy error of the
mechanism. The bias correction is the bootstrap's own: theta_bc = 2 theta~ - mean(theta_b)
(the replicates' mean shift estimates the mechanism's bias at theta~), and the interval is
theta_bc +/- t_{B-1} sd(theta_b).

A parametric model of the covariates is needed too, and nothing about them may be read off
the data: the covariates are drawn from the normal distribution whose mean and covariance
are those of the released X'X/n (the first stage of the fit's whitener), clipped into the
public box [-1, 1] of the rescaled design. Offsets are private per-record values that are
not released, so designs with an exposure are out of this bootstrap's reach. Everything
here is post-processing of one fit's releases: simulated data cost no privacy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..algorithms.glm import dp_glm
from ..algorithms.glm_family import get_family

__all__ = ["BootstrapInterval", "parametric_bootstrap"]


@dataclass(frozen=True, kw_only=True)
class BootstrapInterval:
    """The bias-corrected estimate, the replicates' s.d. and the B used (design coordinates)."""

    estimate: np.ndarray
    std: np.ndarray
    replicates: int

    def interval(self, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """theta_bc -/+ t_{1 - alpha/2, B - 1} sd(theta_b)."""
        half = stats.t.ppf(1 - alpha / 2, self.replicates - 1) * self.std
        return self.estimate - half, self.estimate + half


def _covariates(xtx: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n rows [1, z] with z ~ N(mean, cov) of the released X'X/n (design with an intercept),
    clipped into the public box [-1, 1]."""
    mean = xtx[0, 1:]
    cov = xtx[1:, 1:] - np.outer(mean, mean)
    values, vectors = np.linalg.eigh((cov + cov.T) / 2.0)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))  # the nearest PSD covariance's root
    z = mean + rng.standard_normal((n, mean.size)) @ root.T
    return np.column_stack([np.ones(n), np.clip(z, -1.0, 1.0)])


def _responses(D: np.ndarray, theta: np.ndarray, family: Any, K: float | None,
               rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    mu = family.mean(D @ theta)
    if family.name == "binomial":
        return (rng.uniform(size=mu.size) < mu).astype(np.float64)
    return np.minimum(rng.poisson(np.minimum(mu, 1e6)), K).astype(np.float64)


def parametric_bootstrap(
    traj: Any, *, replicates: int, seed: int, params: dict[str, Any] | None = None
) -> BootstrapInterval:
    """The bias-corrected parametric bootstrap of one :func:`dp_glm` fit (module docstring).

    ``traj`` is the fit's trajectory on a design with an intercept in column 0 and no offset;
    ``params`` are the keywords of :func:`dp_glm` beyond the public ones kept in
    ``traj.config`` (none for the defaults).
    """
    c, theta = traj.config, np.asarray(traj.estimate, dtype=np.float64)
    if not c["intercept"]:
        raise ValueError("parametric_bootstrap: the covariate model needs the intercept column")
    family = get_family(c["family"], c["link"])
    rng = np.random.default_rng([seed, 2022])
    xtx = np.asarray(traj.releases["xtx"], dtype=np.float64)
    estimates = np.empty((replicates, theta.size))
    for b in range(replicates):
        D = _covariates(xtx, c["n"], rng)
        y = _responses(D, theta, family, c["count_bound"], rng)
        fit = dp_glm(
            D, y, rho=c["rho"], family=c["family"], link=c["link"],
            count_bound=c["count_bound"], steps=c["steps"], step_size=c["step_size"],
            m=c["m"], burn_in=c["burn_in"], rng=rng, warn_large_rho=False, **(params or {}),
        )  # fmt: skip
        estimates[b] = fit.estimate
    return BootstrapInterval(
        estimate=2.0 * theta - estimates.mean(axis=0),
        std=estimates.std(axis=0, ddof=1),
        replicates=replicates,
    )
