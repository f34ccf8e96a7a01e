"""White-box per-step audits: likelihood-ratio scores of released per-step quantities (layer E).

For training loops that release a noisy quantity at every step (the noisy gradient sums of
DP-SGD and DP-FTRL), the auditor observes the canary coordinate o_t of every release and
scores a run by the Neyman-Pearson statistic of the **claimed** mechanism (Nasr et al. 2023
style; docs/auditing.md). Under the claim, the whitened observations u = C o / sigma (C the
public encoder, B = C^-1 the noise correlation) are N(a, I), where a = C x / sigma and x is
the canary's contribution to each step. When the canary's participation is random (one of
``m`` equally likely slots, e.g. its batch in a shuffled fixed-epoch schedule), the statistic
is the log ratio of two Gaussian mixtures,

    Lambda(u) = log sum_j exp(<u, a1_j> - |a1_j|^2 / 2) - log sum_j exp(<u, a0_j> - |a0_j|^2 / 2),

whose law is not Gaussian. Its thresholds are **pre-registered from a calibration
simulation of the claimed mechanism** (independent draws, never the audited runs):
:class:`CalibratedScore` maps Lambda through the simulated null CDF to the N(0, 1) scale on
which :func:`dpfit.audit.assess` places its fixed thresholds, so the events {s > t} are
exactly {Lambda > Lambda_t} with Lambda_t the simulated null quantiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from .._validation import check_array, check_int

__all__ = ["CalibratedScore", "calibrate_mixture_llr", "mixture_llr"]


def mixture_llr(u: ArrayLike, means_null: ArrayLike, means_alt: ArrayLike) -> np.ndarray:
    """Lambda for each row of ``u`` (runs x T) between equal-weight Gaussian mixtures N(a_j, I).

    ``means_null`` and ``means_alt`` are (slots x T): the whitened means a0_j and a1_j.
    Exact in floating point up to log-sum-exp rounding (no under- or overflow).
    """
    u = np.atleast_2d(np.asarray(u, dtype=np.float64))
    a0 = np.atleast_2d(check_array(means_null, "means_null", ndim=2))
    a1 = np.atleast_2d(check_array(means_alt, "means_alt", ndim=2))
    log1 = special.logsumexp(u @ a1.T - 0.5 * np.sum(a1**2, axis=1), axis=1)
    log0 = special.logsumexp(u @ a0.T - 0.5 * np.sum(a0**2, axis=1), axis=1)
    return log1 - log0


@dataclass(frozen=True, slots=True)
class CalibratedScore:
    """A monotone map of a statistic to the N(0, 1) scale, fixed by a calibration simulation.

    ``null_sample`` is the sorted statistic of simulated runs of the claimed mechanism on D;
    ``shift`` is the median score of simulated runs on D' (the claimed separation, used for
    the reverse-direction events). Scores saturate at about +-4 beyond the simulated range.
    """

    null_sample: np.ndarray
    shift: float

    def __call__(self, statistic: ArrayLike) -> np.ndarray:
        """Scores Phi^-1(F0(statistic)), F0 the simulated null CDF (mid-rank, no ties)."""
        stat = np.asarray(statistic, dtype=np.float64)
        lo = np.searchsorted(self.null_sample, stat, side="left")
        hi = np.searchsorted(self.null_sample, stat, side="right")
        return stats.norm.ppf((0.5 * (lo + hi) + 0.5) / (self.null_sample.size + 1))


def calibrate_mixture_llr(
    means_null: ArrayLike,
    means_alt: ArrayLike,
    *,
    draws: int = 20_000,
    rng: np.random.Generator,
) -> CalibratedScore:
    """Simulate the claimed mechanism (u = a_J + N(0, I), J uniform) and calibrate Lambda.

    Parameters
    ----------
    means_null, means_alt : array-like of shape (slots, T)
        Whitened canary means under D and D' for each equally likely participation slot.
    draws : int, default=20000
        Simulated runs per side (the thresholds' Monte Carlo error is O(1/sqrt(draws))).
    rng : numpy.random.Generator
        Randomness of the simulation, independent of the audited runs.
    """
    draws = check_int(draws, "draws", low=100)
    a0 = check_array(means_null, "means_null", ndim=2)
    a1 = check_array(means_alt, "means_alt", ndim=2)

    def simulate(a: np.ndarray) -> np.ndarray:
        # Not privacy noise: a Monte-Carlo simulation of the *claimed* mechanism, to fix the
        # audit's thresholds before the audited runs are looked at.
        u = a[rng.integers(0, a.shape[0], size=draws)] + rng.standard_normal((draws, a.shape[1]))
        return mixture_llr(u, a0, a1)

    null = np.sort(simulate(a0))
    score = CalibratedScore(null_sample=null, shift=0.0)
    return CalibratedScore(null_sample=null, shift=float(np.median(score(simulate(a1)))))
