"""The ledger an algorithm charges: the caller's (same relation) or a new one with a budget."""

from __future__ import annotations

from typing import Any

from ..exceptions import BudgetExceededError
from ..privacy import Budget, PrivacyLedger, Relation

__all__ = ["prepare_ledger"]


def prepare_ledger(ledger: Any, relation: Relation, rho: float, *, name: str) -> PrivacyLedger:
    """Return the ledger that ``name`` will charge ``rho`` to, or raise before any draw.

    ``None`` gives a new :class:`PrivacyLedger` with a :class:`Budget` of ``rho``. A given
    ledger must be stated under ``relation``; when it has a budget that cannot afford
    ``rho``, :class:`BudgetExceededError` is raised now rather than part-way through a run.
    """
    if ledger is None:
        return PrivacyLedger(relation=relation, budget=Budget(rho=rho))
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    if ledger.relation is not relation:
        raise ValueError(
            f"ledger relation {ledger.relation} does not match relation={relation.value!r}"
        )
    if ledger.budget is not None and not ledger.budget.can_afford(rho):
        raise BudgetExceededError(
            f"{name} needs rho={rho:.6g} but the ledger's budget has "
            f"{ledger.budget.remaining:.6g} left; nothing was charged or drawn"
        )
    return ledger
