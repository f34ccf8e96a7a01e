"""Shares of one fit's rho whose exact sum never exceeds it (written once for every fit).

A fit splits its rho among several releases. The ledger adds the charges exactly
(:func:`dpfit.privacy.budget.exact_units`), so shares computed as rho x fraction can sum to
an ulp above rho when the floats round up. :func:`split_rho` gives each named part
rho x fraction and the remaining part the largest float that keeps the exact sum within rho
(:func:`rest_of`); each release then charges at most its share
(:func:`dpfit.mechanisms.rho_within`). Kept in one place so that it can move to a library
splitter unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..privacy.budget import exact_units

__all__ = ["rest_of", "split_rho"]


def rest_of(total: float, part: float) -> float:
    """The largest float r <= total - part with part + r <= total exactly (the ledger adds
    exactly), so two shares of a budget never sum above it."""
    rest = total - part
    while exact_units(part) + exact_units(rest) > exact_units(total):
        rest = math.nextafter(rest, 0.0)
    return rest


def split_rho(rho: float, fractions: Mapping[str, float], rest: str) -> dict[str, float]:
    """rho x fraction for each part in ``fractions`` and the rest of rho for ``rest``.

    The fractions must sum to less than 1; the parts' exact sum (with the rest) is at most
    ``rho`` (:func:`rest_of`).
    """
    if not sum(fractions.values()) < 1.0 or min(fractions.values(), default=0.0) < 0.0:
        raise ValueError(f"shares must be >= 0 and sum to less than 1, got {dict(fractions)}")
    shares = {name: rho * fraction for name, fraction in fractions.items()}
    exact = sum(exact_units(v) for v in shares.values())
    remaining = rho - math.fsum(shares.values())
    while exact + exact_units(remaining) > exact_units(rho):
        remaining = math.nextafter(remaining, 0.0)
    shares[rest] = remaining
    return shares
