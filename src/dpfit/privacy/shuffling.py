"""Amplification by shuffling for one pass of Gaussian local randomizers (used by DP-SSGD).

Feldman, McMillan & Talwar (2021, "Hiding among the clones"): if each of n records, in a
uniformly random order that is secret and independent of the data, is processed once by an
(adaptive) (eps0, delta0)-DP local randomizer, the whole output is (eps, delta_hat + extra)-DP
with, for eps0 <= ln(n / (16 ln(2/delta_hat))),

    eps   = ln(1 + (e^eps0 - 1)/(e^eps0 + 1) * (8 sqrt(e^eps0 ln(4/delta_hat)) / sqrt(n)
                                                 + 8 e^eps0 / n))          (Thm. 3.1)
    extra = (e^eps + 1)(1 + e^-eps0 / 2) n delta0                        (Thm. 3.8)

This is an (epsilon, delta) statement, not zCDP: dpfit's ledger keeps the (always valid)
zCDP cost of the releases, and the amplified guarantee is reported beside it, only where the
preconditions hold (docs/varshney2022.md). A Gaussian local randomizer with noise std
``alpha`` times its sensitivity is (1/alpha)-GDP, so eps0 at delta0 comes from the exact
Gaussian curve (valid for every eps0, unlike the classic formula).
"""

from __future__ import annotations

import math

from .._validation import check_delta, check_epsilon, check_int, check_positive
from .conversions import gaussian_epsilon

__all__ = [
    "shuffle_amplified_epsilon",
    "shuffle_local_epsilon_limit",
    "shuffle_total_delta",
    "shuffled_gaussian_noise_multiplier",
]


def shuffle_local_epsilon_limit(n: int, delta: float) -> float:
    """The largest eps0 FMT21's bound allows: ln(n / (16 ln(2/delta))) (may be negative)."""
    n = check_int(n, "n", low=1)
    return math.log(n / (16.0 * math.log(2.0 / check_delta(delta))))


def shuffle_amplified_epsilon(local_epsilon: float, n: int, delta: float) -> float | None:
    """FMT21 Thm. 3.1's epsilon at ``delta`` (delta_hat), or None outside its precondition.

    Examples
    --------
    >>> round(shuffle_amplified_epsilon(1.0, 10**6, 5e-7), 4)
    0.024
    """
    eps0 = check_positive(local_epsilon, "local_epsilon")
    n = check_int(n, "n", low=1)
    delta = check_delta(delta)
    if eps0 > shuffle_local_epsilon_limit(n, delta):
        return None
    e0 = math.exp(eps0)
    inner = 8.0 * math.sqrt(e0 * math.log(4.0 / delta) / n) + 8.0 * e0 / n
    return math.log1p(math.tanh(eps0 / 2.0) * inner)  # (e^x - 1)/(e^x + 1) = tanh(x/2)


def shuffle_total_delta(
    epsilon: float, local_epsilon: float, local_delta: float, n: int, delta: float
) -> float:
    """FMT21 Thm. 3.8: delta_hat + (e^eps + 1)(1 + e^-eps0 / 2) n delta0."""
    return delta + (math.exp(epsilon) + 1.0) * (1.0 + math.exp(-local_epsilon) / 2.0) * (
        n * local_delta
    )


def shuffled_gaussian_noise_multiplier(epsilon: float, delta: float, n: int) -> float | None:
    """Smallest alpha for which one shuffled pass of Gaussian local randomizers is (eps, delta)-DP.

    delta is split as delta_hat = delta/2 and delta0 = (delta/2) / (1.5 (e^eps + 1) n), so
    Thm. 3.8's total is at most delta whenever the amplified epsilon is at most ``epsilon``;
    eps0 = exact Gaussian epsilon of a (1/alpha)-GDP release at delta0. Returns None when no
    alpha meets the target inside the theorem's precondition (e.g. epsilon too large for n).

    Examples
    --------
    >>> alpha = shuffled_gaussian_noise_multiplier(0.05, 1e-6, 10**6)
    >>> round(alpha, 2)
    4.1
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta)
    n = check_int(n, "n", low=1)
    half = delta / 2.0
    delta0 = half / (1.5 * (math.exp(eps) + 1.0) * n)
    limit = shuffle_local_epsilon_limit(n, half)

    def slack(log_alpha: float) -> float:  # > 0 when alpha = e^log_alpha meets the target
        eps0 = gaussian_epsilon(1.0 / math.exp(log_alpha), delta0)  # mu = 1/alpha, as returned
        if eps0 > limit:
            return -1.0
        amplified = shuffle_amplified_epsilon(eps0, n, half) if eps0 > 0 else 0.0
        return eps - amplified

    lo, hi = math.log(1e-3), math.log(1e6)
    if slack(hi) < 0:
        return None
    if slack(lo) >= 0:
        return math.exp(lo)
    for _ in range(200):  # bisection keeping slack(hi) >= 0: the result always meets the target
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if slack(mid) >= 0 else (mid, hi)
    return math.exp(hi)
