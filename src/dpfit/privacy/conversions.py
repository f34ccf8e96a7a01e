"""Conversions between rho-zCDP, mu-GDP and (epsilon, delta)-DP.

Notation: rho is the zCDP parameter (Bun & Steinke 2016), mu the Gaussian-DP parameter
(Dong, Roth & Su 2022), L = ln(1/delta). A Gaussian mechanism with L2 sensitivity Delta and
noise std sigma is rho = Delta^2 / (2 sigma^2) zCDP and mu = Delta / sigma GDP, so
mu = sqrt(2 rho) for a composition of un-subsampled Gaussian mechanisms.

Three curves are offered:

* ``"cks"`` -- the optimal conversion of any rho-zCDP guarantee (Canonne, Kamath & Steinke
  2020, Prop. 12). Exact for the zCDP claim; the default everywhere in dpfit.
* ``"bun-steinke"`` -- eps = rho + 2 sqrt(rho L) (Bun & Steinke 2016, Prop. 1.3). A valid but
  looser upper bound, used by Brown et al. (Claim A.6) and kept to reproduce papers.
* exact Gaussian (GDP) -- delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
  (Balle & Wang 2018, Thm. 8). Exact, but valid only when the whole release is a
  composition of un-subsampled Gaussian mechanisms.

All routines are computed in float64 with reparametrisations that avoid cancellation and
overflow, over rho in [1e-12, 1e3] and delta in [1e-300, 0.5] (tested against 50-digit
mpmath values, ``tests/privacy/test_conversions.py``), and stay finite and accurate to float
precision for every finite rho above (a public rho of 1e300 is charged like any other, and
its statement must print): there epsilon exceeds rho by about 2 sqrt(rho L), less than an
ulp of rho from about 1e33 on.
"""

from __future__ import annotations

import math

from .._validation import check_delta, check_option, check_positive, check_real
from ._scalar import brentq, log_mills, log_ndtr

__all__ = [
    "approx_dp_to_zcdp",
    "bun_steinke_epsilon",
    "bun_steinke_rho",
    "cks_delta",
    "cks_epsilon",
    "cks_rho",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "zcdp_to_approx_dp",
]

_METHODS = ("cks", "bun-steinke")
_XTOL = 1e-300  # absolute tolerance handed to brentq; rtol below does the real work
_RTOL = 4 * 2.220446049250313e-16  # brentq's smallest allowed rtol


def _root(fun, lo: float, hi: float) -> float:
    """Brent's method on a sign-changing bracket, to full double precision."""
    return brentq(fun, lo, hi, xtol=_XTOL, rtol=_RTOL, maxiter=500)


# ---------------------------------------------------------------- CKS (optimal zCDP)


def _cks_epsilon(rho: float, delta: float) -> float:
    # eps = inf_{alpha>1} alpha rho + (L - ln alpha)/(alpha-1) + ln(1 - 1/alpha).
    # With alpha = 1 + a this is g(a) = (1+a) rho + (L - log1p(a))/a - log1p(1/a), whose
    # derivative is rho - (L - log1p(a))/a^2: the unique root solves rho a^2 = L - log1p(a).
    # rho s s is evaluated as (rho s) s, which neither overflows nor underflows for any
    # finite rho > 0 and s near the root (s^2 alone is subnormal when rho is near 1e308).
    big_l = -math.log(delta)

    def grad(s: float) -> float:
        return rho * s * s - big_l + math.log1p(s)

    hi = math.sqrt(big_l / rho)  # rho hi^2 = L >= L - log1p(hi), up to rounding:
    while grad(hi) <= 0.0:  # for rho above ~1e69, log1p(hi) is below rounding of rho hi^2
        hi *= 2.0
    a = _root(grad, 0.0, hi)
    if a <= 0.0:
        return math.inf
    eps = (1.0 + a) * rho + (big_l - math.log1p(a)) / a - math.log1p(1.0 / a)
    return max(eps, 0.0)


