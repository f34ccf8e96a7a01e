"""Exact shares of a budget: floats whose exact sum never exceeds the whole.

A :class:`~dpfit.Budget` compares the exact sum of its charges with its total, with no
tolerance, so a budget split by float arithmetic can overspend by rounding: ``0.3 / 3`` is
0.1, and three charges of 0.1 sum to 0.3 + 1.7e-17 exactly, above 0.3. This module is the
one place where shares are computed: :func:`split` returns floats whose exact (not float)
sum is at most the whole, each as close to its proportional part as that allows;
:func:`split_rest` gives named parts fixed fractions of the whole and one part the rest;
:func:`portions` divides a fraction among named releases by weights.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

from .._validation import check_int, check_positive
from ._units import exact_units, float_at_most

__all__ = ["portions", "split", "split_rest"]


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


def split_rest(rho: float, fractions: Mapping[str, float], rest: str) -> dict[str, float]:
    """``rho * fraction`` for each named part, and the rest of ``rho`` for the part ``rest``.

    A fit whose releases take fixed fractions of its rho (a moment, a scale) and leave the
    rest to its main release (the descent) names them here. Each named share is the plain
    float product ``rho * fraction``; the rest is ``rho - fsum(named shares)``, lowered to
    the largest float with which the exact sum of all shares is at most ``rho``.

    Parameters
    ----------
    rho : float
        The whole (finite, > 0).
    fractions : mapping of str to float
        Each named part's fraction of ``rho``: >= 0, together < 1.
    rest : str
        The name of the part that gets the rest (not a key of ``fractions``).

    Returns
    -------
    dict of str to float
        The named shares, then the rest (> 0).

    Raises
    ------
    ValueError
        A fraction < 0, fractions summing to 1 or more, ``rest`` among the named parts, or a
        rest that rounding leaves at 0.

    Examples
    --------
    >>> split_rest(1.0, {"moments": 0.25}, rest="descent")
    {'moments': 0.25, 'descent': 0.75}
    """
    rho = check_positive(rho, "rho")
    if not sum(fractions.values()) < 1.0 or min(fractions.values(), default=0.0) < 0.0:
        raise ValueError(f"shares must be >= 0 and sum to less than 1, got {dict(fractions)}")
    if rest in fractions:
        raise ValueError(f"the rest's name {rest!r} is also a named part")
    shares = {name: rho * fraction for name, fraction in fractions.items()}
    room = exact_units(rho) - sum(map(exact_units, shares.values()))
    shares[rest] = min(rho - math.fsum(shares.values()), float_at_most(room))
    if not shares[rest] > 0:
        raise ValueError(f"the fractions {dict(fractions)} leave no rest of rho = {rho!r}")
    return shares


def portions(fraction: float, weights: Mapping[str, float]) -> dict[str, float]:
    """``fraction * w / sum(w)`` for each named weight ``w``: a fraction of a budget divided
    among named releases, to hand to :func:`split_rest` (or :func:`split`).

    The product is taken before the division, so that weights that are small integers give
    the float a reader expects: ``portions(s, {"a": 1, "b": 4})["a"]`` is ``s / 5`` bit for
    bit, and a power-of-two total divides exactly.

    Examples
    --------
    >>> portions(0.25, {"xtx": 2, "hessian": 3, "omega": 3, "whiten": 2})
    {'xtx': 0.05, 'hessian': 0.075, 'omega': 0.075, 'whiten': 0.05}
    """
    fraction = check_positive(fraction, "fraction")
    values = {name: check_positive(w, "weight") for name, w in weights.items()}
    if not values:
        raise ValueError("weights must hold at least one weight")
    whole = math.fsum(values.values())
    return {name: fraction * w / whole for name, w in values.items()}
