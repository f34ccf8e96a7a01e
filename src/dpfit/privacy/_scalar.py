"""Two scalar routines of the conversions, in plain Python so ``dpfit privacy`` starts fast.

Importing ``scipy.optimize`` and ``scipy.special`` costs about four times ``import numpy``;
the accountant needs only Brent's root finder and log Phi, so both are written here on top of
:mod:`math` and tested against SciPy (``tests/privacy/test_scalar.py``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

__all__ = ["brentq", "log_mills", "log_ndtr"]

_EPS = sys.float_info.epsilon
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)


def brentq(
    f: Callable[[float], float],
    a: float,
    b: float,
    *,
    xtol: float = 2e-12,
    rtol: float = 4 * _EPS,
    maxiter: int = 500,
) -> float:
    """A root of ``f`` in the sign-changing bracket [a, b] by Brent's method.

    The same iteration, step by step, as SciPy's C ``brentq`` (Brent 1973, ch. 4: inverse
    quadratic interpolation or secant steps, bisection when they do not shrink the bracket
    fast enough), so results agree with ``scipy.optimize.brentq`` to the last bit.

    Raises
    ------
    ValueError
        ``f(a)`` and ``f(b)`` have the same sign.
    RuntimeError
        No convergence in ``maxiter`` iterations.
    """
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = f(xpre), f(xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # secant (linear interpolation)
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # inverse quadratic interpolation
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry  # a good short step
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = f(xcur)
    raise RuntimeError(f"brentq did not converge in {maxiter} iterations")


def log_ndtr(x: float) -> float:
    """log Phi(x), accurate in both tails (as SciPy's ``special.log_ndtr``).

    With Phi(x) = erfc(-x / sqrt 2) / 2: for x > -1, log1p(-Phi(-x)); for -20 < x <= -1, the
    log of the CDF (erfc keeps full relative precision there); below -20, the asymptotic
    series (Abramowitz & Stegun 26.2.12) log Phi(x) = -x^2/2 - log(-x) - log(2 pi)/2 +
    log(1 + sum_k (-1)^k (2k-1)!! / x^(2k)), summed until a term changes nothing.
    """
    if x > -1:
        return math.log1p(-0.5 * math.erfc(x / _SQRT2))
    if x > -20:
        return math.log(0.5 * math.erfc(-x / _SQRT2))
    return -0.5 * x * x - math.log(-x) - _HALF_LOG_2PI + math.log(_tail_series(x))


def _tail_series(x: float) -> float:
    """1 + sum_k (-1)^k (2k-1)!! / x^(2k) (A&S 26.2.12), summed until a term changes nothing."""
    total, last, term, k = 1.0, 0.0, 1.0, 0
    inv_x2 = 1.0 / (x * x)
    while abs(last - total) > _EPS:
        k += 1
        last = total
        term *= -(2 * k - 1) * inv_x2
        total += term
    return total


def log_mills(x: float) -> float:
    """log(Phi(-x) e^(x^2 / 2)) for x > 0: the log of the normal tail without its Gaussian
    factor, which :func:`log_ndtr` would add and a caller cancel again (for large x the two
    are both about x^2 / 2 and the difference would lose every digit). Up to 20 from erfc,
    beyond from the asymptotic series of :func:`log_ndtr`.
    """
    if x <= 20:
        return math.log(0.5 * math.erfc(x / _SQRT2)) + 0.5 * x * x
    return -math.log(x) - _HALF_LOG_2PI + math.log(_tail_series(-x))
