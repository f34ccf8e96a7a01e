"""Private standardisation of IV data from public bounds (one charged Gaussian release).

Gradient descent on IV data converges at a rate set by the spectra of Z^T Z / n and
H = Theta^T Z^T Z Theta / n; raw columns (years, dollars, squares) make both badly
conditioned, and mapping them to [-1, 1] by wide public bounds still leaves small variances
(a weak first stage then needs thousands of steps). So :class:`DPIVRegression` spends a small
share of its budget to standardise every column with **privately estimated** means and
standard deviations:

1. each column v with public bounds [lo, hi] is clipped into them and mapped to
   u = (v - c) / h in [-1, 1] (c, h: the bounds' midpoint and half-range; public);
2. the vector (mean_i u_ij, mean_i u_ij^2)_j is released once with Gaussian noise: under
   replace-one with public n each mean moves by at most 2 / n and each mean square by 1 / n,
   so the L2 sensitivity is sqrt(4k + k) / n for k columns, plus the float rounding
   allowance of the computed means (:func:`dpfit.privacy.query_sensitivity`);
3. post-processing: mean_j = c + h m1_j, sd_j = h sqrt(max(m2_j - m1_j^2, floor)), and the
   algorithm sees (clip(v) - mean_j) / sd_j. Coefficients map back exactly (linear map).

The floor (1e-4 in u units, i.e. sd >= 0.01 h) keeps a noisy variance positive.

Before anything is charged, :func:`check_scales` refuses bounds whose map of the
coefficients back to the original units could overflow or underflow: with every release
within Z = 40 noise s.d. (:mod:`dpfit.mechanisms.limits`), sd_j lies in [0.01 h_j, h_j s]
with s^2 = 1 + Z sigma, so the map's factors (sd_y / sd_x, sd_y |mean_x| / sd_x, |mean_y|)
are bounded above by public inputs, and its smallest factor (sd_y / sd_x, or sd_y for the
intercept) below: at least 0.01 h_y / (s max(h_x, 1)), whose square must not underflow a
variance (:func:`dpfit.mechanisms.check_smallest_factor`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..mechanisms import NoiseSource, check_public_scale, check_smallest_factor, gaussian
from ..mechanisms.limits import NOISE_SIGMAS
from ..mechanisms.plan import PlannedRelease, planned_release
from ..privacy import (
    PrivacyLedger,
    Query,
    Relation,
    joint_sensitivity,
    query_sensitivity,
    split,
)
from ._scaling import check_widths

if TYPE_CHECKING:
    from ._iv_config import IVConfig

__all__ = ["scaling_release", "scaling_sensitivity", "standardise"]

LABEL = "iv/column-moments"
_VAR_FLOOR = 1e-4


@dataclass(frozen=True, kw_only=True)
class Standardization:
    """Per-column released means and standard deviations, and the public bounds."""

    bounds: np.ndarray  # (k, 2)
    mean: np.ndarray  # (k,)
    sd: np.ndarray  # (k,)

    def apply(self, V: np.ndarray) -> np.ndarray:
        """(clip(V, bounds) - mean) / sd, column by column."""
        return (np.clip(V, self.bounds[:, 0], self.bounds[:, 1]) - self.mean) / self.sd


def scaling_sensitivity(n: int, k: int, relation: Relation) -> float:
    """k means of values in [-1, 1] and k means of their squares in [0, 1], released together."""
    common = {"bound": 1.0, "n": n, "relation": relation, "columns": k}
    return joint_sensitivity(
        query_sensitivity(Query.MEAN, **common), query_sensitivity(Query.BOUNDED_MEAN, **common)
    )


def scaling_release(rho: float, *, n: int, k: int, relation: Relation) -> PlannedRelease:
    """The planned standardisation of ``k`` columns of ``n`` records with share ``rho``: its
    sensitivity (:func:`scaling_sensitivity`) and the noise std whose charge is at most
    ``rho`` (:func:`~dpfit.mechanisms.plan.planned_release`, where every noise std of a plan
    is computed)."""
    joint = scaling_sensitivity(n, k, relation)  # the means and mean squares together
    return planned_release(
        "column-moments", rho, Query.MEAN, 1.0, n=n, relation=relation, label=LABEL,
        purpose="the columns' means and mean squares: the private standardisation",
        sensitivity=joint,
    )  # fmt: skip


def check_scales(
    bounds: np.ndarray, x_rows: list[int], y_row: int, *, n: int, rho: float
) -> None:
    """Refuse, before any charge, bounds whose standardisation or map back could overflow.

    ``bounds`` holds every column's (low, high) (the response's at ``y_row``), ``x_rows``
    the regressors' rows and ``rho`` the standardisation's share (module docstring).
    Reported as the largest allowed half-range of ``y_bounds`` for the given ``bounds``.
    """
    check_widths("y_bounds", bounds[y_row])
    check_widths("bounds", bounds)
    centre = (bounds[:, 0] + bounds[:, 1]) / 2.0
    half = (bounds[:, 1] - bounds[:, 0]) / 2.0
    if not (half > 0).all():
        raise ValueError("bounds: every (high - low) / 2 must be > 0 in float64")
    sigma = scaling_release(rho, n=n, k=bounds.shape[0], relation=Relation.REPLACE_ONE).noise_std
    spread = math.sqrt(1.0 + NOISE_SIGMAS * sigma)  # largest released sd / h
    sd_x = math.sqrt(_VAR_FLOOR) * half[x_rows]  # smallest released sd of each regressor
    reach_x = np.abs(centre[x_rows]) + half[x_rows]  # largest |released mean|
    inverse, offset = float(np.max(1.0 / sd_x)), float(np.sum(reach_x / sd_x))

    def factors(h_y: float) -> tuple[float, float]:
        sd_y = h_y * spread
        factor = max(sd_y * inverse, sd_y * offset, abs(float(centre[y_row])) + h_y)
        return factor, factor * factor

    check_public_scale(
        "y_bounds half-range (high - low) / 2",
        float(half[y_row]),
        factors,
        what="the map of coefficients (sd of y / sd of x) and of their covariance (its "
        "square) back to the original units",
    )
    widest = max(1.0, float(np.max(half[x_rows]) * spread))  # largest released sd of an x
    check_smallest_factor(
        "bounds and y_bounds",
        math.sqrt(_VAR_FLOOR) * float(half[y_row]) / widest,
        what="the smallest factor of the map back, the smallest released sd of y over the "
        "largest of a regressor (or over 1)",
        fix="narrow the widest regressor's bounds, or widen y_bounds (or rescale the data)",
    )


def release_moments(
    V: np.ndarray, bounds: np.ndarray, *, rho: float, ledger: PrivacyLedger, rng: NoiseSource
) -> Standardization:
    """Release the clipped columns' means and mean squares (rho-zCDP) and standardise with them.

    Privacy: one Gaussian release of sensitivity about sqrt(5 k) / n (replace-one, public n).
    """
    n, k = V.shape
    centre = (bounds[:, 0] + bounds[:, 1]) / 2.0
    half = (bounds[:, 1] - bounds[:, 0]) / 2.0
    # |u| <= 1 exactly: the map can round a value at a bound to 1 + 2^-52, so clip again
    U = np.clip((np.clip(V, bounds[:, 0], bounds[:, 1]) - centre) / half, -1.0, 1.0)
    planned = scaling_release(rho, n=n, k=k, relation=ledger.relation)  # charged <= rho
    value = np.concatenate([U.mean(axis=0), (U**2).mean(axis=0)])
    noisy = gaussian(
        value,
        sensitivity=planned.sensitivity,
        noise_std=planned.noise_std,
        ledger=ledger,
        rng=rng,
        label=LABEL,
    )
    m1 = np.clip(noisy[:k], -1.0, 1.0)
    var = np.maximum(noisy[k:] - m1**2, _VAR_FLOOR)
    return Standardization(bounds=bounds, mean=centre + half * m1, sd=half * np.sqrt(var))


def standardise(
    V: np.ndarray,
    bounds: np.ndarray | None,
    null: np.ndarray | None,
    *,
    cfg: IVConfig,
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> tuple[np.ndarray, Standardization | None, float]:
    """The rows the method sees, their standardisation and the budget left for the method.

    With ``bounds``: ``scale_fraction * rho`` releases the clipped columns' means and mean
    squares (:mod:`._iv_scaling`) and every column is standardised with them. Then the ones
    column is prepended, and every zero record's row is set to 0 (it adds nothing to any
    clipped sum).
    """
    std, rho_fit = None, cfg.rho
    if bounds is not None:
        # exact shares (dpfit.privacy.split): the two never sum above rho
        rho_scale, rho_fit = split(cfg.rho, [cfg.scale_fraction, 1.0 - cfg.scale_fraction])
        if null is not None:  # the zero record: u = 0, it adds nothing to the moments
            V[null] = bounds.mean(axis=1)
        std = release_moments(V, bounds, rho=rho_scale, ledger=ledger, rng=source)
        V = std.apply(V)
    if cfg.fit_intercept:
        V = np.column_stack([np.ones(V.shape[0]), V])
    if null is not None:
        V[null] = 0.0
    return V, std, rho_fit