def _cks_log_delta(rho: float, eps: float) -> float:
    # delta = inf_{alpha>1} exp((alpha-1)(alpha rho - eps)) (1-1/alpha)^alpha / (alpha-1).
    # In a = alpha - 1: h(a) = a((1+a) rho - eps) - (1+a) log1p(1/a) - ln a, and
    # h'(a) = (1+2a) rho - eps - log1p(1/a), increasing from -inf to +inf.
    def grad(s: float) -> float:
        return (1.0 + 2.0 * s) * rho - eps - math.log1p(1.0 / s)

    lo, hi = 1e-300, 1.0
    while grad(hi) < 0:
        hi *= 2.0
    a = _root(grad, lo, hi)
    h = a * ((1.0 + a) * rho - eps) - (1.0 + a) * math.log1p(1.0 / a) - math.log(a)
    return min(h, 0.0)


def cks_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP (CKS 2020, Prop. 12).

    Parameters
    ----------
    rho : float
        zCDP parameter, finite and > 0.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        epsilon >= 0 (0 when delta already exceeds the total-variation bound).

    Examples
    --------
    >>> round(cks_epsilon(0.5, 1e-5), 6)
    4.728387
    """
    return _cks_epsilon(check_positive(rho, "rho"), check_delta(delta))


def cks_delta(rho: float, epsilon: float) -> float:
    """Smallest delta such that rho-zCDP implies (epsilon, delta)-DP (CKS 2020, Prop. 12)."""
    rho = check_positive(rho, "rho")
    epsilon = check_real(epsilon, "epsilon", low=0.0, low_open=False, high=math.inf)
    return math.exp(_cks_log_delta(rho, epsilon))


def _invert_increasing(curve, target: float, guess: float) -> float:
    """Largest x > 0 with curve(x) <= target, for an increasing curve; bracket by doubling."""
    lo = hi = guess
    while curve(lo) > target:
        lo /= 2.0
    while curve(hi) <= target:
        hi *= 2.0
    return math.exp(_root(lambda u: curve(math.exp(u)) - target, math.log(lo), math.log(hi)))


def cks_rho(epsilon: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP under the CKS conversion."""
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_delta(delta)
    return _invert_increasing(
        lambda r: _cks_epsilon(r, delta), epsilon, _bun_steinke_rho(epsilon, delta)
    )


# ---------------------------------------------------------------- Bun-Steinke bound


def bun_steinke_epsilon(rho: float, delta: float) -> float:
    """Bun-Steinke bound epsilon = rho + 2 sqrt(rho ln(1/delta)) (BS16, Prop. 1.3).

    Looser than :func:`cks_epsilon`; kept because Brown et al. (Claim A.6) calibrate with it.
    """
    rho = check_positive(rho, "rho")
    delta = check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * -math.log(delta))


def _bun_steinke_rho(epsilon: float, delta: float) -> float:
    # (sqrt(L + eps) - sqrt(L))^2 written without cancellation.
    big_l = -math.log(delta)
    return epsilon * epsilon / (math.sqrt(big_l + epsilon) + math.sqrt(big_l)) ** 2


def bun_steinke_rho(epsilon: float, delta: float) -> float:
    """Inverse of the Bun-Steinke bound: rho = (sqrt(L + eps) - sqrt(L))^2."""
    return _bun_steinke_rho(check_positive(epsilon, "epsilon"), check_delta(delta))


# ---------------------------------------------------------------- exact Gaussian (GDP)


def _gdp_log_delta(mu: float, eps: float) -> float:
    # log[Phi(a) - e^eps Phi(b)], a = -eps/mu + mu/2, b = -eps/mu - mu/2, in log space:
    # the ratio e^eps Phi(b)/Phi(a) < 1 stays away from 1 by Mills' ratio.
    a = -eps / mu + mu / 2.0
    b = -eps / mu - mu / 2.0
    log_pa = log_ndtr(a)
    log_ratio = eps + log_ndtr(b) - log_pa
    if log_ratio >= 0.0:
        return -math.inf
    return log_pa + math.log(-math.expm1(log_ratio))


