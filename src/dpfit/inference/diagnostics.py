"""Convergence diagnostics from released iterates: is the averaged chain still drifting?

An interval built from the mean of DP-GD's iterates (Brown et al. 2024, eq. 12, or the
population interval of docs/inference.md) is centred on the data's minimiser only once the
iterates have forgotten their start. Whether they have can be read off the released iterates
alone (post-processing, no privacy cost), as in Geweke's (1992) test for MCMC output:

Each run's iterates after the burn-in are cut into 2K consecutive blocks (K = 10, fewer
when that would leave blocks shorter than 5 iterates, at least 4). With the block means
b_1..b_2K, the drift of the run is

    d = mean(b_{K+1..2K}) - mean(b_{1..K}),

and the runs' drifts are averaged. For a chain at stationarity with blocks longer than its
autocorrelation time (a few steps for preconditioned DP-GD at step size 0.5, whose
iterates are close to AR(1) with coefficient 1 - 0.5; blocks of one iterate would be
correlated 0.5 and make the test fire on converged chains) the block means are about
independent with a common covariance S, so d has covariance (2 / K) S / runs. S is
estimated from the residuals of a straight line fitted to the block means of each half
(K - 2 degrees of freedom per half and run): a chain still moving steadily then has a
small S and a large |d| against it, where the plain within-half covariance would absorb
the trend into the noise.

What matters for coverage is the drift measured in the interval's own standard error:
when the iterates approach their limit faster than half the run, the centre (the mean of
both halves) is off by about d / 2, and a bias of beta standard errors lowers the coverage
of a 95% interval to Phi(1.96 - beta) - Phi(-1.96 - beta) (0.942 at beta = 0.25, 0.921 at
0.5). :meth:`Drift.untrusted` therefore flags a coordinate when its drift exceeds half an
interval standard error (bias > 0.25 s.e.) *and* is significant at the 0.1% level against
the block noise: nominally 0.1% of converged fits per coordinate (measured: 0-2.5% of
converged default fits, docs/inference.md; blocks are not exactly independent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["DRIFT_LEVEL", "DRIFT_SE", "Drift", "iterate_drift"]

#: Blocks per half of each run (at most; at least MIN_HALF_BLOCKS).
HALF_BLOCKS = 10
MIN_HALF_BLOCKS = 4
#: Shortest block, in iterates.
MIN_BLOCK = 5
#: Two-sided significance level of the drift against the block noise.
DRIFT_LEVEL = 0.001
#: Drift (in interval standard errors) above which the centre's bias matters (module docstring).
DRIFT_SE = 0.5


@dataclass(frozen=True)
class Drift:
    """Drift between the second and the first half of the released iterates.

    Parameters
    ----------
    drift : ndarray of shape (p,)
        Mean of the second half minus mean of the first half (averaged over runs).
    cov : ndarray of shape (p, p)
        Its covariance under stationarity, from the block means.
    dof : float
        Degrees of freedom of ``cov``.
    """

    drift: np.ndarray
    cov: np.ndarray
    dof: float

    def transform(self, matrix: ArrayLike) -> Drift:
        """The drift of J theta (the drift is linear in the iterates)."""
        J = np.asarray(matrix, dtype=np.float64)
        return Drift(drift=J @ self.drift, cov=J @ self.cov @ J.T, dof=self.dof)

    def t(self) -> np.ndarray:
        """Drift over its standard error under stationarity, per coordinate."""
        se = np.sqrt(np.clip(np.diag(self.cov), 0.0, None))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(se > 0, self.drift / np.maximum(se, 1e-300), np.inf)

    def relative(self, bse: ArrayLike) -> np.ndarray:
        """Drift in units of the interval's standard errors ``bse``."""
        bse = np.asarray(bse, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(self.drift) / np.maximum(bse, 1e-300)

    def untrusted(self, bse: ArrayLike) -> np.ndarray:
        """Coordinates whose interval cannot be trusted: drift significant and > DRIFT_SE."""
        critical = stats.t.ppf(1.0 - DRIFT_LEVEL / 2.0, self.dof)
        return (np.abs(self.t()) > critical) & (self.relative(bse) > DRIFT_SE)


def iterate_drift(iterates: ArrayLike, *, runs: int = 1, burn_in: int = 0) -> Drift | None:
    """:class:`Drift` of released iterates (module docstring), or None if too few of them.

    Parameters
    ----------
    iterates : array-like of shape (runs * steps, p)
        The released iterates, run after run.
    runs : int, default=1
        Number of independent runs stacked in ``iterates``.
    burn_in : int, default=0
        Iterates dropped at the start of each run (those the interval drops too).

    Returns
    -------
    Drift or None
        None when a run has fewer than 2 x 4 x 5 iterates after the burn-in.
    """
    it = np.asarray(iterates, dtype=np.float64)
    per_run = it.reshape(runs, -1, it.shape[1])[:, burn_in:, :]
    half = min(HALF_BLOCKS, per_run.shape[1] // (2 * MIN_BLOCK))
    if half < MIN_HALF_BLOCKS:
        return None
    length = per_run.shape[1] // (2 * half)
    usable = per_run[:, per_run.shape[1] - 2 * half * length :, :]
    blocks = usable.reshape(runs, 2, half, length, it.shape[1]).mean(axis=3)
    halves = blocks.mean(axis=2)  # (runs, 2, p)
    drift = (halves[:, 1] - halves[:, 0]).mean(axis=0)
    index = np.arange(half) - (half - 1) / 2.0
    centred = blocks - halves[:, :, None, :]
    slope = np.einsum("l,rhlp->rhp", index, centred) / (index @ index)
    dev = (centred - index[None, None, :, None] * slope[:, :, None, :]).reshape(-1, it.shape[1])
    dof = runs * 2 * (half - 2)
    within = dev.T @ dev / dof
    return Drift(drift=drift, cov=within * (2.0 / half) / runs, dof=float(dof))
