"""The plain-Python root finder and log Phi agree with SciPy's (two routes, one answer)."""

import math

import numpy as np
import pytest
from scipy import optimize, special

from dpfit.privacy._scalar import brentq, log_ndtr


def test_brentq_matches_scipy_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(300):
        c, p, s = rng.uniform(-5, 5), int(rng.integers(1, 6)), rng.uniform(0.1, 3)

        def f(x, c=c, p=p, s=s):
            return math.copysign(abs(x - c) ** p, x - c) * s + 1e-3 * math.sin(x)

        lo, hi = c - rng.uniform(0.01, 10), c + rng.uniform(0.01, 10)
        if (f(lo) > 0) == (f(hi) > 0):
            continue
        for xtol, rtol in ((2e-12, 1e-15), (1e-300, 4 * np.finfo(float).eps)):
            assert brentq(f, lo, hi, xtol=xtol, rtol=rtol) == optimize.brentq(
                f, lo, hi, xtol=xtol, rtol=rtol
            )


def test_brentq_errors():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1, -1.0, 1.0)
    with pytest.raises(RuntimeError, match="converge"):
        brentq(lambda x: math.exp(x) - 2.0, 0.0, 10.0, xtol=1e-300, rtol=0.0, maxiter=2)


def test_log_ndtr_matches_scipy():
    # SciPy's log_ndtr is accurate to ~3e-14 relative (checked against 50-digit mpmath while
    # writing this module); 1e-12 leaves room for libm's erfc differing by a few ulp.
    xs = np.concatenate([np.linspace(-60, 40, 4001), -np.logspace(-3, 3, 400)])
    ours = np.array([log_ndtr(float(x)) for x in xs])
    ref = special.log_ndtr(xs)
    tiny = np.abs(ref) < 1e-300  # log Phi(x) underflows to subnormals for x > ~37
    np.testing.assert_allclose(ours[~tiny], ref[~tiny], rtol=1e-12)
    assert np.all(np.abs(ours[tiny]) < 1e-300)
