"""Private counts and DP-STAT, the private doubling search for a scale.

DP-STAT (Varshney, Thakurta & Jain 2022, Alg. 3) privately finds, on the geometric grid
``Delta, 2 Delta, 4 Delta, ..., B`` with ``Delta = B 2^-K``, the first level ``gamma`` at which
the noisy count of values ``<= gamma`` reaches a public threshold: a private approximate
maximum of non-negative scalars (for DP-AMBSSGD, the residuals ``|<x, w> - y|``).

Notation: ``ceiling`` = B, ``n_levels`` = K, ``n_queries`` = n_q = K + 1 (the loop's iterations),
``noise_multiplier`` = alpha, ``threshold`` = theta, ``size`` = s (the number of values).

Fixes of the paper that this module makes (numbered as in docs/varshney2022.md):

* D2: each count gets variance ``n_q alpha^2`` (the paper writes ``K alpha^2`` for ``K + 1``
  queries), so one search costs exactly ``1/(2 alpha^2)``-zCDP.
* D3: the threshold is ``s - Gamma'`` with the margin ``Gamma' = z sqrt(n_q) alpha`` and
  ``z = Phi^-1(1 - beta / (2 n_q m))`` for ``m`` searches (:func:`margin_threshold`); the
  paper-literal ``theta = s`` (:func:`literal_threshold`) overshoots often and is kept only to
  reproduce that failure.
* D4: a finite grid of ``K + 1`` levels (default ``K = 32``), computed as exact powers of two
  times ``B`` so nothing over- or underflows silently.
* D5: when no noisy count reaches the threshold, the search returns ``B``.

All ``n_q`` counts are always released, as one vector: the early break of Alg. 3 is
post-processing of them, so releasing all keeps the sequence of mechanism calls independent
of the data and charges exactly the maximum number of queries, as the privacy proof assumes.
Replacing one value moves each count by at most 1, so the count vector has L2 sensitivity
sqrt(n_q); with noise std sqrt(n_q) alpha per count it is one Gaussian release of cost
n_q / (2 n_q alpha^2) = 1/(2 alpha^2), the same as n_q scalar releases of sensitivity 1
composed (Lemma 3.10), charged once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_int, check_positive, check_real
from ..privacy.ledger import PrivacyLedger
from ..privacy.queries import Query, query_sensitivity
from .gaussian import gaussian
from .rng import NoiseSource

__all__ = [
    "DoublingSearch",
    "SearchResult",
    "literal_threshold",
    "margin_threshold",
    "private_count",
]

#: Largest grid: B * 2**-1074 is the smallest positive double for B = 1.
MAX_LEVELS = 1074


def private_count(
    values: ArrayLike,
    threshold: float,
    *,
    noise_std: float,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
) -> float:
    """Release ``#{i : values[i] <= threshold} + N(0, noise_std^2)``.

    Each record contributes one value, so replacing (or adding/removing) one record changes
    the count by at most 1: the L2 sensitivity is 1 under either relation. NaN values are
    never counted. ``threshold`` must be public.

    Examples
    --------
    >>> import warnings
    >>> from dpfit.mechanisms import make_noise_source
    >>> from dpfit.privacy import PrivacyLedger
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     src = make_noise_source(0)
    >>> ledger = PrivacyLedger()
    >>> c = private_count([0.1, 0.5, 2.0], 1.0, noise_std=0.5, ledger=ledger, rng=src, label="n")
    >>> ledger.rho
    2.0
    """
    threshold = check_real(threshold, "threshold")
    count = np.count_nonzero(np.asarray(values, dtype=np.float64) <= threshold)
    out = gaussian(
        float(count),
        sensitivity=query_sensitivity(Query.COUNT),
        noise_std=noise_std,
        ledger=ledger,
        rng=rng,
        label=label,
    )
    return float(out)


def literal_threshold(size: int) -> float:
    """The paper-literal threshold ``theta = s`` of Alg. 3 (overshoots; fix D3)."""
    return float(check_int(size, "size", low=1))


def margin_threshold(
    size: int,
    *,
    n_queries: int,
    noise_multiplier: float,
    searches: int = 1,
    failure_prob: float = 0.01,
) -> float:
    """The margin threshold ``theta = s - z sqrt(n_q) alpha`` of fix D3 (docs/varshney2022.md).

    ``z = Phi^-1(1 - failure_prob / (2 n_q searches))`` is a two-sided union bound over all
    ``n_q * searches`` counts, so with probability at least ``1 - failure_prob`` no count's
    noise exceeds the margin ``Gamma' = z sqrt(n_q) alpha``. On that event a search that stops
    has counted at least ``s - 2 Gamma'`` values below its level, and returns at most
    ``max(Delta, 2 max_j r_j)`` when ``max_j r_j <= B``. The threshold is a function
    of public inputs only. It can be negative when ``s`` is below the margin; the algorithm
    using it then warns (the search still is private, but returns the floor level).
    """
    size = check_int(size, "size", low=1)
    n_queries = check_int(n_queries, "n_queries", low=1)
    alpha = check_positive(noise_multiplier, "noise_multiplier")
    searches = check_int(searches, "searches", low=1)
    beta = check_real(failure_prob, "failure_prob", low=0.0, high=1.0)
    from scipy import special  # lazily: scipy.special alone costs ~3x import numpy

    z = float(special.ndtri(1.0 - beta / (2.0 * n_queries * searches)))
    return size - z * math.sqrt(n_queries) * alpha


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SearchResult:
    """The release of one DP-STAT search.

    Attributes
    ----------
    value : float
        The selected level gamma (``ceiling`` when no noisy count reached the threshold).
    level : int
        Its index ``i`` in the grid ``ceiling * 2**(i - n_levels)``.
    crossed : bool
        Whether some noisy count reached the threshold.
    noisy_counts : ndarray of shape (n_queries,)
        Every released noisy count, level by level.
    """

    value: float
    level: int
    crossed: bool
    noisy_counts: np.ndarray


@dataclass(frozen=True, slots=True, kw_only=True)
class DoublingSearch:
    """DP-STAT (Alg. 3 with fixes D2-D5): a private doubling search, as public config.

    Parameters
    ----------
    ceiling : float
        B, the largest level and the answer when no count reaches the threshold (public,
        finite, > 0).
    noise_multiplier : float
        alpha: each count's noise std is ``sqrt(n_queries) * alpha`` and the vector of counts
        has L2 sensitivity ``sqrt(n_queries)``, so one search is ``1 / (2 alpha^2)``-zCDP
        (Lemma 3.10 with fix D2).
    threshold : float
        theta, public (see :func:`margin_threshold`, :func:`literal_threshold`).
    n_levels : int, default=32
        K: the grid is ``ceiling * 2**(i - K)`` for ``i = 0..K`` (``n_queries = K + 1``).

    Examples
    --------
    >>> import warnings
    >>> from dpfit.mechanisms import make_noise_source
    >>> from dpfit.privacy import PrivacyLedger
    >>> search = DoublingSearch(ceiling=64.0, noise_multiplier=1.0, threshold=90.0, n_levels=8)
    >>> search.levels[:3].tolist(), search.n_queries
    ([0.25, 0.5, 1.0], 9)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     src = make_noise_source(1)
    >>> ledger = PrivacyLedger()
    >>> res = search.run(np.linspace(0.0, 3.0, 100), ledger=ledger, rng=src, label="stat")
    >>> res.value, round(ledger.rho, 12)
    (4.0, 0.5)
    """

    ceiling: float
    noise_multiplier: float
    threshold: float
    n_levels: int = 32

    def __post_init__(self) -> None:
        object.__setattr__(self, "ceiling", check_positive(self.ceiling, "ceiling"))
        alpha = check_positive(self.noise_multiplier, "noise_multiplier")
        object.__setattr__(self, "noise_multiplier", alpha)
        object.__setattr__(self, "threshold", check_real(self.threshold, "threshold"))
        object.__setattr__(
            self, "n_levels", check_int(self.n_levels, "n_levels", low=1, high=MAX_LEVELS)
        )
        if not self.floor > 0:
            raise ValueError(
                f"ceiling * 2**-n_levels underflows to 0 (ceiling={self.ceiling!r}, "
                f"n_levels={self.n_levels}); use fewer levels"
            )
        if not math.isfinite(self.count_noise_std):
            raise ValueError("noise scale not finite: noise_multiplier is too large")

    @property
    def n_queries(self) -> int:
        """Number of noisy counts per search, n_q = K + 1."""
        return self.n_levels + 1

    @property
    def count_sensitivity(self) -> float:
        """L2 sensitivity of the vector of n_q counts, sqrt(n_q) (each moves by at most 1)."""
        return query_sensitivity(Query.COUNT, columns=self.n_queries)

    @property
    def count_noise_std(self) -> float:
        """Noise std of each count, sqrt(n_q) * alpha."""
        return self.count_sensitivity * self.noise_multiplier

    @property
    def floor(self) -> float:
        """Delta = ceiling * 2**-K, the smallest level."""
        return math.ldexp(self.ceiling, -self.n_levels)

    @property
    def levels(self) -> np.ndarray:
        """The grid Delta * 2**i, i = 0..K (exact powers of two times the ceiling)."""
        return np.ldexp(self.ceiling, np.arange(self.n_queries) - self.n_levels)

    def run(
        self, values: ArrayLike, *, ledger: PrivacyLedger, rng: NoiseSource, label: str
    ) -> SearchResult:
        """Search privately over ``values`` (one per record, >= 0; NaN counts as above B).

        The n_q counts are one release through :func:`dpfit.mechanisms.gaussian` with L2
        sensitivity sqrt(n_q), charged to ``ledger`` before the noise is drawn; the counts
        come from a binary search of each value among the levels (O(s log K)).
        """
        return self.release(self.count(values), ledger=ledger, rng=rng, label=label)

    def count(self, values: ArrayLike) -> np.ndarray:
        """Exact counts #{j : values_j <= level} per level (**not private**; NaN never counted).

        Counts add over disjoint parts of the values, so data split in blocks (e.g. on Dask)
        can be counted block by block and the sums passed to :meth:`release`.
        """
        values = np.asarray(values, dtype=np.float64).ravel()
        # first[j]: the first level >= values_j (n_q above the ceiling or NaN: never counted)
        first = np.searchsorted(self.levels, values, side="left")
        return np.cumsum(np.bincount(first, minlength=self.n_queries + 1)[: self.n_queries])

    def release(
        self, counts: ArrayLike, *, ledger: PrivacyLedger, rng: NoiseSource, label: str
    ) -> SearchResult:
        """The search on exact per-level ``counts`` (from :meth:`count`): all released at once."""
        counts = np.asarray(counts, dtype=np.float64)
        if counts.shape != (self.n_queries,):
            raise ValueError(f"counts must have shape ({self.n_queries},), got {counts.shape}")
        noisy = gaussian(
            counts,
            sensitivity=self.count_sensitivity,
            noise_std=self.count_noise_std,
            ledger=ledger,
            rng=rng,
            label=label,
        )
        hits = np.flatnonzero(noisy >= self.threshold)
        crossed = hits.size > 0
        level = int(hits[0]) if crossed else self.n_levels
        return SearchResult(
            value=float(self.levels[level]), level=level, crossed=crossed, noisy_counts=noisy
        )
