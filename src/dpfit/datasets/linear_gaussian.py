"""The well-specified Gaussian linear model of Brown et al. (2024, Section 4 and App. B).

Parameters, drawn once per design: theta* uniform on the unit sphere (N(0, I_p) normalised)
and, for the anisotropic design, Cov = U Lambda U^T with Lambda = diag(2, 1, u_3..u_p),
u_i ~ Unif[1, 2] and U a Haar-random rotation. Records:

    x_i ~ N(0, Cov) (Cov = I for the isotropic design),  y_i = x_i^T theta* + xi_i,
    xi_i ~ N(noise_mean, noise_std^2).

The paper uses noise_mean = 0 and noise_std = 1; the authors' scripts use noise_mean = 1
(docs/brown2024.md, Departures), available to reproduce them. Data generation uses the numpy
Generator it is given, never privacy noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .._arrays import readonly
from .._validation import check_int, check_option, check_positive, check_real

__all__ = ["DESIGNS", "LinearDesign", "draw_linear_design"]

DESIGNS = ("isotropic", "anisotropic")


@dataclass(frozen=True, kw_only=True)
class LinearDesign:
    """One dataset of the model and the truth behind it.

    Attributes
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    theta_star : ndarray of shape (p,)
        The true parameter (unit norm).
    covariance : ndarray of shape (p, p)
        The population covariance of x.
    """

    X: np.ndarray
    y: np.ndarray
    theta_star: np.ndarray
    covariance: np.ndarray

    def __post_init__(self) -> None:
        for name in ("X", "y", "theta_star", "covariance"):
            object.__setattr__(self, name, readonly(getattr(self, name)))


def draw_linear_design(
    n: int,
    p: int,
    *,
    design: str = "isotropic",
    noise_std: float = 1.0,
    noise_mean: float = 0.0,
    rng: Any = None,
) -> LinearDesign:
    """Draw (X, y, theta*) from the Gaussian linear model (see the module docstring).

    Parameters
    ----------
    n, p : int
        Rows and features (p >= 2 for the anisotropic design).
    design : {"isotropic", "anisotropic"}, default="isotropic"
    noise_std : float, default=1.0
        Std of the regression noise xi.
    noise_mean : float, default=0.0
        Mean of xi (1.0 reproduces the authors' scripts).
    rng : None, int or numpy.random.Generator
        Source of the data (not of privacy noise).

    Examples
    --------
    >>> d = draw_linear_design(100, 3, rng=0)
    >>> d.X.shape, d.y.shape, round(float(np.linalg.norm(d.theta_star)), 12)
    ((100, 3), (100,), 1.0)
    """
    n = check_int(n, "n", low=1)
    p = check_int(p, "p", low=1)
    design = check_option(design, "design", DESIGNS)
    noise_std = check_positive(noise_std, "noise_std")
    noise_mean = check_real(noise_mean, "noise_mean")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    theta_star = gen.standard_normal(p)
    theta_star /= np.linalg.norm(theta_star)
    if design == "isotropic":
        covariance = np.eye(p)
        X = gen.standard_normal((n, p))
    else:
        if p < 2:
            raise ValueError(f"the anisotropic design needs p >= 2, got {p}")
        scales = np.concatenate([[2.0, 1.0], gen.uniform(1.0, 2.0, size=p - 2)])
        rotation = stats.special_ortho_group.rvs(p, random_state=gen)
        covariance = (rotation * scales) @ rotation.T
        X = (gen.standard_normal((n, p)) * np.sqrt(scales)) @ rotation.T
    y = X @ theta_star + noise_mean + noise_std * gen.standard_normal(n)
    return LinearDesign(X=X, y=y, theta_star=theta_star, covariance=covariance)
