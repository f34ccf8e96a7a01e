"""Clopper-Pearson lower bounds on epsilon from a distinguishing test (docs/auditing.md).

A mechanism M is (epsilon, delta)-DP when, for every event S and neighbours D, D',
P[M(D') in S] <= e^epsilon P[M(D) in S] + delta (and with D, D' swapped). An auditor who
runs M many times on each side and counts how often a pre-registered event S occurs gets
one-sided Clopper-Pearson bounds TPR_lo on P[M(D') in S] and FPR_hi on P[M(D) in S], hence

    epsilon >= ln((TPR_lo - delta') / FPR_hi)        with the stated confidence,

a *lower* bound on the true epsilon at delta'. If it exceeds the claimed epsilon(delta'),
the claim is refuted. The audit can only refute, never confirm: its ceiling is about
ln(M / ln(1 / alpha')) (5.2 at M = 2000).

Events are threshold sets {s > t} and {s < mu - t} of a scalar score s, for thresholds
fixed before the runs. The overall false-alarm level alpha is Bonferroni-split over the two
binomial bounds of every (direction, threshold) event. The bounds do not depend on delta',
so once they all hold (probability >= 1 - alpha) every delta' row is valid at once: no
further split over delta' is needed (splitting over delta' too would only cost power).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .._validation import check_alpha, check_array, check_delta, check_real

__all__ = [
    "DEFAULT_DELTAS",
    "DEFAULT_THRESHOLDS",
    "EpsilonBound",
    "clopper_pearson",
    "epsilon_lower_bounds",
]

#: Pre-registered thresholds on the standardised score (units of the claimed null sd).
DEFAULT_THRESHOLDS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5)
#: delta' values at which epsilon is bounded; large ones matter (a black-box test at
#: M = 2000 cannot get near the claim at 1e-5).
DEFAULT_DELTAS: tuple[float, ...] = (1e-5, 0.01, 0.05, 0.1)


def clopper_pearson(successes: int, trials: int, alpha: float, *, side: str) -> float:
    """One-sided Clopper-Pearson bound on a binomial proportion at level ``alpha``.

    ``side="lower"`` gives the largest p_lo with P[p >= p_lo] >= 1 - alpha (0 when there are
    no successes); ``side="upper"`` the smallest p_hi with P[p <= p_hi] >= 1 - alpha (1 when
    every trial succeeds). Exact (beta quantiles), never anti-conservative.

    Examples
    --------
    >>> round(clopper_pearson(0, 2000, 1e-3, side="upper"), 6)
    0.003448
    """
    alpha = check_alpha(alpha)
    if side == "lower":
        return (
            0.0
            if successes == 0
            else float(stats.beta.ppf(alpha, successes, trials - successes + 1))
        )
    if side == "upper":
        if successes == trials:
            return 1.0
        return float(stats.beta.isf(alpha, successes + 1, trials - successes))
    raise ValueError(f"side must be one of ['lower', 'upper'], got {side!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class EpsilonBound:
    """The best epsilon lower bound at one delta' and the test that achieved it."""

    delta: float
    epsilon: float
    direction: str
    threshold: float
    tpr_lower: float
    fpr_upper: float


def _rates(null: np.ndarray, alt: np.ndarray, event: str, cut: float) -> tuple[int, int]:
    if event == "above":
        return int(np.count_nonzero(alt > cut)), int(np.count_nonzero(null > cut))
    # "below": the roles swap, D's outputs land in {s < cut} more often than D''s
    return int(np.count_nonzero(null < cut)), int(np.count_nonzero(alt < cut))


def epsilon_lower_bounds(
    null: ArrayLike,
    alt: ArrayLike,
    *,
    shift: float,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    alpha: float = 1e-3,
) -> list[EpsilonBound]:
    """Clopper-Pearson epsilon lower bounds at each delta' from scores on D and D'.

    Parameters
    ----------
    null, alt : array-like of shape (M0,) and (M1,)
        Standardised scores of independent runs on D (``null``) and on D' (``alt``).
    shift : float
        The claimed mean shift mu of the score between D and D'; the reverse-direction
        events are {s < shift - t}. Public (from the claim), never from the scores.
    thresholds : sequence of float, default=DEFAULT_THRESHOLDS
        Pre-registered thresholds t: events {s > t} and {s < shift - t}.
    deltas : sequence of float, default=DEFAULT_DELTAS
        The delta' values.
    alpha : float, default=1e-3
        Overall false-alarm level: the probability that any returned bound exceeds the true
        epsilon is at most ``alpha`` (split over 2 directions x thresholds x 2 bounds).

    Returns
    -------
    list of EpsilonBound
        One per delta', each the maximum over tests (epsilon = 0 when no test separates).
    """
    null = check_array(null, "null", ndim=1)
    alt = check_array(alt, "alt", ndim=1)
    shift = check_real(shift, "shift")
    alpha = check_alpha(alpha)
    thresholds = [check_real(t, "threshold") for t in thresholds]
    deltas = [check_delta(d, "delta") for d in deltas]
    if not thresholds or not deltas:
        raise ValueError("thresholds and deltas must be non-empty")
    level = alpha / (2 * 2 * len(thresholds))
    m_alt, m_null = alt.size, null.size
    tests = []
    for event in ("above", "below"):
        for t in thresholds:
            cut = t if event == "above" else shift - t
            hits, false_hits = _rates(null, alt, event, cut)
            m_hit, m_false = (m_alt, m_null) if event == "above" else (m_null, m_alt)
            tpr = clopper_pearson(hits, m_hit, level, side="lower")
            fpr = clopper_pearson(false_hits, m_false, level, side="upper")
            tests.append((event, t, tpr, fpr))
    out = []
    for delta in deltas:
        best = EpsilonBound(
            delta=delta,
            epsilon=0.0,
            direction="none",
            threshold=float("nan"),
            tpr_lower=0.0,
            fpr_upper=1.0,
        )
        for event, t, tpr, fpr in tests:
            if tpr - delta > fpr:
                eps = float(np.log((tpr - delta) / fpr))
                if eps > best.epsilon:
                    best = EpsilonBound(
                        delta=delta,
                        epsilon=eps,
                        direction=event,
                        threshold=t,
                        tpr_lower=tpr,
                        fpr_upper=fpr,
                    )
        out.append(best)
    return out
