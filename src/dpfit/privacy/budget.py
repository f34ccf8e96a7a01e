"""A privacy budget in rho-zCDP that can only be spent atomically.

A :class:`Budget` is a resource, not a value: it refuses to be copied or pickled, so that
``sklearn.clone`` or ``GridSearchCV`` cannot fork it silently into copies that each spend in
full (STYLE 2.7). Pass it at call time, e.g. ``fit(X, y, budget=b)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .._validation import check_int, check_positive
from ..exceptions import BudgetExceededError

__all__ = ["RELATIVE_TOLERANCE", "Budget"]

#: Charges may exceed the total by this relative amount, absorbing float rounding of sums of
#: shares (3 * 0.1 > 0.3 in float64; reliability pitfall P10).
RELATIVE_TOLERANCE = 1e-12
_SLACK = 1 + Fraction(RELATIVE_TOLERANCE)


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

    __slots__ = ("_spent", "_total")

    def __init__(self, *, rho: float) -> None:
        self._total = check_positive(rho, "rho")
        self._spent = Fraction(0)  # exact running sum of the charges (O(1) per charge)

    @property
    def total(self) -> float:
        """The budget's total rho."""
        return self._total

    @property
    def spent(self) -> float:
        """The rho spent so far (the exact sum of the charges, rounded once to float)."""
        return float(self._spent)

    @property
    def remaining(self) -> float:
        """The rho still available (never negative)."""
        return max(0.0, self._total - self.spent)

    def can_afford(self, rho: float) -> bool:
        """Whether ``spend(rho)`` would succeed."""
        return self._spent + Fraction(rho) <= Fraction(self._total) * _SLACK

    def spend(self, rho: float) -> None:
        """Charge ``rho``; on failure raise :class:`BudgetExceededError` and change nothing."""
        rho = check_positive(rho, "rho")
        if not self.can_afford(rho):
            raise BudgetExceededError(
                f"charge of rho={rho:.6g} exceeds the remaining budget {self.remaining:.6g} "
                f"(total {self._total:.6g}); nothing was charged or drawn"
            )
        self._spent += Fraction(rho)

    def split(self, k: int) -> list[Budget]:
        """Spend the whole remaining budget on ``k`` equal child budgets whose totals sum to it."""
        k = check_int(k, "k", low=1)
        rest = self.remaining
        if not rest > 0:
            raise BudgetExceededError("cannot split an exhausted budget")
        share = rest / k
        while math.fsum([share] * k) > rest:  # exact shares: never sum above what was left
            share = math.nextafter(share, 0.0)
        self._spent += Fraction(share) * k
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