def gaussian_delta(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of a mu-GDP mechanism (Balle & Wang 2018, Thm. 8)."""
    mu = check_positive(mu, "mu")
    epsilon = check_real(epsilon, "epsilon", low=0.0, low_open=False, high=math.inf)
    return math.exp(_gdp_log_delta(mu, epsilon))


#: Above this mu the exact Gaussian epsilon is found in t = (eps - mu^2 / 2) / mu.
_LARGE_MU = 1e3


def _gdp_log_delta_t(mu: float, t: float) -> float:
    # _gdp_log_delta at eps = mu^2 / 2 + mu t, where a = -t and b = -(t + mu): then
    # e^eps Phi(b) = e^(-t^2 / 2) Phi(b) e^(b^2 / 2), free of the cancellation between
    # eps and log Phi(b) (both about mu^2 / 2) that costs _gdp_log_delta its digits once
    # mu^2 is large (relative errors of 1e-8 in epsilon from mu ~ 1e9 on).
    log_pa = log_ndtr(-t)
    log_ratio = -0.5 * t * t + log_mills(t + mu) - log_pa
    if log_ratio >= 0.0:
        return -math.inf
    return log_pa + math.log(-math.expm1(log_ratio))


def _gaussian_epsilon(mu: float, delta: float) -> float:
    log_delta = math.log(delta)
    if _gdp_log_delta(mu, 0.0) <= log_delta:
        return 0.0
    if mu > _LARGE_MU:  # eps = mu (mu / 2 + t), t about Phi^-1(1 - delta): +inf past 1.8e308
        lo, hi = -1.0, 1.0  # t >= -mu / 2 (eps >= 0), where the curve is above delta
        while lo > -mu / 2.0 and _gdp_log_delta_t(mu, lo) <= log_delta:
            lo *= 2.0
        while _gdp_log_delta_t(mu, hi) > log_delta:
            hi *= 2.0
        t = _root(lambda s: _gdp_log_delta_t(mu, s) - log_delta, max(lo, -mu / 2.0), hi)
        return mu * (mu / 2.0 + t)
    hi = max(1.0, mu * mu)
    while _gdp_log_delta(mu, hi) > log_delta:
        hi *= 2.0
    return _root(lambda e: _gdp_log_delta(mu, e) - log_delta, 0.0, hi)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon at ``delta`` of a mu-GDP release (e.g. mu = sqrt(2 rho) for Gaussians).

    Valid only for compositions of un-subsampled Gaussian mechanisms; use
    :func:`cks_epsilon` for a general zCDP guarantee.

    Examples
    --------
    >>> round(gaussian_epsilon(1.0, 1e-5), 6)
    4.377178
    """
    return _gaussian_epsilon(check_positive(mu, "mu"), check_delta(delta))


def gaussian_mu(epsilon: float, delta: float) -> float:
    """Largest mu such that a mu-GDP release is (epsilon, delta)-DP (exact curve)."""
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_delta(delta)
    return _invert_increasing(lambda m: _gaussian_epsilon(m, delta), epsilon, 1.0)


# ---------------------------------------------------------------- dispatch


def zcdp_to_approx_dp(rho: float, delta: float, method: str = "cks") -> float:
    """Epsilon implied by rho-zCDP at ``delta``; ``method`` is "cks" (optimal) or "bun-steinke"."""
    method = check_option(method, "method", _METHODS)
    return cks_epsilon(rho, delta) if method == "cks" else bun_steinke_epsilon(rho, delta)


def approx_dp_to_zcdp(epsilon: float, delta: float, method: str = "cks") -> float:
    """Largest rho whose zCDP guarantee gives (epsilon, delta)-DP under ``method``."""
    method = check_option(method, "method", _METHODS)
    return cks_rho(epsilon, delta) if method == "cks" else bun_steinke_rho(epsilon, delta)
