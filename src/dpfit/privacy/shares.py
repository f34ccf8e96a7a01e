"""Exact shares of a budget: floats whose exact sum never exceeds the whole.

A :class:`~dpfit.Budget` compares the exact sum of its charges with its total, with no
tolerance, so a budget split by float arithmetic can overspend by rounding: ``0.3 / 3`` is
0.1, and three charges of 0.1 sum to 0.3 + 1.7e-17 exactly, above 0.3. :func:`split` is the
one place where shares are computed: it returns floats whose exact (not float) sum is at
most the whole, each as close to its proportional part as that allows.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from .._validation import check_int, check_positive
from ._units import exact_units, float_at_most

__all__ = ["split"]


def split(rho: float, weights_or_k: int | Sequence[float]) -> list[float]:
    """Shares of ``rho`` whose exact sum never exceeds ``rho``.

    Parameters
    ----------
    rho : float
        The whole (finite, > 0), e.g. a budget's total.
    weights_or_k : int or sequence of float
        ``k`` >= 1: k equal shares, each the largest float with k times it at most ``rho``
        exactly. A sequence of finite weights > 0: share i is ``rho * w_i / sum(w)``
        rounded to float, and where the rounded shares sum above ``rho`` exactly the last
        share alone is lowered to the largest float that fits (by a few ulps of ``rho``),
        so every other share is the plain float product (``split(rho, [1 - s, s])[0]`` is
        ``rho * (1 - s)`` bit for bit when ``1 - s + s == 1``).

    Returns
    -------
    list of float
        The shares, each > 0, in the order of the weights.

    Raises
    ------
    ValueError
        A share would be 0 (a weight so small that its part underflows or is eaten by the
        rounding of the others).

    Examples
    --------
    >>> split(0.3, 3)
    [0.09999999999999999, 0.09999999999999999, 0.09999999999999999]
    >>> split(1.0, [0.98, 0.02])
    [0.98, 0.02]
    """
    rho = check_positive(rho, "rho")
    limit = exact_units(rho)
    if isinstance(weights_or_k, numbers.Integral):  # bool too: check_int refuses it
        k = check_int(weights_or_k, "k", low=1)
        share = float_at_most(limit // k)
        if not share > 0:
            raise ValueError(f"rho = {rho!r} is too small to split into {k} shares")
        return [share] * k
    weights = [check_positive(w, "weight") for w in weights_or_k]
    if not weights:
        raise ValueError("weights must hold at least one weight")
    whole = math.fsum(weights)
    shares = [rho * (w / whole) for w in weights]
    excess = sum(map(exact_units, shares)) - limit
    if excess > 0:
        shares[-1] = float_at_most(exact_units(shares[-1]) - excess)
    if not all(s > 0 for s in shares):
        raise ValueError(f"a weight is too small for a share of rho = {rho!r} to be > 0")
    return shares
