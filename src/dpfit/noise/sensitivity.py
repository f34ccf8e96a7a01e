"""Sensitivity of matrix-factorisation (correlated-noise) mechanisms under multiple participations.

Notation (Choquette-Choo et al. 2024, Thm. 1.1 and App. A.2; Choquette-Choo et al. 2023b):

=======================  ======  ===========================================================
API name                 symbol  meaning
=======================  ======  ===========================================================
``steps``                T       number of steps (columns of the encoder C)
``participations``       k       most steps any one record contributes to
``separation``           b       least gap between two of a record's steps
``order``                        ``"fixed-epoch"``: a record's steps are exactly i, i+b,
                                 i+2b, ... (data shuffled once, then cycled; b = steps per
                                 epoch); ``"min-separation"``: any <= k steps >= b apart
(gram)                   X       C^T C, the (T x T) Gram matrix of the encoder
=======================  ======  ===========================================================

For a participation pattern pi (a set of steps), a record changing its clipped contributions
(adaptively, as vectors) moves ``C G`` by at most ``sqrt(sum_{p, q in pi} |X_pq|)`` per unit of
contribution norm, and exactly that when X >= 0 on pi. The squared sensitivity is the maximum
over allowed patterns; multiply its square root by the per-step sensitivity of the clipped
sum (2 clip under replace-one, clip under add/remove) to get the release's L2 sensitivity.

Exactness, by routine:

* :func:`pattern_sensitivity_squared` -- max over an explicit list of patterns of
  sum |X_pq|: exact for X >= 0 on every pattern, an upper bound otherwise. Over the b
  fixed-epoch offsets this is the general |C^T C| bound.
* :func:`monotone_toeplitz_sensitivity_squared` -- Toeplitz C whose first column c is
  non-negative and non-increasing: sum_t (sum_{j<k} c_{t-jb})^2, exact under both orders
  (worst pattern 0, b, 2b, ...; arXiv 2405.13763, Thm. 2). O(kT).
* :func:`minsep_sensitivity_squared_bound` -- any X under min-separation: the two-stage
  dynamic programme of McKenna et al. 2023 (arXiv 2306.08153, Alg. 4), an upper bound.
* :func:`brute_force_sensitivity_squared` -- enumeration, for tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import check_int, check_option

__all__ = [
    "ORDERS",
    "brute_force_sensitivity_squared",
    "fixed_epoch_patterns",
    "minsep_sensitivity_squared_bound",
    "monotone_toeplitz_sensitivity_squared",
    "pattern_sensitivity_squared",
    "resolve_participation",
]

ORDERS = ("fixed-epoch", "min-separation")


def resolve_participation(
    steps: int, participations: int, separation: int | None, order: str
) -> tuple[int, int, str]:
    """Validate (k, b, order) for T steps; return k capped at ceil(T/b) and b capped at T.

    ``separation=None`` means single participation and is only allowed with k = 1.
    """
    steps = check_int(steps, "steps", low=1)
    k = check_int(participations, "participations", low=1)
    order = check_option(order, "order", ORDERS)
    if separation is None:
        if k > 1:
            raise TypeError("separation is required when participations > 1")
        b = steps
    else:
        b = check_int(separation, "separation", low=1)
    b = min(b, steps)
    return min(k, math.ceil(steps / b)), b, order


def fixed_epoch_patterns(steps: int, participations: int, separation: int) -> np.ndarray:
    """The fixed-epoch patterns {i, i+b, ..., i+(k-1)b} for i < b, as a (b, k) array (-1 = none)."""
    k, b = participations, separation
    P = np.arange(min(b, steps))[:, None] + b * np.arange(k)[None, :]
    return np.where(P < steps, P, -1)


def pattern_sensitivity_squared(
    gram: Callable[[np.ndarray], np.ndarray], patterns: np.ndarray, *, chunk: int = 4096
) -> float:
    """max over patterns of sum_{p, q} |X_pq|, with ``gram(P) -> (m, k, k)`` the X blocks.

    Exact when X >= 0 on the patterns, an upper bound otherwise (absolute values keep it safe
    for adaptively chosen vector contributions; Choquette-Choo et al. 2024, App. A.2).
    """
    best = 0.0
    for s in range(0, patterns.shape[0], chunk):
        block = np.abs(gram(patterns[s : s + chunk]))
        best = max(best, float(block.sum(axis=(1, 2)).max()))
    return best


def monotone_toeplitz_sensitivity_squared(
    inverse: np.ndarray, participations: int, separation: int
) -> float:
    """Exact sens^2 of a Toeplitz encoder with non-negative, non-increasing first column c.

    sens^2 = sum_{t<T} (sum_{j<k} c_{t-jb})^2 with c at negative indices = 0
    (Choquette-Choo et al. 2024, App. A.2; jax_privacy ``toeplitz.minsep_sensitivity_squared``).
    Raises ``ValueError`` if c is not non-negative and non-increasing (then the formula
    would under-state the sensitivity).
    """
    c = np.asarray(inverse, dtype=np.float64)
    if c.ndim != 1 or c.size == 0:
        raise ValueError("inverse must be a non-empty 1-D array")
    if (c < 0).any() or (np.diff(c) > 0).any():
        raise ValueError("inverse coefficients must be non-negative and non-increasing")
    T = c.size
    k, b = participations, min(separation, T)
    col = c.copy()
    for j in range(1, min(k, math.ceil(T / b))):
        col[j * b :] += c[: T - j * b]
    return math.fsum(col * col)


def _max_selection(x: np.ndarray, participations: int, separation: int) -> np.ndarray:
    """Row-wise max of sum_{i in pi} x_i over sets pi of <= k indices >= b apart (DP, O(nk))."""
    x = np.atleast_2d(x)
    n = x.shape[1]
    f = np.zeros((x.shape[0], n + separation))
    for _ in range(participations):
        f[:, :n] = x + f[:, separation : separation + n]
        f = np.maximum.accumulate(f[:, ::-1], axis=1)[:, ::-1]
    return f[:, 0]


def minsep_sensitivity_squared_bound(
    gram: np.ndarray, participations: int, separation: int
) -> float:
    """Upper bound on max over min-separated patterns of sum |X_pq| (arXiv 2306.08153, Alg. 4).

    Each row's best pattern is chosen independently, then the best pattern of row values.
    Exact for a single participation.
    """
    X = np.abs(np.asarray(gram, dtype=np.float64))
    rows = _max_selection(X, participations, separation)
    return float(_max_selection(rows, participations, separation)[0])


def _minsep_subsets(steps: int, participations: int, separation: int):
    def extend(prefix: list[int], start: int):
        yield prefix
        if len(prefix) == participations:
            return
        for t in range(start, steps):
            yield from extend([*prefix, t], t + separation)

    for pattern in extend([], 0):
        if pattern:
            yield pattern


def brute_force_sensitivity_squared(
    encoder: np.ndarray, participations: int, separation: int, order: str = "fixed-epoch"
) -> float:
    """Reference value from a dense encoder C (rows x T) by enumerating every pattern (tests).

    ``"min-separation"`` enumerates all subsets, so keep T small (<= ~20).
    """
    C = np.asarray(encoder, dtype=np.float64)
    X = np.abs(C.T @ C)
    T = C.shape[1]
    order = check_option(order, "order", ORDERS)
    if order == "fixed-epoch":
        patterns = [
            [i + j * separation for j in range(participations) if i + j * separation < T]
            for i in range(min(separation, T))
        ]
    else:
        patterns = _minsep_subsets(T, participations, separation)
    return max(float(X[np.ix_(p, p)].sum()) for p in patterns)
