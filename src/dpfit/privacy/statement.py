"""Plain-text privacy statements, in the spirit of TF Privacy's ``compute_dp_sgd_privacy``.

A statement names the unit and relation, the mechanisms and their calibration, the total
rho, epsilon at the stated delta with the conversion used, and the assumptions.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from .._validation import check_delta
from ._units import format_rho

if TYPE_CHECKING:
    from .ledger import PrivacyLedger

__all__ = ["format_rho", "privacy_statement"]

_RELATION_TEXT = {
    "replace-one": "datasets of the same public size n that differ in one record (replace-one)",
    "add-remove": "datasets that differ by adding or removing one record (add/remove)",
}


_UNIT_TEXT = {
    "replace-one": "datasets of the same public number of units that differ in all rows of one "
    "unit (replace-one unit)",
    "add-remove": "datasets that differ by adding or removing all rows of one unit "
    "(add/remove unit)",
}


def privacy_statement(ledger: PrivacyLedger, delta: float = 1e-5) -> str:
    """Describe ``ledger``'s guarantee in a few sentences; uses only public, charged values."""
    delta = check_delta(delta)
    if not len(ledger):
        return "No private release was made (the ledger is empty)."
    groups: dict[tuple, int] = defaultdict(int)
    own_lines = []
    for e in ledger:
        own_lines.extend(e.statement_lines())
        for g in e.releases():
            groups[(g.label, g.sensitivity, g.noise_std, g.subsampled)] += g.count
    relation = _RELATION_TEXT[ledger.relation.value]
    if ledger.unit is not None:
        relation = f"{_UNIT_TEXT[ledger.relation.value]}; {ledger.unit.describe()}"
    lines = [
        f"Privacy: {format_rho(ledger.rho)}-zCDP with respect to {relation}.",
        "Mechanisms (all charged before their noise was drawn):",
    ]
    for (label, sens, std, sub), count in groups.items():
        extra = ", subsampled (no amplification claimed)" if sub else ""
        lines.append(
            f"  - {label}: {count} Gaussian release(s), L2 sensitivity {sens:.4g}, "
            f"noise std {std:.4g}{extra}"
        )
    lines.extend(own_lines)
    lines.append(
        f"Implies ({ledger.epsilon(delta):.4g}, {delta:.3g})-DP by the optimal zCDP conversion "
        "of Canonne, Kamath and Steinke (2020)."
    )
    exact = ledger.gaussian_epsilon(delta)
    if exact is not None:
        filtered = any(e.filtered for e in ledger)
        lines.append(
            f"All releases are un-subsampled Gaussians, so the exact Gaussian-DP curve gives "
            f"({exact:.4g}, {delta:.3g})-DP"
            + (
                " (for a privacy filter by the Gaussian-DP filter of Smith and Thakurta 2022)."
                if filtered
                else "."
            )
        )
    lines.append(
        "Every released quantity (and anything computed from them) is covered; the "
        "hyperparameters are assumed public and not chosen on this data."
    )
    return "\n".join(lines)
