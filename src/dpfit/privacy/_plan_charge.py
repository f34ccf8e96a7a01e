"""A release plan charged as one ledger entry before its first draw, then drawn in order.

:meth:`dpfit.privacy.PrivacyLedger.charge_plan` opens a plan; when the run charges its first
release, the whole plan is spent from the budget at once (one
:class:`~dpfit.privacy.entries.ComposedEntry`), so a plan the budget cannot pay is refused
before any noise is drawn, and an input that cannot be read (checked by the run before its
first release) is refused with nothing charged. From then on, every release the run charges
through :mod:`dpfit.mechanisms` is matched against the plan's next component instead of
being charged again: same label and count, and a cost no larger than planned.
A release that is not the plan's next one is refused before its noise is drawn, so a fit
cannot spend more, or differently, than its plan says. A component reserved for a release
whose sensitivity is set at run time (:class:`~dpfit.privacy.entries.ReservedEntry`) is
replaced by the release drawn, and the budget gets back the difference, exactly.

When the run fails, the components never drawn are returned to the budget and dropped, as
the releases of a fit that fails part-way were never charged before plans existed
(:meth:`dpfit.mechanisms.GaussianReleases.__exit__` gives the argument).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .entries import ComposedEntry, LedgerEntry

if TYPE_CHECKING:
    from .ledger import GaussianEntry, PrivacyLedger
    from .parallel import ParallelComposition, ParallelEntry

__all__ = ["PlanCharge"]


class PlanCharge:
    """An open plan on one ledger (built by :meth:`PrivacyLedger.charge_plan`)."""

    __slots__ = ("_current", "_ledger", "_next", "_planned")

    def __init__(self, ledger: PrivacyLedger, entry: ComposedEntry) -> None:
        self._ledger = ledger
        self._planned = entry
        self._current: ComposedEntry | None = None  # the entry in the ledger, once charged
        self._next = 0  # the next component to be drawn

    @property
    def entry(self) -> ComposedEntry:
        """The composed entry as it stands (drawn components replace their reservations);
        the plan as planned before its first release."""
        return self._planned if self._current is None else self._current

    @property
    def charged(self) -> bool:
        """Whether the plan has been charged (at its first release)."""
        return self._current is not None

    @property
    def drawn(self) -> int:
        """How many of the plan's releases have been drawn (or begun)."""
        return self._next

    def _where(self) -> int:
        """The composed entry's place in the ledger, found by identity (other threads may
        have appended or removed entries since); under the ledger's lock."""
        entries = self._ledger._entries
        return next(i for i in reversed(range(len(entries))) if entries[i] is self._current)

    def _set(self, position: int, part: LedgerEntry | None, units: int) -> None:
        """Replace component ``position`` (None drops it); ``units`` is the change of rho."""
        ledger = self._ledger
        changed = self.entry.replace_component(position, part)
        ledger._entries[self._where()] = changed
        self._current = changed
        ledger._units += units

    def settle(self, entry: GaussianEntry) -> None:
        """Match ``entry``, about to be drawn, to the plan's next release, or raise."""
        composed = self.entry
        if self._next >= len(composed.components):
            self._begin(entry.label)  # raises: a release outside the plan
        planned = composed.components[self._next]
        if (
            entry.label != planned.label
            or entry.count != getattr(planned, "count", 1)
            or entry.relation is not planned.relation
            or entry.rho_units > planned.rho_units
        ):
            raise RuntimeError(
                f"{entry.label}: not the next release of the plan of {composed.label!r} "
                f"(planned: {planned.label}, rho {planned.rho!r}); nothing was drawn"
            )
        ledger = self._ledger
        self._begin(entry.label)
        ledger._owned()
        with ledger._lock:
            self._exchange(planned, entry)  # on a refusal the planned share stays charged
            if entry != planned:  # (a release as planned stays: no new composed entry)
                self._set(self._next, entry, entry.rho_units - planned.rho_units)
            self._next += 1

    def _exchange(self, planned: LedgerEntry, drawn: LedgerEntry) -> None:
        """Give the budget ``planned``'s charge back and take ``drawn``'s, as one step on
        the budget (a refund then a spend would let another thread take the share freed)."""
        budget = self._ledger.budget
        if budget is not None and planned.budget_units != drawn.budget_units:
            budget._exchange(planned.budget_units, drawn.budget_units, label=drawn.label)

    def _begin(self, label: str) -> LedgerEntry:
        """The plan's next component, about to be drawn as ``label`` (the whole plan charged
        at its first); raises when the plan has no next component."""
        composed = self.entry
        if self._next >= len(composed.components):
            raise RuntimeError(
                f"{label}: a release outside the plan of {composed.label!r} (all "
                f"{len(composed.components)} planned releases were made); nothing was drawn"
            )
        if self._current is None:  # the first release: the whole plan, before its draw
            self._ledger._record(composed)
            self._current = composed
        return composed.components[self._next]

    def open_parallel(self, label: str, *, rho_per_block: float) -> ParallelComposition:
        """A parallel composition matched to the plan's next component: a planned
        composition with this label and a per-block cost no smaller; its blocks run the
        planned blocks' releases (:mod:`dpfit.privacy.parallel`), or raise."""
        from .parallel import ParallelComposition

        composed = self.entry
        planned = composed.components[self._next] if self._next < len(composed.components) else None
        cap = getattr(planned, "rho_per_block", None)
        if planned is None or planned.label != label or cap is None or rho_per_block > cap:
            raise RuntimeError(
                f"{label}: a parallel composition that is not the next release of the plan of "
                f"{composed.label!r}; nothing was drawn"
            )
        self._ledger._owned()
        self._begin(label)
        self._next += 1
        return ParallelComposition(
            self._ledger, label=label, rho_per_block=rho_per_block, plan=self, planned=planned
        )

    def settle_parallel(self, planned: ParallelEntry, drawn: ParallelEntry) -> None:
        """Put the composition ``drawn`` in the place of ``planned``; the budget gets the
        difference back exactly (each block was charged at most its planned releases)."""
        ledger = self._ledger
        with ledger._lock:
            position = next(i for i, p in enumerate(self.entry.components) if p is planned)
            self._exchange(planned, drawn)
            self._set(position, drawn, drawn.rho_units - planned.rho_units)

    def return_undrawn(self, entry: GaussianEntry, *, drawn: int) -> bool:
        """Keep ``drawn`` of a drawn component's releases (the rest were never drawn);
        False when ``entry`` is not one of this plan's components."""
        if self._current is None:
            return False
        parts = self.entry.components  # the latest drawn: the plan's component, or equal
        position = next(
            (i for i in reversed(range(self._next)) if parts[i] is entry or parts[i] == entry),
            None,
        )
        if position is None:
            return False
        ledger = self._ledger
        undrawn = entry.count - drawn
        with ledger._lock:
            if ledger.budget is not None:
                ledger.budget._refund(entry.rho_each, count=undrawn, label=entry.label)
            kept = replace(entry, count=drawn) if drawn else None
            self._set(position, kept, (kept.rho_units if kept else 0) - entry.rho_units)
            if kept is None:
                self._next -= 1
        return True

    def close(self, *, failed: bool) -> None:
        """End the plan; after a failure, return the releases never drawn to the budget."""
        ledger = self._ledger
        ledger._close_plan(self)
        if not failed or self._current is None:
            return
        with ledger._lock:
            while len(self.entry.components) > self._next:
                part = self.entry.components[-1]
                if ledger.budget is not None:
                    part._refund(ledger.budget)
                self._set(len(self.entry.components) - 1, None, -part.rho_units)
            if not self.entry.components:
                del ledger._entries[self._where()]

    def __enter__(self) -> PlanCharge:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(failed=exc_type is not None)
