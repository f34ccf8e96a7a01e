"""Budget amounts as integers: shares are never overspent, exactly (no tolerance)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpfit.serve.units import (
    UNITS_PER_RHO,
    charge_units,
    decimal_rho,
    fit_rho,
    total_units,
    units_to_rho,
)


@pytest.mark.parametrize(
    ("charge", "times", "share"), [(0.1, 5, 0.5), (0.1, 3, 0.3), (0.01, 100, 1.0), (0.2, 5, 1.0)]
)
def test_equal_decimal_charges_use_a_share_exactly(charge, times, share):
    """Amounts are the decimals typed: five charges of 0.1 use a share of 0.5 exactly, and
    each fit spends at most the float below its decimal (0.1 as a float exceeds 1/10)."""
    assert times * charge_units(charge) == total_units(share)
    assert Fraction(fit_rho(charge)) * times <= decimal_rho(share)
    assert fit_rho(0.5) == 0.5 and fit_rho(0.1) == math.nextafter(0.1, 0.0)


def test_amounts_round_against_the_analyst():
    assert charge_units(1.5e-12) == 2 and charge_units(1e-13) == 1  # up, at least one unit
    assert total_units(1.5e-12) == 1  # down


@given(st.floats(min_value=1e-9, max_value=1e3), st.floats(min_value=1e-9, max_value=1e3))
def test_what_fits_in_a_share_never_exceeds_it(charge, share):
    # if k charges fit in the share's units, the k fits spend at most the share's decimal
    k = total_units(share) // charge_units(charge)
    if k:
        assert Fraction(k) * Fraction(fit_rho(charge)) <= decimal_rho(share)


def test_units_to_rho_is_the_nearest_float():
    assert units_to_rho(total_units(0.4)) == 0.4
    assert units_to_rho(UNITS_PER_RHO) == 1.0 and math.isclose(units_to_rho(1), 1e-12)
