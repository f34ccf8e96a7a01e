"""rho as an exact integer number of units of 10^-12, the form the service's database stores.

Charges, shares and totals are integers, so "the charges never exceed the share" is an exact
integer comparison on every backend, whatever the order in which concurrent requests commit.

A float rho is rarely a whole number of units (``0.1`` is 0.1000000000000000055... and
``0.3`` is 0.2999999999999999888...), so amounts are rounded against the analyst only beyond
a relative 2^-41: a charge is rounded up from rho (1 - 2^-41) (:func:`charge_units`), a total
or share down from rho (1 + 2^-41) (:func:`total_units`). Five charges of 0.1 then exactly
use a share of 0.5, and three a total of 0.3, while the service can spend at most a relative
2^-40 (about 9e-13) more than granted. (A :class:`dpfit.Budget` itself allows nothing for
rounding: its limit is exact, and each fit the service runs spends at most its own rho.)
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["UNITS_PER_RHO", "charge_units", "total_units", "units_to_rho"]

#: Units per unit of rho: amounts are stored to 10^-12, far below any meaningful rho.
UNITS_PER_RHO = 10**12
#: Relative slack of each rounding (see the module docstring).
_SLACK = Fraction(1, 2**41)


def charge_units(rho: float) -> int:
    """The units a charge of ``rho`` costs: rho (1 - 2^-41) rounded up, at least one."""
    return max(1, math.ceil(Fraction(rho) * (1 - _SLACK) * UNITS_PER_RHO))


def total_units(rho: float) -> int:
    """The units a total or share of ``rho`` grants: rho (1 + 2^-41) rounded down."""
    return math.floor(Fraction(rho) * (1 + _SLACK) * UNITS_PER_RHO)


def units_to_rho(units: int) -> float:
    """The float nearest to ``units`` x 10^-12 (Python's integer division rounds correctly)."""
    return units / UNITS_PER_RHO
