"""Exact sums of float64 charges: every finite float64 is an integer multiple of 2^-1074.

A sum of floats is kept as a Python integer in units of 2^-1074 (:func:`exact_units`): the
same exact value as a :class:`fractions.Fraction` sum, at a tenth of the cost, and rounded
once to float with Python's correctly rounded integer division (:func:`units_to_float`), or
in the direction that never understates (:func:`float_at_least`) or never overstates
(:func:`float_at_most`) what the units hold. :func:`format_rho` shows a rho without hiding
that it lies just above a round number; :func:`format_left` shows a remaining budget, with a
rounding residue read as 0.
"""

from __future__ import annotations

import math

__all__ = [
    "ONE",
    "entry_units",
    "exact_units",
    "float_at_least",
    "float_at_most",
    "format_left",
    "format_rho",
    "units_to_float",
]

#: 2^1074: one float64 unit in the last place of the smallest subnormal is 1 / ONE.
_UNIT_BITS = 1074
ONE = 1 << _UNIT_BITS
#: A value within this relative distance of its short text, but not equal to it, is shown in
#: full: a rho of 1 + 9e-13 must never read as "1".
_HIDDEN = 1e-9
#: A remaining budget at most this fraction of its total reads as 0 in messages: what the
#: float rounding of shares leaves (a split budget spent in full leaves about 1e-16).
_RESIDUE = 1e-12


def exact_units(x: float) -> int:
    """``x * 2**1074`` as an exact integer (every finite float64 is a multiple of 2^-1074)."""
    num, den = x.as_integer_ratio()  # den is a power of two <= 2**1074
    return num << (_UNIT_BITS + 1 - den.bit_length())


def units_to_float(units: int) -> float:
    """The float nearest to ``units * 2**-1074`` (Python's int division rounds correctly)."""
    return units / ONE


def float_at_most(units: int) -> float:
    """The largest float not above ``units`` * 2^-1074."""
    value = units_to_float(units)
    return math.nextafter(value, -math.inf) if exact_units(value) > units else value


def float_at_least(units: int) -> float:
    """The smallest float not below ``units`` * 2^-1074."""
    value = units_to_float(units)
    return math.nextafter(value, math.inf) if exact_units(value) < units else value


def entry_units(entry: object) -> int:
    """A ledger entry's rho exactly, in units: its ``rho_units`` where it keeps them (a
    counted Gaussian entry's rho is rounded once), else its float ``rho``."""
    units = getattr(entry, "rho_units", None)
    return exact_units(entry.rho) if units is None else units  # type: ignore[attr-defined]


def format_rho(rho: float, digits: int = 6) -> str:
    """``rho`` to ``digits`` significant digits, or in full where those would hide that it
    lies just above the short value.

    A short text that understates rho by less than a relative 1e-9 (the rounding of a
    composed total, or a charge just over a round budget) would read as that round number;
    it is then printed in full (Python's shortest repr that reads back as the same float).
    A short text at or above rho (rounding up overstates the loss) is kept.
    """
    text = f"{rho:.{digits}g}"
    shown = float(text)
    if shown < rho and rho - shown <= _HIDDEN * rho:
        return repr(float(rho))
    return text


def format_left(left: float, total: float, digits: int = 6, *, charge: float | None = None) -> str:
    """A remaining budget ``left`` of ``total`` for a message: ``"0"`` when it is at most
    1e-12 of the total (the float rounding of shares: a split budget spent in full leaves
    about 1e-16), else :func:`format_rho`, in full where the short text would not read as
    less than a refused ``charge`` (0.049999999999999996 left, not "0.05", refuses 0.05).
    Display only: the accounting keeps the exact value."""
    if 0.0 <= left <= _RESIDUE * total:
        return "0"
    text = format_rho(left, digits)
    return repr(float(left)) if charge is not None and float(text) >= charge else text
