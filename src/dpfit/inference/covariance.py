"""Covariances of released estimates, with degrees of freedom: what an interval is built from.

A :class:`CovarianceEstimate` says, for one target (the population parameter or the data's
own minimiser), how far a released estimate is expected to be from it: the sampling part
(a sandwich of private second moments, :mod:`dpfit.inference.population`) and the privacy
part (from the declared noise, or from m released estimates, Brown et al. 2024, eq. 12), with
Satterthwaite (Welch) degrees of freedom when a part is itself estimated. Everything here is
post-processing of releases and public inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._arrays import readonly
from .clipping_bias import ClippingGap
from .diagnostics import Drift

__all__ = [
    "TARGETS",
    "CovarianceEstimate",
    "population_covariance",
    "sample_covariance",
    "transform",
    "welch_dof",
]

#: What an interval covers: the population parameter theta* (sampling + privacy error) or
#: the data's own clipped-loss minimiser theta_hat (privacy error only; Brown et al. 2024).
TARGETS = ("population", "sample")


@dataclass(frozen=True, kw_only=True)
class CovarianceEstimate:
    """Covariance of a released estimate for one target, with degrees of freedom.

    Parameters
    ----------
    target : {"population", "sample"}
    cov : array-like of shape (p, p)
        Estimated covariance of the released estimate around the target.
    dof : array-like of shape (p,)
        Degrees of freedom per coordinate for Student-t quantiles; ``inf`` means normal.
    description : str
        One paragraph: how the covariance was built and what the interval covers.
    parts : Mapping of str to (p, p) arrays, default={}
        The components, e.g. ``"sampling"`` and ``"privacy"``.
    drift : Drift, optional
        Convergence diagnostic of the released iterates behind the estimate
        (:mod:`dpfit.inference.diagnostics`); None when the estimate is not an average of
        iterates or there were too few of them.
    gap : ClippingGap, optional
        The released first-order gap between least squares and the clipped fit behind the
        estimate (:mod:`dpfit.inference.clipping_bias`); None when the fit released none.
    covers : str, optional
        The parameter the interval covers, in words (e.g. "the population least-squares
        coefficients"); None for the generic wording of the target.
    """

    target: str
    cov: np.ndarray
    dof: np.ndarray
    description: str
    parts: Mapping[str, np.ndarray] = field(default_factory=dict)
    drift: Drift | None = None
    gap: ClippingGap | None = None
    covers: str | None = None

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {self.target!r}")
        cov = readonly(self.cov)
        if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
            raise ValueError(f"cov must be a square matrix, got shape {cov.shape}")
        dof = readonly(np.broadcast_to(np.asarray(self.dof, dtype=np.float64), cov.shape[:1]))
        if not (dof >= 1.0).all():
            raise ValueError("dof must be >= 1 (inf for a normal quantile)")
        object.__setattr__(self, "cov", cov)
        object.__setattr__(self, "dof", dof)
        object.__setattr__(
            self, "parts", MappingProxyType({k: readonly(v) for k, v in self.parts.items()})
        )

    def __getstate__(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "cov": self.cov,
            "dof": self.dof,
            "description": self.description,
            "parts": dict(self.parts),
            "drift": self.drift,
            "gap": self.gap,
            "covers": self.covers,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickles from before the drift diagnostic and the named parameter
        state = {"drift": None, "gap": None, "covers": None, **state}
        for key, value in state.items():
            object.__setattr__(self, key, value)
        self.__post_init__()

    @property
    def bse(self) -> np.ndarray:
        """Standard errors, sqrt(diag(cov))."""
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    @property
    def relative_drift(self) -> np.ndarray | None:
        """|second-half mean - first-half mean| of the iterates over :attr:`bse`, or None.

        Released-iterate post-processing (:mod:`dpfit.inference.diagnostics`): above about
        0.5 the centre's bias (about half the drift) starts to cost coverage.
        """
        return None if self.drift is None else self.drift.relative(self.bse)

    @property
    def untrusted(self) -> np.ndarray:
        """Per coordinate: the iterates are still drifting enough to bias the interval."""
        if self.drift is None:
            return np.zeros(self.cov.shape[0], dtype=bool)
        return self.drift.untrusted(self.bse)


def sample_covariance(estimates: ArrayLike, description: str) -> CovarianceEstimate:
    """Covariance of the mean of m released estimates: S / m with m - 1 dof (eq. 12).

    The interval centre +/- t_{m-1} sqrt(S_jj / m) is exactly Brown et al.'s (2024) eq. 12.
    """
    est = np.asarray(estimates, dtype=np.float64)
    m = est.shape[0]
    if est.ndim != 2 or m < 2:
        raise ValueError(f"estimates must have shape (m >= 2, p), got {est.shape}")
    cov = np.atleast_2d(np.cov(est, rowvar=False, ddof=1)) / m
    return CovarianceEstimate(
        target="sample",
        cov=cov,
        dof=np.full(est.shape[1], m - 1.0),
        description=description,
        parts={"privacy": cov},
    )


def welch_dof(parts: Sequence[tuple[ArrayLike, ArrayLike | float]]) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of covariance estimates, per coordinate.

    Each part is (V_i, f_i): a covariance matrix whose diagonal is treated as a scaled
    chi-squared estimate with f_i degrees of freedom per coordinate (``inf``: known). The sum
    gets dof_j = (sum_i V_i,jj)^2 / sum_i (V_i,jj^2 / f_i,j), and at least the smallest f_i,j
    (Satterthwaite 1946; Welch 1947).
    """
    diags = [np.clip(np.diag(np.asarray(v, dtype=np.float64)), 0.0, None) for v, _ in parts]
    dofs = [
        np.broadcast_to(np.asarray(f, dtype=np.float64), d.shape)
        for d, (_, f) in zip(diags, parts, strict=True)
    ]
    total = sum(diags)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = sum(np.where(np.isinf(f), 0.0, d**2 / f) for d, f in zip(diags, dofs, strict=True))
        dof = np.where(spread > 0, total**2 / np.maximum(spread, 1e-300), np.inf)
    return np.maximum(dof, np.minimum.reduce(dofs))


def population_covariance(
    sampling: ArrayLike,
    privacy: ArrayLike,
    *,
    description: str,
    privacy_dof: float = math.inf,
    sampling_dof: ArrayLike = math.inf,
    drift: Drift | None = None,
    gap: ClippingGap | None = None,
    covers: str | None = None,
) -> CovarianceEstimate:
    """V_sampling + V_privacy, with Welch-Satterthwaite degrees of freedom per coordinate.

    Each part is treated as a scaled chi-squared estimate with its own degrees of freedom:
    ``sampling_dof`` (per coordinate; from the noise of the released bread and meat,
    :func:`dpfit.inference.whitened.noisy_sandwich`, or ``inf`` when it is treated as known)
    and ``privacy_dof`` (``m - 1`` when the privacy part is a sample covariance of m
    estimates), so coordinate j gets dof_j = (a_j + b_j)^2 / (a_j^2 / f_j + b_j^2 / g) with
    a = diag(V_sampling), b = diag(V_privacy), f the sampling and g the privacy dof (and at
    least the smaller of the two). ``drift`` (from
    :func:`dpfit.inference.diagnostics.iterate_drift`) rides along so that the result can
    say whether the iterates behind the estimate had converged, and ``gap`` (the released
    gap to least squares, :mod:`dpfit.inference.clipping_bias`) likewise; ``covers`` names the
    parameter the interval is for, in words (the summary's header).
    """
    sampling = np.asarray(sampling, dtype=np.float64)
    privacy = np.asarray(privacy, dtype=np.float64)
    dof = welch_dof([(sampling, sampling_dof), (privacy, privacy_dof)])
    return CovarianceEstimate(
        target="population",
        cov=sampling + privacy,
        dof=dof,
        description=description,
        parts={"sampling": sampling, "privacy": privacy},
        drift=drift,
        gap=gap,
        covers=covers,
    )


def transform(estimate: CovarianceEstimate, matrix: ArrayLike) -> CovarianceEstimate:
    """The covariance of J theta: J cov J' (and each part likewise); dof unchanged.

    Raises ValueError when a variance of J theta is not finite and > 0 in float64: a
    standard error of 0 or inf is never released (the public-parameter checks refuse the
    bounds that could lead here before any charge; this is the last line).

    Used to map a covariance from the units the algorithm ran in back to the user's (the
    public rescaling is affine, so its linear part J is exact; the drift diagnostic maps
    with it). The dof of coordinate j of
    J theta is the smallest dof of the coordinates it mixes (conservative).
    """
    J = np.asarray(matrix, dtype=np.float64)
    mixes = np.abs(J) > 0
    dof = np.array([estimate.dof[row].min() if row.any() else math.inf for row in mixes])
    with np.errstate(all="ignore"):
        cov = J @ estimate.cov @ J.T
    variances = np.diag(cov)
    if not (np.isfinite(cov).all() and (variances > 0).all()):
        raise ValueError(
            "the covariance of the released estimate does not map back to the original "
            "units in float64 (a variance underflows to 0 or overflows, which would claim a "
            "point or an infinite interval): the charge for the fit stands and nothing is "
            "released; refit with bounds closer to the data's scale (or rescale the data)"
        )
    return CovarianceEstimate(
        target=estimate.target,
        cov=cov,
        dof=dof,
        description=estimate.description,
        parts={k: J @ v @ J.T for k, v in estimate.parts.items()},
        drift=None if estimate.drift is None else estimate.drift.transform(J),
        gap=None if estimate.gap is None else estimate.gap.transform(J),
        covers=estimate.covers,
    )
