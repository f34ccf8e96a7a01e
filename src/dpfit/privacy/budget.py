"""A privacy budget in rho-zCDP that can only be spent atomically, by its own process.

A :class:`Budget` is a resource, not a value: it refuses to be copied or pickled, so that
``sklearn.clone`` or ``GridSearchCV`` cannot fork it silently into copies that each spend in
full (docs/privacy.md, "Ledgers, budgets and statements"). Pass it at call time, e.g.
``fit(X, y, budget=b)``. Nothing spent is ever given back, except releases charged together
and never drawn because their fit failed
(:meth:`dpfit.mechanisms.GaussianReleases.__exit__`, ``docs/threat-model.md``).

The limit is exact: a spend succeeds only when the exact sum of the charges, a Python
integer in units of 2^-1074 (:mod:`dpfit.privacy._units`), is at most the total, with no
tolerance for rounding. Shares of a budget therefore come from :func:`dpfit.privacy.split`,
whose shares sum to at most the whole exactly. A spend is checked in floating point first and
decided exactly only within a relative 2^-40 of the limit, where float rounding could matter.

Threads and processes: the check and the addition run under a lock, so threads racing to
spend never overspend. A budget belongs to the process that made it: after ``os.fork`` the
child's copy refuses every spend (:class:`~dpfit.exceptions.BudgetProcessError`), because
what the child spent would be invisible to the parent, and a persistent budget
(``Budget.open``, :mod:`dpfit.privacy.store`) is the one that processes share.
"""

from __future__ import annotations

import math
import os
import threading

from .._validation import check_int, check_positive
from ..exceptions import BudgetExceededError, BudgetProcessError
from ._units import exact_units, float_at_most, format_left, format_rho, units_to_float
from .shares import split

__all__ = ["Budget", "exact_units", "units_to_float"]

#: Relative width of the band around the limit in which a spend is decided exactly. A float
#: check is off by at most a few 2^-53 relative (one rounding of the running sum, one of the
#: addition), far inside this band.
_BAND = 2.0**-40
_INF = math.inf


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

    __slots__ = ("_limit", "_lock", "_never", "_pid", "_spent", "_spent_units", "_sure", "_total")

    def __init__(self, *, rho: float) -> None:
        self._total = check_positive(rho, "rho")
        self._spent_units = 0  # exact running sum of the charges, in units of 2^-1074
        self._spent = 0.0  # the same sum rounded to float (the fast path's estimate)
        self._limit = exact_units(self._total)  # the exact limit: no tolerance
        self._sure = self._total * (1.0 - _BAND)  # float sums below: affordable
        self._never = self._total * (1.0 + _BAND)  # float sums above: not affordable
        self._lock = threading.Lock()  # check-then-add is one step for racing threads
        self._pid = os.getpid()  # the owning process; a forked child's copy refuses to spend

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
        """The rho still available (never negative): the largest float not above what is
        exactly left, so ``spend(remaining)`` always succeeds."""
        return max(0.0, float_at_most(self._limit - self._spent_units))

    def can_afford(self, rho: float, *, count: int = 1) -> bool:
        """Whether ``spend(rho, count=count)`` would succeed."""
        total = self._spent + rho * count
        if total < self._sure:
            return True
        if not total <= self._never:  # also NaN
            return False
        return self._spent_units + exact_units(rho) * count <= self._limit

    def _owned(self) -> None:
        """Refuse a process that does not own this budget (a child after ``os.fork``)."""
        if os.getpid() != self._pid:
            raise BudgetProcessError(
                f"this Budget belongs to process {self._pid}, not to this one ({os.getpid()}, "
                "a forked child): what a child spends from an in-memory budget is invisible "
                "to its parent, so nothing was charged or drawn; share a budget across "
                "processes with a stored one, dpfit.Budget.open(path, dataset=..., rho=...)"
            )

    def spend(self, rho: float, *, count: int = 1) -> None:
        """Charge ``count`` times ``rho``, exactly; on failure raise
        :class:`BudgetExceededError` and change nothing.

        Raises
        ------
        BudgetExceededError
            The charges would sum above the total, exactly; nothing was charged.
        BudgetProcessError
            This process is not the budget's (a forked child); nothing was charged.
        """
        if not (type(rho) is float and 0.0 < rho < _INF):  # fast path: a finite float > 0
            rho = check_positive(rho, "rho")
        if type(count) is not int or count < 1:
            count = check_int(count, "count", low=1)
        self._owned()  # before the lock: a forked child may inherit it held
        with self._lock:
            if not self.can_afford(rho, count=count):
                raise BudgetExceededError(
                    f"charge of rho={format_rho(rho * count)} exceeds the remaining budget "
                    f"{format_left(self.remaining, self._total, charge=rho * count)} (total "
                    f"{format_rho(self._total)}); nothing was charged or drawn"
                )
            self._add(exact_units(rho) * count)

    def _refund(self, rho: float, *, count: int, label: str) -> None:
        """Return ``count`` times ``rho``, exactly: releases that were charged, never drawn.

        Only :meth:`dpfit.privacy.PrivacyLedger._return_undrawn` calls this, for a fit that
        failed part-way (``docs/threat-model.md``); ``label`` names the releases.
        """
        units = exact_units(rho) * count
        self._owned()
        with self._lock:
            if not 0 < units <= self._spent_units:
                raise RuntimeError(  # pragma: no cover - internal invariant
                    f"{label}: a refund of rho={rho * count:.6g} exceeds what was spent"
                )
            self._add(-units)

    def _exchange(self, back: int, take: int, *, label: str) -> None:
        """Return ``back`` units (charged, never drawn) and spend ``take`` units, as one
        step: a release plan replacing a planned release with the cheaper one drawn
        (:class:`dpfit.privacy._plan_charge.PlanCharge`). Done as a refund then a spend,
        another thread could take the freed share in between and fail a fit whose plan had
        paid; on a refusal nothing changes.
        """
        self._owned()
        with self._lock:
            if not 0 <= back <= self._spent_units:
                raise RuntimeError(  # pragma: no cover - internal invariant
                    f"{label}: a refund of rho={units_to_float(back):.6g} exceeds what was spent"
                )
            if self._spent_units - back + take > self._limit:
                raise BudgetExceededError(
                    f"{label}: charge of rho={format_rho(units_to_float(take))} exceeds the "
                    f"remaining budget (total {format_rho(self._total)}); nothing was drawn"
                )
            self._add(take - back)

    def _add(self, units: int) -> None:
        self._spent_units += units
        self._spent = units_to_float(self._spent_units)

    def split(self, k: int) -> list[Budget]:
        """Spend the whole remaining budget on ``k`` equal child budgets whose totals sum to
        it at most, exactly (:func:`dpfit.privacy.split`)."""
        k = check_int(k, "k", low=1)
        self._owned()
        with self._lock:
            rest = float_at_most(self._limit - self._spent_units)  # never above what is left
            if not rest > 0:
                raise BudgetExceededError("cannot split an exhausted budget")
            shares = split(rest, k)
            self._add(exact_units(shares[0]) * k)
        return [Budget(rho=share) for share in shares]

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
