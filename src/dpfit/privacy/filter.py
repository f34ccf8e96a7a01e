"""Privacy filters: releases whose costs or count depend on earlier releases, bounded up front.

Adaptive noisy GD (Menart et al. 2024, Alg. 3) picks each noise level from an earlier noisy
release and stops when its budget would run out; KL-Spider (Alg. 1) stops a phase early when
a released estimate is small. The number and cost of their releases are therefore
*data-dependent*. What is guaranteed for every dataset is the filter's bound rho, fixed
before the first release: a fully adaptive zCDP filter that never lets the total exceed rho
(Feldman & Zrnic 2021; Whitehouse et al. 2023) is rho-zCDP, and, as every release is a
Gaussian, sqrt(2 rho)-GDP (Smith & Thakurta 2022, which gives a GDP filter with the same
parameters as non-adaptive composition).

The sum of the costs actually charged, :attr:`FilterEntry.rho_spent`, is reported beside the
bound but is **not a guarantee**: it depends on the data through the stopping rule (an
odometer, Rogers et al. 2016, would be needed to state a guarantee in terms of it). When
every cost and the stop are functions of released values only, as in dpfit's algorithms, it
is post-processing of the transcript and costs no extra privacy.

Use it through :func:`privacy_filter`::

    with privacy_filter(ledger, label="adaptive_gd", rho=rho) as filt:
        gaussian(..., ledger=filt.ledger)   # each release charged inside the filter

Opening spends the whole bound from ``ledger``'s budget at once (before any draw; nothing
changes when it cannot be afforded). The filter's own ledger has a budget of ``rho``, so no
path can charge more. Closing it (also on an exception: draws already made are releases)
records one :class:`FilterEntry` whose ``rho`` is the bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._validation import check_positive
from ._units import entry_units, exact_units, format_rho
from .budget import Budget
from .entries import LedgerEntry
from .relations import Relation, parse_relation

if TYPE_CHECKING:
    from .ledger import PrivacyLedger

__all__ = ["FilterEntry", "PrivacyFilter", "privacy_filter"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FilterEntry(LedgerEntry):
    """Releases budgeted by a fully adaptive zCDP filter: ``rho`` is the filter's bound.

    Parameters
    ----------
    label : str
        Name of the filtered run, e.g. ``"adaptive_gd"``.
    rho_bound : float
        The bound fixed before the first release (finite, > 0): the guarantee.
    entries : tuple of GaussianEntry
        The releases charged inside the filter, in order (data-dependent in number and cost).
    relation : Relation, default=Relation.REPLACE_ONE
        Neighbouring relation of every entry.

    Notes
    -----
    ``rho`` is ``rho_bound`` whatever was charged: the guarantee holds for every dataset only
    at the bound (see the module docstring). ``rho_spent`` is the realised sum, reported for
    information; it is not a privacy guarantee.
    """

    label: str
    rho_bound: float
    entries: tuple[Any, ...] = ()
    relation: Relation = Relation.REPLACE_ONE

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError("label must be a non-empty string")
        bound = check_positive(self.rho_bound, "rho_bound")
        object.__setattr__(self, "rho_bound", bound)
        object.__setattr__(self, "relation", parse_relation(self.relation))
        entries = tuple(self.entries)
        for e in entries:
            if getattr(e, "relation", None) is not self.relation:
                raise ValueError(f"every entry of {self.label!r} must be under {self.relation}")
        object.__setattr__(self, "entries", entries)
        if sum(map(entry_units, entries)) > exact_units(bound):  # exact, as its budget was
            raise ValueError(f"the releases of {self.label!r} cost more than rho_bound={bound!r}")

    @property
    def rho(self) -> float:
        """The guarantee: the filter's bound, whatever the run happened to charge."""
        return self.rho_bound

    @property
    def rho_spent(self) -> float:
        """Realised (data-dependent) sum of the charged costs; **not a guarantee**."""
        return math.fsum(e.rho for e in self.entries)

    @property
    def count(self) -> int:
        """Number of releases made inside the filter."""
        return sum(getattr(e, "count", 1) for e in self.entries)

    @property
    def counts(self) -> Mapping[str, int]:
        """Number of releases per label (for statements)."""
        out: dict[str, int] = {}
        for e in self.entries:
            out[e.label] = out.get(e.label, 0) + getattr(e, "count", 1)
        return out

    @property
    def is_plain_gaussian(self) -> bool:
        """True when every release inside is an un-subsampled Gaussian (GDP filter applies)."""
        return all(e.is_plain_gaussian for e in self.entries)

    @property
    def filtered(self) -> bool:
        """A privacy filter: the exact Gaussian-DP epsilon holds by the GDP filter."""
        return True

    def statement_lines(self) -> tuple[str, ...]:
        """One line: the bound is the guarantee, the spend is not."""
        counts = ", ".join(f"{n} x {label}" for label, n in self.counts.items())
        stds = [e.noise_std for e in self.entries]
        noise = f"; noise std {min(stds):.4g} to {max(stds):.4g}" if stds else ""
        return (
            f"  - {self.label}: privacy filter of bound rho = {format_rho(self.rho)}, fixed "
            "before the "
            f"first release (fully adaptive composition): {self.count} Gaussian release(s) "
            f"({counts or 'none'}){noise}. The guarantee is the bound. Realised spend "
            f"{self.rho_spent:.6g} (data-dependent, not a guarantee; a function of the "
            "released values)",
        )


class PrivacyFilter:
    """An open filter: its :attr:`ledger` takes the run's charges, capped at the bound.

    Built by :func:`privacy_filter`; see the module docstring.
    """

    __slots__ = ("_entry", "_parent", "_template", "ledger")

    def __init__(self, parent: PrivacyLedger, *, label: str, rho: float) -> None:
        from .ledger import PrivacyLedger

        self._template = FilterEntry(label=label, rho_bound=rho, relation=parent.relation)
        if parent.budget is not None:
            parent.budget.spend(self._template.rho_bound)  # atomic, before any draw
        self._parent = parent
        self._entry: FilterEntry | None = None
        #: The ledger every release of the filtered run is charged to (budget = the bound).
        self.ledger = PrivacyLedger(
            relation=parent.relation, budget=Budget(rho=self._template.rho_bound)
        )

    def close(self) -> FilterEntry:
        """Record the filter in the parent ledger (once) and return its entry."""
        if self._entry is None:
            t = self._template
            self._entry = FilterEntry(
                label=t.label, rho_bound=t.rho_bound, entries=self.ledger.entries,
                relation=t.relation,
            )  # fmt: skip
            self._parent._record_reserved(self._entry)
        return self._entry

    def __enter__(self) -> PrivacyFilter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def privacy_filter(ledger: PrivacyLedger, *, label: str, rho: float) -> PrivacyFilter:
    """Open a privacy filter of bound ``rho`` on ``ledger`` (spent from its budget now).

    Raises
    ------
    BudgetExceededError
        ``ledger``'s budget cannot afford ``rho``; nothing changed.
    """
    return PrivacyFilter(ledger, label=label, rho=rho)
