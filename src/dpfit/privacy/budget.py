"""A privacy budget in rho-zCDP that can only be spent atomically.

A :class:`Budget` is a resource, not a value: it refuses to be copied or pickled, so that
``sklearn.clone`` or ``GridSearchCV`` cannot fork it silently into copies that each spend in
full (STYLE 2.7). Pass it at call time, e.g. ``fit(X, y, budget=b)``. Nothing spent is ever
given back, except releases charged together and never drawn because their fit failed
(:meth:`dpfit.mechanisms.GaussianReleases.__exit__`, ``docs/threat-model.md``).

Sums of charges are exact. Every finite float64 is an integer multiple of 2^-1074, so a sum of
floats is kept as a Python integer in those units (:func:`exact_units`): the same exact value
as a :class:`fractions.Fraction` sum, at a tenth of the cost, and rounded once to float with
Python's correctly rounded integer division. A spend is checked in floating point first and
decided exactly only within a relative 2^-40 of the limit, where float rounding could
matter.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .._validation import check_int, check_positive
from ..exceptions import BudgetExceededError

__all__ = ["RELATIVE_TOLERANCE", "Budget", "exact_units", "units_to_float"]

#: Charges may exceed the total by this relative amount, absorbing float rounding of sums of
#: shares (3 * 0.1 > 0.3 in float64).
RELATIVE_TOLERANCE = 1e-12
_SLACK = 1 + Fraction(RELATIVE_TOLERANCE)
#: 2^1074: one float64 unit in the last place of the smallest subnormal is 1 / _ONE.
_UNIT_BITS = 1074
_ONE = 1 << _UNIT_BITS
#: Relative width of the band around the limit in which a spend is decided exactly. A float
#: check is off by at most a few 2^-53 relative (one rounding of the running sum, one of the
#: addition), far inside this band.
_BAND = 2.0**-40
_INF = math.inf


def exact_units(x: float) -> int:
    """``x * 2**1074`` as an exact integer (every finite float64 is a multiple of 2^-1074)."""
    num, den = x.as_integer_ratio()  # den is a power of two <= 2**1074
    return num << (_UNIT_BITS + 1 - den.bit_length())


def units_to_float(units: int) -> float:
    """The float nearest to ``units * 2**-1074`` (Python's int division rounds correctly)."""
    return units / _ONE


class Budget:
    """A total rho that charges are drawn from.

    Parameters
    ----------
    rho : float
        Total zCDP budget, finite and > 0.

    Examples
    --------
    >>> b = Budget(rho=1.0)
    >>> b.spend(0.25)
    >>> b.remaining
    0.75
    >>> [round(s.total, 6) for s in b.split(3)]
    [0.25, 0.25, 0.25]
    """

    __slots__ = ("_limit", "_never", "_spent", "_spent_units", "_sure", "_total")

    def __init__(self, *, rho: float) -> None:
        self._total = check_positive(rho, "rho")
        self._spent_units = 0  # exact running sum of the charges, in units of 2^-1074
        self._spent = 0.0  # the same sum rounded to float (the fast path's estimate)
        # The exact limit total * (1 + RELATIVE_TOLERANCE) in units, as numerator/denominator.
        limit = Fraction(self._total) * _SLACK * _ONE
        self._limit = (limit.numerator, limit.denominator)
        approx = self._total * (1.0 + RELATIVE_TOLERANCE)
        self._sure = approx * (1.0 - _BAND)  # float sums below: affordable
        self._never = approx * (1.0 + _BAND)  # float sums above: not affordable

    @property
    def total(self) -> float:
        """The budget's total rho."""
        return self._total

    @property
    def spent(self) -> float:
        """The rho spent so far (the exact sum of the charges, rounded once to float)."""
        return self._spent

    @property
    def remaining(self) -> float:
        """The rho still available (never negative)."""
        return max(0.0, self._total - self._spent)

    def can_afford(self, rho: float, *, count: int = 1) -> bool:
        """Whether ``spend(rho, count=count)`` would succeed."""
        total = self._spent + rho * count
        if total < self._sure:
            return True
        if not total <= self._never:  # also NaN
            return False
        return self._fits(exact_units(rho) * count)

    def _fits(self, units: int) -> bool:
        """Exact check: spent + units <= the limit (all in units of 2^-1074)."""
        num, den = self._limit
        return (self._spent_units + units) * den <= num

    def spend(self, rho: float, *, count: int = 1) -> None:
        """Charge ``count`` times ``rho``, exactly; on failure raise
        :class:`BudgetExceededError` and change nothing."""
        if not (type(rho) is float and 0.0 < rho < _INF):  # fast path: a finite float > 0
            rho = check_positive(rho, "rho")
        if type(count) is not int or count < 1:
            count = check_int(count, "count", low=1)
        if not self.can_afford(rho, count=count):
            raise BudgetExceededError(
                f"charge of rho={rho * count:.6g} exceeds the remaining budget "
                f"{self.remaining:.6g} (total {self._total:.6g}); nothing was charged or drawn"
            )
        self._add(exact_units(rho) * count)

    def _refund(self, rho: float, *, count: int, label: str) -> None:
        """Return ``count`` times ``rho``, exactly: releases that were charged, never drawn.

        Only :meth:`dpfit.privacy.PrivacyLedger._return_undrawn` calls this, for a fit that
        failed part-way (``docs/threat-model.md``); ``label`` names the releases.
        """
        units = exact_units(rho) * count
        if not 0 < units <= self._spent_units:
            raise RuntimeError(  # pragma: no cover - internal invariant
                f"{label}: a refund of rho={rho * count:.6g} exceeds what was spent"
            )
        self._add(-units)

    def _add(self, units: int) -> None:
        self._spent_units += units
        self._spent = units_to_float(self._spent_units)

    def split(self, k: int) -> list[Budget]:
        """Spend the whole remaining budget on ``k`` equal child budgets whose totals sum to it."""
        k = check_int(k, "k", low=1)
        rest = self.remaining
        if not rest > 0:
            raise BudgetExceededError("cannot split an exhausted budget")
        share = rest / k
        while math.fsum([share] * k) > rest:  # exact shares: never sum above what was left
            share = math.nextafter(share, 0.0)
        self._add(exact_units(share) * k)
        return [Budget(rho=share) for _ in range(k)]

    @staticmethod
    def open(path, *, dataset: str, rho: float | None = None) -> Budget:
        """A budget that persists in SQLite across processes (:mod:`dpfit.privacy.store`)."""
        from .store import open_budget

        return open_budget(path, dataset=dataset, rho=rho)

    def __repr__(self) -> str:
        return f"Budget(rho={self._total!r}, spent={self.spent!r})"

    def __copy__(self):
        raise TypeError("a Budget cannot be copied: pass the same Budget at call time instead")

    def __deepcopy__(self, memo):
        raise TypeError("a Budget cannot be copied: pass the same Budget at call time instead")

    def __reduce__(self):
        raise TypeError(
            "a Budget cannot be pickled: it is a spendable resource, and a copy in another "
            "process (n_jobs > 1, multiprocessing) would spend the same rho again; share one "
            "across processes with a persistent budget, dpfit.Budget.open(path, dataset=..., "
            "rho=...)"
        )
