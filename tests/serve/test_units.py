"""Budget amounts as integers: shares are used exactly, never overspent beyond 2^-40."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpfit.serve.units import UNITS_PER_RHO, charge_units, total_units, units_to_rho


@pytest.mark.parametrize(
    ("charge", "times", "share"), [(0.1, 5, 0.5), (0.1, 3, 0.3), (0.01, 100, 1.0), (0.2, 5, 1.0)]
)
def test_equal_charges_use_a_share_exactly(charge, times, share):
    assert times * charge_units(charge) == total_units(share)


def test_amounts_round_against_the_analyst():
    assert charge_units(1.5e-12) == 2 and charge_units(1e-13) == 1  # up, at least one unit
    assert total_units(1.5e-12) == 1  # down


@given(st.floats(min_value=1e-9, max_value=1e3), st.floats(min_value=1e-9, max_value=1e3))
def test_what_fits_in_a_share_never_exceeds_it_beyond_2_to_the_minus_40(charge, share):
    # if k charges fit in the share's units, k * rho <= share * (1 + 2^-40) (units.py)
    k = total_units(share) // charge_units(charge)
    if k:
        assert Fraction(k) * Fraction(charge) <= Fraction(share) * (1 + Fraction(1, 2**40))


def test_units_to_rho_is_the_nearest_float():
    assert units_to_rho(total_units(0.4)) == 0.4
    assert units_to_rho(UNITS_PER_RHO) == 1.0 and math.isclose(units_to_rho(1), 1e-12)
