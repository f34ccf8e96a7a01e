"""Clipping bias: clips that grow with n, and a private estimate of what clipping moves.

A private fit that clips per-record gradients (or rows) at C estimates the minimiser of the
*clipped* loss, a Huber-type fit. With errors that are not symmetric given x (earnings,
wealth, costs) its population target is not the least-squares coefficient theta*, and the
gap does not shrink with n while the standard error does: at large n an interval built
around the clipped fit covers the wrong value (docs/inference.md, "Clipping bias"). Two
controls, written once here: the linear default uses both, AdaSSP's interval grows its meat's
clip (:func:`second_moment_clip`), and the IV default counts its far rows
(:func:`far_records`):

**A clip that grows with n.** The privacy noise of a mean of clipped vectors released at
zCDP rho has s.d. about 2 C / (n sqrt(2 rho)) per coordinate (replace-one), while the
sampling s.d. of the estimate is about s / sqrt(n) (s a residual scale, in whitened
coordinates). A clip C of about s sqrt(r n rho') (rho' the budget the estimate's noise is
calibrated to; :func:`growing_clip`) keeps the privacy variance at r times the sampling
variance whatever n, so the clip grows like sqrt(n) while the interval stays within
sqrt(1 + r) of the sampling-only width. Once C exceeds every record's gradient norm (a
finite population, bounded data) nothing is clipped and the clipped fit *is* least
squares. It uses public inputs (n, rho, steps) and an already charged release (the residual
scale) only.

**A private estimate of the remaining gap** (:func:`release_excess`). For least squares the
mean gradient is linear in the parameter: at any theta, (1/n) sum_i g_i(theta) = H
(theta_ls - theta) with H = X'X / n. At the clipped fit the clipped gradients average to
zero, so theta_ls - theta_C = H^-1 e with e = (1/n) sum_i (g_i - clip_C(g_i)), the mean
clipped excess. Its part between C and a larger public clip C2, e_w = (1/n) sum_i
(clip_C2(g_i) - clip_C(g_i)), has per-record norm at most w = C2 - C, hence the
sensitivity of a mean of vectors bounded by w (:func:`dpfit.privacy.mean_sensitivity`); it
is released through :func:`dpfit.mechanisms.gaussian`, charged before it is drawn. The
window w is chosen (:func:`excess_window`) so that the release's noise is a small fraction
of the interval's own standard error. Records beyond C2 enter with w each, so e_w
understates the gap when their excess is large (a few records of a skewed response far out,
e.g. household wealth); a private count of the records whose gradient exceeds
:data:`FAR` x C (one record moves the count by 1) catches them: each moves the fit by at
least (FAR - 1) C / n on its own.

:class:`ClippingGap` turns the release into the first-order shift H^-1 e_w in the
coefficients' units with its noise covariance, and says when it is material against the
interval's standard errors (:meth:`ClippingGap.material`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..mechanisms import NoiseSource, gaussian, noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, Query, Relation, query_sensitivity

__all__ = [
    "CLIP_GROWTH",
    "FAR",
    "GAP_NOISE",
    "GAP_SE",
    "MEAT_NOISE",
    "PRIVACY_RATIO",
    "ClippingGap",
    "excess_window",
    "far_records",
    "growing_clip",
    "release_excess",
    "second_moment_clip",
]

#: Target ratio r of the privacy variance to the sampling variance that :func:`growing_clip`
#: spends on a larger clip: the interval stays within sqrt(1 + r) = 1.12 of the
#: sampling-only width at the top of the schedule.
PRIVACY_RATIO = 0.25
#: :func:`growing_clip` stops at this multiple of the small-n clip (3 sqrt(k) residual scales
#: for the linear default): 24 sqrt(k) residual scales, beyond every gradient of the real
#: files of docs/inference.md (10-40 scales) but the wealth file's (321).
CLIP_GROWTH = 8.0
#: The gap's noise s.d. is at most this fraction of the interval's standard error
#: (:func:`excess_window`).
GAP_NOISE = 0.15
#: A gap above this many interval standard errors is material (:meth:`ClippingGap.material`):
#: a bias of 0.5 s.e. lowers a 95% interval's coverage to 0.921.
GAP_SE = 0.5
#: ... and it must also exceed this many of its own noise s.d. (a two-sided 0.1% test).
GAP_Z = 3.29
#: A meat's clip keeps the noise of its entries at this fraction of the residual scale's
#: square (:func:`second_moment_clip`): its sampling variance then has about 200 degrees of
#: freedom from the meat's noise.
MEAT_NOISE = 0.1
#: Records whose gradient (row) norm exceeds this multiple of the clip are counted
#: (privately): each has an excess of at least (FAR - 1) x clip that the window misses.
FAR = 1.5


def growing_clip(
    base: float, scale: float, *, n: int, rho: float, releases: int, averaged: int
) -> float:
    """The clip that grows with n: scale sqrt(r n rho averaged / (2 releases)), at least
    ``base`` and at most :data:`CLIP_GROWTH` x ``base``.

    ``releases`` noisy means of clipped vectors (e.g. DP-GD steps) share ``rho``; the
    estimate averages ``averaged`` of them (e.g. the iterates after the burn-in). Each mean
    then carries noise of s.d. 2 C / n sqrt(releases / (2 rho)) per coordinate, and their
    average about 2 C^2 releases / (n^2 rho averaged) of variance, against a sampling
    variance of about ``scale``^2 / n per coordinate in whitened coordinates. The returned
    clip makes that ratio :data:`PRIVACY_RATIO` (module docstring); it never falls below
    ``base`` (the clip chosen for small n, where privacy noise dominates anyway) and stops
    growing at :data:`CLIP_GROWTH` x ``base``, where a larger clip only adds noise on data
    whose gradients stay below it (the privacy ratio then falls below r; records beyond
    are counted by the released far-record share). Public inputs and a released ``scale``
    only: post-processing.
    """
    grown = scale * math.sqrt(PRIVACY_RATIO * n * rho * averaged / (2.0 * releases))
    return min(max(base, grown), CLIP_GROWTH * base)


def far_records(share: float, noise_std: float, n: int) -> float:
    """Lower confidence bound (:data:`GAP_Z` noise s.d.) on the number of records counted by
    a released share of n (a mean of indicators with noise s.d. ``noise_std``); 0 when the
    count is within its noise. Post-processing."""
    return max(0.0, share - GAP_Z * noise_std) * n


def second_moment_clip(base: float, scale: float, *, n: int, rho: float, noise: float) -> float:
    """max(base, scale sqrt(noise n sqrt(rho))): the largest clip of a second-moment release
    whose entries' noise stays at ``noise`` x ``scale``^2.

    A mean of outer products of vectors clipped to C, released at zCDP ``rho``, has entry
    noise s.d. sqrt(2) C^2 / (n sqrt(2 rho)) = C^2 / (n sqrt(rho)) under replace-one (less
    under add/remove): solved for C. Used for the sandwich's meat, whose entries are about
    ``scale``^2 in whitened coordinates; the clip grows like sqrt(n), and a meat clipped below
    a gradient's norm only misses that gradient's excess. Post-processing.
    """
    return max(base, scale * math.sqrt(noise * n * math.sqrt(rho)))


def excess_window(
    noise_target: float, *, n: int, rho: float, relation: Relation, rows_per_unit: int = 1
) -> float:
    """The window w = C2 - C whose excess release has noise s.d. ``noise_target`` per coordinate.

    A mean over the public n of vectors bounded by w has sensitivity about
    ``relation.sum_factor`` w / n (K times that with a privacy unit of K = ``rows_per_unit``
    rows), so its Gaussian noise at zCDP ``rho`` has s.d. sum_factor K w / (n sqrt(2 rho));
    solved for w.
    """
    return noise_target * n * math.sqrt(2.0 * rho) / (relation.sum_factor * rows_per_unit)


def release_excess(
    total: ArrayLike,
    *,
    window: float,
    rho: float,
    n: int,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
    rows_per_unit: int = 1,
) -> tuple[np.ndarray, float]:
    """Release (1/n) x ``total``, a sum of per-record vectors of norm at most ``window``.

    ``total`` is sum_i (clip_C2(g_i) - clip_C(g_i)) (or a sum of vectors of the same bound,
    e.g. reduced over Dask blocks): the caller guarantees the bound, which holds because
    ||clip_C2(g) - clip_C(g)|| = min(||g||, C2) - min(||g||, C) <= C2 - C. Gaussian mechanism
    with the mean's sensitivity (:func:`dpfit.privacy.query_sensitivity`: public n, float
    rounding included), rho-zCDP, charged to ``ledger`` before the draw (with a privacy
    unit of at most ``rows_per_unit`` = K rows, n units, K times as sensitive). Returns the
    release and its noise s.d. per coordinate.
    """
    sensitivity = query_sensitivity(
        Query.MEAN, bound=window, n=n, relation=ledger.relation, rows_per_unit=rows_per_unit
    )
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho))
    with np.errstate(all="ignore"):
        value = np.asarray(total, dtype=np.float64) / n  # the public n
    noisy = gaussian(
        value, sensitivity=sensitivity, noise_std=noise_std, ledger=ledger, rng=rng, label=label
    )
    return noisy, noise_std


@dataclass(frozen=True, kw_only=True)
class ClippingGap:
    """The released first-order gap between least squares and the clipped fit.

    Parameters
    ----------
    gap : ndarray of shape (p,)
        theta_ls - theta_C to first order, from the excess between ``clip`` and
        ``clip + window`` (module docstring), in the coefficients' units.
    cov : ndarray of shape (p, p)
        Covariance of its privacy noise (exact: a linear map of Gaussian noise).
    reach : ndarray of shape (p,)
        The largest change of each coefficient that a unit of mean clipped excess (in the
        units the fit clipped in) can make: the norm of the row of the map from excess to
        coefficients.
    far : float
        Lower confidence bound (:data:`GAP_Z` noise s.d.) on the mean clipped excess of the
        records whose gradient exceeds :data:`FAR` x the clip (a released count of them
        times the least excess each has, (FAR - 1) x clip, over n; 0 when the count is
        within its noise). The window does not measure them: each alone moves the fit by at
        least that excess.
    clip, window : float
        The clip of the fit and the width of the window the excess was measured in (in the
        units the fit clipped in).
    """

    gap: np.ndarray
    cov: np.ndarray
    reach: np.ndarray
    far: float
    clip: float
    window: float

    @property
    def noise_se(self) -> np.ndarray:
        """Standard deviation of the gap's noise, per coefficient."""
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def relative(self, bse: ArrayLike) -> np.ndarray:
        """|gap| in units of the interval's standard errors ``bse``."""
        bse = np.asarray(bse, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(self.gap) / np.maximum(bse, 1e-300)

    def far_relative(self, bse: ArrayLike) -> np.ndarray:
        """The largest effect of the far records' least excess, in standard errors ``bse``."""
        bse = np.asarray(bse, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.far * self.reach / np.maximum(bse, 1e-300)

    def material(self, bse: ArrayLike) -> np.ndarray:
        """Per coefficient: the gap to least squares may matter for coverage.

        Either the measured gap exceeds :data:`GAP_SE` standard errors and is significant
        (|gap| > GAP_SE x bse and > GAP_Z x its noise s.d.; with the window of
        :func:`excess_window` the second condition is implied by the first), or records lie
        far beyond the clip in numbers the released count's noise cannot explain and their
        least excess can move the coefficient by more than GAP_SE standard errors
        (:meth:`far_relative`). Post-processing of the releases.
        """
        measured = (self.relative(bse) > GAP_SE) & (np.abs(self.gap) > GAP_Z * self.noise_se)
        return measured | (self.far_relative(bse) > GAP_SE)

    def transform(self, matrix: ArrayLike) -> ClippingGap:
        """The gap of J theta (linear; the reach of a unit excess is bounded by |J| reach)."""
        J = np.asarray(matrix, dtype=np.float64)
        return ClippingGap(
            gap=J @ self.gap,
            cov=J @ self.cov @ J.T,
            reach=np.abs(J) @ self.reach,
            far=self.far,
            clip=self.clip,
            window=self.window,
        )
