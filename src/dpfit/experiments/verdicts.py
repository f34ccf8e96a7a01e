"""Claim verdicts: evaluate each claim of an experiment on its results, never hiding a failure.

A claim evaluated at a scale it does not list is "NOT EVALUATED" (at this scale); a claim
whose ``evaluate`` raises or returns something other than a :class:`ClaimResult` is "ERROR",
which counts as a failure just like "FAIL". A claim that asserts a deviation from the paper
(``Claim.deviation``) and holds is "DEVIATION", shown as "deviation (asserted)": it is not a
failure of the run (we measured what we said we would), and it is never counted as PASS
(the paper's statement did not hold).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from .registry import ClaimResult, Experiment

__all__ = ["FAILING", "STATUSES", "Verdict", "count", "evaluate_claims", "format_number"]

#: Every verdict status, in display order.
STATUSES = ("PASS", "DEVIATION", "FAIL", "ERROR", "NOT EVALUATED")
_LABELS = {"NOT EVALUATED": "not evaluated at this scale", "DEVIATION": "deviation (asserted)"}
#: Statuses that make a run fail.
FAILING = ("FAIL", "ERROR")


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The outcome of one claim of one experiment at one scale."""

    experiment: str
    claim: str
    statement: str
    status: str
    numbers: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""
    paper: str = ""

    @property
    def failed(self) -> bool:
        """True for FAIL and ERROR."""
        return self.status in FAILING

    @property
    def label(self) -> str:
        """The status as shown in reports ("not evaluated at this scale", "deviation
        (asserted)" spelled out)."""
        return _LABELS.get(self.status, self.status)


def format_number(value: float) -> str:
    """Four significant digits; integers without a decimal point."""
    value = float(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def _one(exp: Experiment, claim, results: pd.DataFrame, scale: str) -> Verdict:
    base = {
        "experiment": exp.name,
        "claim": claim.name,
        "statement": claim.statement,
        "paper": claim.paper,
    }
    if scale not in claim.scales:
        return Verdict(**base, status="NOT EVALUATED", detail=f"evaluated at {list(claim.scales)}")
    try:
        outcome = claim.evaluate(results)
        if not isinstance(outcome, ClaimResult):
            raise TypeError(f"evaluate returned {type(outcome).__name__}, not a ClaimResult")
        numbers = {str(k): float(v) for k, v in dict(outcome.numbers).items()}
    except Exception as exc:  # a broken claim is reported, not hidden
        return Verdict(**base, status="ERROR", detail=f"{type(exc).__name__}: {exc}")
    status = "FAIL"
    if bool(outcome.passed):
        status = "DEVIATION" if claim.deviation else "PASS"
    return Verdict(**base, status=status, numbers=numbers, detail=outcome.detail)


def evaluate_claims(exp: Experiment, results: pd.DataFrame, scale: str) -> list[Verdict]:
    """One :class:`Verdict` per claim of ``exp``, in declaration order."""
    return [_one(exp, claim, results, scale) for claim in exp.claims]


def count(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """Number of verdicts of each status (every status present, possibly 0)."""
    return {s: sum(v.status == s for v in verdicts) for s in STATUSES}
