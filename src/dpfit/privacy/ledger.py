"""The privacy ledger: one frozen entry per mechanism use, composed additively in rho-zCDP.

Every random release in dpfit is described by an entry *before* its noise is drawn, in the
spirit of dp_accounting's ``DpEvent``s: an entry fully describes the mechanism (sensitivity,
noise, count, relation), and its rho is derived from them, never typed in by hand.
Releases on disjoint blocks of records compose in parallel (:meth:`PrivacyLedger.parallel`,
recorded as one :class:`~dpfit.privacy.parallel.ParallelEntry` whose rho is the largest
block's). An algorithm obtains the ledger it charges from :func:`prepare_ledger`.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._validation import check_int
from ..exceptions import BudgetExceededError, BudgetProcessError
from .budget import Budget, exact_units, units_to_float
from .conversions import gaussian_epsilon, zcdp_to_approx_dp
from .entries import ComposedEntry, GaussianEntry, LedgerEntry
from .relations import Relation, parse_relation
from .unit_level import PrivacyUnit

if TYPE_CHECKING:
    from ._plan_charge import PlanCharge
    from .parallel import ParallelComposition, ParallelEntry

__all__ = [
    "GaussianEntry",
    "PrivacyLedger",
    "check_affordable",
    "ledger_for",
    "prepare_ledger",
    "require_replace_one",
]



class PrivacyLedger:
    """Append-only record of every charged release, under one neighbouring relation.

    The one exception: releases charged together but never drawn because their fit failed
    are taken out again (:meth:`dpfit.mechanisms.GaussianReleases.__exit__`), so the ledger
    lists exactly the releases that exist.

    Threads and processes: a charge (the budget's spend, the entry and the running total)
    is one step under a lock, so threads sharing a ledger never lose an entry or understate
    its total. Like a :class:`~dpfit.privacy.Budget`, a ledger belongs to the process that
    made it: a forked child's copy (or an unpickled copy in another process) refuses to
    charge with :class:`~dpfit.exceptions.BudgetProcessError`, since what it recorded would
    be invisible to the owner's statement.

    Parameters
    ----------
    relation : Relation or str, default="replace-one"
        The neighbouring relation; every entry must be stated under it.
    budget : Budget, optional
        If given, each charge is also spent from it, atomically: when the budget cannot
        afford a charge, :class:`~dpfit.BudgetExceededError` is raised and neither the budget
        nor the ledger changes.
    unit : PrivacyUnit, optional
        What one "record" of ``relation`` is: None for one row (the default), or a
        :class:`~dpfit.privacy.unit_level.PrivacyUnit` (all rows of one person) whose
        entries' sensitivities bound one unit's contribution.

    Examples
    --------
    >>> ledger = PrivacyLedger()
    >>> ledger.charge(GaussianEntry(label="mean", sensitivity=2.0, noise_std=2.0, count=2))
    >>> ledger.rho
    1.0
    """

    def __init__(
        self,
        *,
        relation: Relation | str = Relation.REPLACE_ONE,
        budget: Budget | None = None,
        unit: PrivacyUnit | None = None,
    ) -> None:
        self._relation = parse_relation(relation)
        if unit is not None and not isinstance(unit, PrivacyUnit):
            raise TypeError(f"unit must be a PrivacyUnit or None, got {type(unit).__name__}")
        self._unit = unit
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(f"budget must be a dpfit.privacy.Budget, got {type(budget).__name__}")
        self._budget = budget
        self._entries: list[LedgerEntry] = []
        self._plans: dict[int, PlanCharge] = {}  # open plans by the thread drawing each
        self._units = 0  # exact running sum of the entries' rho, in units of 2^-1074
        self._lock = threading.Lock()  # a charge's spend, entry and total are one step
        self._pid = os.getpid()  # the owning process; a forked child's copy refuses to charge

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]  # a lock cannot be pickled; the copy gets its own
        state["_plans"] = {}  # an open plan belongs to the run drawing it
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.pop("_plan", None)  # older pickles: an open plan was never kept
        defaults = {"_pid": os.getpid(), "_plans": {}, "_unit": None}  # older pickles
        self.__dict__.update({**defaults, **state})
        self._lock = threading.Lock()

    def _owned(self) -> None:
        """Refuse a process that does not own this ledger (a child after ``os.fork``)."""
        if os.getpid() != self._pid:
            raise BudgetProcessError(
                f"this PrivacyLedger belongs to process {self._pid}, not to this one "
                f"({os.getpid()}, a forked child or a copy): what it charged here would be "
                "invisible to the owner's ledger, so nothing was charged or drawn; create a "
                "PrivacyLedger in this process, and share a budget across processes with a "
                "stored one, dpfit.Budget.open(path, dataset=..., rho=...)"
            )

    @property
    def relation(self) -> Relation:
        """The neighbouring relation of every entry."""
        return self._relation

    @property
    def unit(self) -> PrivacyUnit | None:
        """The privacy unit one neighbouring step changes (None: one row)."""
        return self._unit

    @property
    def budget(self) -> Budget | None:
        """The budget charges are spent from, if any."""
        return self._budget

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The charged entries, in order."""
        return tuple(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def charge(self, entry: LedgerEntry) -> None:
        """Record ``entry`` (and spend its rho from the budget) or raise and change nothing.

        While this thread has a plan open (:meth:`charge_plan`), a Gaussian release is not
        charged again: it is matched to the plan's next release, or refused before it is
        drawn. Other threads sharing the ledger charge as usual.
        """
        if not isinstance(entry, LedgerEntry):  # amplified entries go to privacy.pld
            raise TypeError(
                f"a PrivacyLedger charges ledger entries (GaussianEntry, ...), got "
                f"{type(entry).__name__}; amplified releases are accounted by "
                "dpfit.privacy.PLDLedger"
            )
        if entry.relation is not self._relation:
            raise ValueError(
                f"entry relation {entry.relation} does not match the ledger's {self._relation}"
            )
        if self._plan is not None:
            self._plan.settle(entry)  # type: ignore[arg-type]
            return
        self._record(entry)

    def _record(self, entry: LedgerEntry) -> None:
        """Spend ``entry`` from the budget and append it, as one step (or raise)."""
        self._owned()  # before the lock: a forked child may inherit it held
        with self._lock:
            if self._budget is not None:
                entry._spend(self._budget)
            self._entries.append(entry)
            self._units += entry.rho_units

    def charge_plan(self, entry: ComposedEntry) -> PlanCharge:
        """Open a release plan: the whole plan is charged, as one entry, when its first
        release is drawn; every later release must be the plan's next.

        Use the returned :class:`~dpfit.privacy._plan_charge.PlanCharge` as a context manager
        around the run. The run's data are read and checked before the charge (an input that
        cannot be read is refused with nothing charged); the first release then spends every
        component from the budget at once (or raises
        :class:`~dpfit.BudgetExceededError` and draws nothing). Build ``entry`` with
        :func:`dpfit.mechanisms.plan.charge_plan` from a
        :class:`~dpfit.mechanisms.plan.ReleasePlan`.
        """
        from ._plan_charge import PlanCharge

        if not isinstance(entry, ComposedEntry):
            raise TypeError(f"charge_plan takes a ComposedEntry, got {type(entry).__name__}")
        if entry.relation is not self._relation:
            raise ValueError(
                f"entry relation {entry.relation} does not match the ledger's {self._relation}"
            )
        if self._plan is not None:
            raise RuntimeError(
                "a plan is already open on this ledger in this thread; plans do not nest"
            )
        self._owned()
        plan = PlanCharge(self, entry)
        with self._lock:
            self._plans[threading.get_ident()] = plan
        return plan

    @property
    def _plan(self) -> PlanCharge | None:
        """The plan this thread opened and is drawing, if any. A plan belongs to the thread
        that opened it: other threads sharing the ledger charge their releases as usual."""
        return self._plans.get(threading.get_ident())

    def _close_plan(self, plan: PlanCharge) -> None:
        """Forget ``plan`` (whichever thread closes it)."""
        with self._lock:
            for key in [k for k, v in self._plans.items() if v is plan]:
                del self._plans[key]

    @property
    def releases(self) -> tuple[Any, ...]:
        """Every Gaussian release entry, in order, a composed plan listed by its releases
        (parallel compositions and filters list none: they state themselves)."""
        return tuple(release for entry in self._entries for release in entry.releases())

    def _affords(self, rho: float) -> bool:
        """Whether a run of cost ``rho`` may start: its budget can pay it, or an open plan
        has paid for it (its releases are then matched against the plan)."""
        return self._plan is not None or self._budget is None or self._budget.can_afford(rho)

    def parallel(self, label: str, *, rho_per_block: float) -> ParallelComposition:
        """Open a parallel composition over disjoint blocks of records.

        ``rho_per_block`` is spent from the budget now (atomically, before any draw); each
        block then gets its own ledger that may spend at most that much, and on closing, one
        :class:`~dpfit.privacy.parallel.ParallelEntry` (rho = the largest block's cost) is
        recorded here. See :mod:`dpfit.privacy.parallel` for when this is valid. Inside an
        open plan it must be the plan's next release, which paid for it.
        """
        from .parallel import ParallelComposition

        self._owned()
        if self._plan is not None:
            return self._plan.open_parallel(label, rho_per_block=rho_per_block)
        return ParallelComposition(self, label=label, rho_per_block=rho_per_block)

    def _return_undrawn(self, entry: GaussianEntry, *, drawn: int) -> None:
        """Keep only the first ``drawn`` of ``entry``'s releases; the rest were never drawn.

        For :meth:`dpfit.mechanisms.GaussianReleases.__exit__` (a fit that failed part-way):
        ``entry`` (the object charged) is replaced by the same entry with ``count = drawn``,
        or removed when ``drawn`` is 0, and the undrawn releases' rho, exactly, is returned
        to the budget first (if that fails, nothing changes and the whole charge stays).
        """
        undrawn = entry.count - check_int(drawn, "drawn", low=0, high=entry.count - 1)
        self._owned()
        if self._plan is not None and self._plan.return_undrawn(entry, drawn=drawn):
            return
        with self._lock:
            entries = self._entries
            index = next(i for i in reversed(range(len(entries))) if entries[i] is entry)
            if self._budget is not None:
                self._budget._refund(entry.rho_each, count=undrawn, label=entry.label)
            if drawn:
                entries[index] = replace(entry, count=drawn)
            else:
                del entries[index]
            self._units -= exact_units(entry.rho_each) * undrawn

    def _no_plan(self, label: str) -> None:
        if self._plan is not None:
            raise RuntimeError(
                f"{label}: a privacy filter cannot run inside an open plan, nor a composition "
                "be recorded outside it"
            )

    def _record_reserved(self, entry: ParallelEntry) -> None:
        """Append an entry whose rho was already spent from the budget (parallel composition)."""
        self._no_plan(entry.label)
        if entry.relation is not self._relation:
            raise ValueError(
                f"entry relation {entry.relation} does not match the ledger's {self._relation}"
            )
        self._owned()
        with self._lock:
            self._entries.append(entry)
            self._units += entry.rho_units

    @property
    def rho(self) -> float:
        """Total zCDP cost: the exact sum of the entries' rho, rounded once to float."""
        return units_to_float(self._units)

    @property
    def is_gaussian_only(self) -> bool:
        """Whether every entry is an un-subsampled Gaussian (so exact GDP accounting holds)."""
        return bool(self._entries) and all(e.is_plain_gaussian for e in self._entries)

    def epsilon(self, delta: float, method: str = "cks") -> float:
        """(epsilon, delta)-DP implied by the total rho (CKS by default; see conversions)."""
        if not self._entries:
            return 0.0
        return zcdp_to_approx_dp(self.rho, delta, method=method)

    def gaussian_epsilon(self, delta: float) -> float | None:
        """Exact epsilon of the composed Gaussians (mu = sqrt(2 rho)), or None if not valid."""
        if not self.is_gaussian_only:
            return None
        rho = self.rho  # mu = sqrt(2 rho), without the overflow of 2 rho past 9e307
        return gaussian_epsilon(math.sqrt(2.0) * math.sqrt(rho) if rho > 1e307 else
                                math.sqrt(2.0 * rho), delta)  # fmt: skip

    def statement(self, delta: float = 1e-5) -> str:
        """A short human-readable privacy statement (see :mod:`dpfit.privacy.statement`)."""
        from .statement import privacy_statement

        return privacy_statement(self, delta)

    def __repr__(self) -> str:
        return (
            f"PrivacyLedger(relation={self._relation.value!r}, entries={len(self._entries)}, "
            f"rho={self.rho!r})"
        )


def ledger_for(ledger: Any, relation: Relation | str, rho: float) -> PrivacyLedger:
    """The ledger a run charges: the caller's, stated under ``relation``, or a new one.

    ``None`` gives a new :class:`PrivacyLedger` with a :class:`Budget` of ``rho``. A given
    ledger is checked, not copied: the run's charges are added to what it already holds.
    """
    relation = parse_relation(relation)
    if ledger is None:
        return PrivacyLedger(relation=relation, budget=Budget(rho=rho))
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    if ledger.relation is not relation:
        raise ValueError(
            f"ledger relation {ledger.relation} does not match relation={relation.value!r}"
        )
    return ledger


def check_affordable(ledger: PrivacyLedger, rho: float, *, name: str) -> None:
    """Raise :class:`BudgetExceededError` now, before any draw, if ``ledger`` cannot pay ``rho``.

    A budget that runs out part-way through a run would leave some releases drawn and the
    rest not; checking the whole run's cost first means a refused run draws nothing.
    """
    if not ledger._affords(rho):
        raise BudgetExceededError(
            f"{name} needs rho={rho:.6g} but the ledger's budget has "
            f"{ledger.budget.remaining:.6g} left; nothing was charged or drawn"
        )


def prepare_ledger(
    ledger: Any, relation: Relation | str, rho: float, *, name: str
) -> PrivacyLedger:
    """:func:`ledger_for` then :func:`check_affordable`: the ledger ``name`` will charge ``rho`` to.

    Every algorithm and baseline calls this before its first draw. Algorithms whose cost is
    only known once their entries are built (the two-stage family) call the two steps apart.
    """
    ledger = ledger_for(ledger, relation, rho)
    check_affordable(ledger, rho, name=name)
    return ledger


def require_replace_one(relation: Relation | str, message: str) -> Relation:
    """Parse ``relation`` and raise ``ValueError(message)`` unless it is replace-one.

    Algorithms that divide by a public n, or follow a fixed schedule over the n records, are
    private only under replace-one: adding or removing a record would change n itself.
    """
    relation = parse_relation(relation)
    if relation is not Relation.REPLACE_ONE:
        raise ValueError(message)
    return relation
