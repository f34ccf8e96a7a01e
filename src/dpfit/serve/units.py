"""rho as an exact integer number of units of 10^-12, the form the service's database stores.

Charges, shares and totals are integers, so "the charges never exceed the share" is an exact
integer comparison on every backend, whatever the order in which concurrent requests commit.

People type rho as a decimal ("0.1", "0.3"), and a float is rarely that decimal (``0.1`` is
0.1000000000000000055..., ``0.3`` is 0.2999999999999999888...). The service therefore reads
every amount as the shortest decimal that the float prints as (:func:`decimal_rho`), which
is what the steward and the analyst typed, and keeps it exactly: a charge is rounded up to
whole units (:func:`charge_units`), a total or share down (:func:`total_units`), and the fit
may spend at most the largest float not above the decimal it was charged (:func:`fit_rho`).
Five charges of 0.1 then use a share of 0.5 exactly, and the service never spends more than
it granted, with no tolerance, as a :class:`dpfit.Budget` never does.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["UNITS_PER_RHO", "charge_units", "decimal_rho", "fit_rho", "total_units", "units_to_rho"]

#: Units per unit of rho: amounts are stored to 10^-12, far below any meaningful rho.
UNITS_PER_RHO = 10**12

def decimal_rho(rho: float) -> Fraction:
    """The decimal ``rho`` stands for: the shortest one that reads back as this float."""
    return Fraction(repr(float(rho)))


def fit_rho(rho: float) -> float:
    """The rho a fit charged ``rho`` may spend: the largest float not above its decimal."""
    exact = decimal_rho(rho)
    value = float(exact)
    return math.nextafter(value, 0.0) if Fraction(value) > exact else value


def charge_units(rho: float) -> int:
    """The units a charge of ``rho`` costs: its decimal rounded up, at least one unit."""
    return max(1, math.ceil(decimal_rho(rho) * UNITS_PER_RHO))


def total_units(rho: float) -> int:
    """The units a total or share of ``rho`` grants: its decimal rounded down."""
    return math.floor(decimal_rho(rho) * UNITS_PER_RHO)


def units_to_rho(units: int) -> float:
    """The float nearest to ``units`` x 10^-12 (Python's integer division rounds correctly)."""
    return units / UNITS_PER_RHO
