"""The common type of ledger entries, and the entry of a release plan charged as one.

Every entry a :class:`~dpfit.privacy.PrivacyLedger` holds is a :class:`LedgerEntry`: a
frozen description of one or more releases whose zCDP cost is derived from them. Code that
reads a ledger asks an entry what it is through these methods (its cost, whether exact
Gaussian-DP accounting applies, the Gaussian releases it lists, its own statement line)
rather than testing its class, so a new kind of entry is one new subclass (the recipe is in
``docs/architecture.md``, "Release plans"):

* :class:`~dpfit.privacy.GaussianEntry`: ``count`` Gaussian releases of one query;
* :class:`ComposedEntry`: the releases of one plan, charged together before the first is
  drawn (:meth:`dpfit.privacy.PrivacyLedger.charge_plan`); zCDP composes additively
  (Bun & Steinke 2016, Lemma 2.3), so its rho is the exact sum of its components';
* :class:`ReservedEntry`: a planned release whose sensitivity is set at run time from
  earlier releases (its share of rho is fixed in advance); replaced by the Gaussian entry
  actually drawn, which costs at most the share;
* :class:`~dpfit.privacy.ParallelEntry` and :class:`~dpfit.privacy.FilterEntry`: parallel
  composition and privacy filters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._validation import check_int, check_positive
from ._units import exact_units, units_to_float
from .relations import Relation, parse_relation

if TYPE_CHECKING:
    from .budget import Budget

__all__ = ["ComposedEntry", "GaussianEntry", "LedgerEntry", "ReservedEntry"]

_INF = math.inf


class LedgerEntry:
    """What every ledger entry answers (subclasses are frozen dataclasses).

    Subclasses define ``label``, ``relation``, :attr:`rho` and :attr:`is_plain_gaussian`;
    the defaults below are those of an entry charged as one amount.
    """

    __slots__ = ()
    label: str
    relation: Relation

    @property
    def rho(self) -> float:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    @property
    def rho_units(self) -> int:
        """:attr:`rho` exactly, in units of 2^-1074 (what ledgers and budgets add up)."""
        return exact_units(self.rho)

    @property
    def is_plain_gaussian(self) -> bool:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def releases(self) -> tuple[Any, ...]:
        """The Gaussian entries a privacy statement lists one by one (grouped by label,
        sensitivity and noise); () for an entry that states itself (:meth:`statement_lines`)."""
        return ()

    @property
    def filtered(self) -> bool:
        """Whether this is a privacy filter (its exact epsilon is the GDP filter's)."""
        return False

    def statement_lines(self) -> tuple[str, ...]:
        """This entry's own lines of a privacy statement; () when its releases are listed
        (:meth:`releases`)."""
        return ()

    @property
    def budget_units(self) -> int:
        """What :meth:`_spend` takes from a budget, exactly (units of 2^-1074): never less
        than :attr:`rho_units`, so a budget cannot accept more than its total."""
        return exact_units(self.rho)

    def _spend(self, budget: Budget) -> None:
        """Spend this entry's cost from ``budget`` (exactly), or raise and spend nothing."""
        budget.spend(self.rho)

    def _refund(self, budget: Budget) -> None:
        """Return this entry's cost to ``budget``: it was charged and never drawn."""
        budget._refund(self.rho, count=1, label=self.label)


@dataclass(frozen=True, slots=True, kw_only=True)
class GaussianEntry(LedgerEntry):
    """``count`` releases of a query with L2 sensitivity ``sensitivity`` plus N(0, noise_std^2 I).

    Parameters
    ----------
    label : str
        What was released, e.g. ``"dp_gd/gradient"``.
    sensitivity : float
        L2 sensitivity of the query under ``relation`` (finite, > 0).
    noise_std : float
        Absolute standard deviation of each noise coordinate (finite, > 0).
    count : int, default=1
        Number of adaptive releases with these parameters.
    relation : Relation, default=Relation.REPLACE_ONE
        Neighbouring relation under which ``sensitivity`` holds.
    subsampled : bool, default=False
        Whether the query runs on a random subsample. dpfit never claims zCDP amplification
        by subsampling (``docs/privacy.md``), so this only switches off the exact GDP epsilon.

    Notes
    -----
    The Gaussian mechanism is rho = Delta^2 / (2 sigma^2)-zCDP (Bun & Steinke 2016, Prop. 1.6),
    and zCDP composes additively, so the entry's rho is ``count`` times that: one entry with
    ``count = T`` costs exactly what T entries with ``count = 1`` cost, in the ledger and in
    its budget (both keep exact sums), hence gives the same statement and epsilon.
    """

    label: str
    sensitivity: float
    noise_std: float
    count: int = 1
    relation: Relation = Relation.REPLACE_ONE
    subsampled: bool = False
    #: rho of one release, Delta^2 / (2 sigma^2) in float64 (derived, not compared).
    rho_each: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if type(self.label) is not str or not self.label:
            raise TypeError("label must be a non-empty string")
        sens, std = self.sensitivity, self.noise_std
        # Fast path for plain finite positive floats; anything else goes through the checks.
        if not (type(sens) is float and 0.0 < sens < _INF):
            sens = check_positive(sens, "sensitivity")
            object.__setattr__(self, "sensitivity", sens)
        if not (type(std) is float and 0.0 < std < _INF):
            std = check_positive(std, "noise_std")
            object.__setattr__(self, "noise_std", std)
        if type(self.count) is not int or self.count < 1:
            object.__setattr__(self, "count", check_int(self.count, "count", low=1))
        if type(self.relation) is not Relation:
            object.__setattr__(self, "relation", parse_relation(self.relation))
        if type(self.subsampled) is not bool:
            raise TypeError("subsampled must be a bool")
        ratio = sens / std  # divide first: no overflow of the squares
        rho_each = ratio * ratio / 2.0
        if not rho_each * self.count < _INF:
            raise ValueError("noise scale not finite: sensitivity / noise_std overflows")
        object.__setattr__(self, "rho_each", rho_each)

    @property
    def noise_multiplier(self) -> float:
        """noise_std / sensitivity (dimensionless)."""
        return self.noise_std / self.sensitivity

    @property
    def rho(self) -> float:
        """zCDP cost of all ``count`` releases: count * Delta^2 / (2 sigma^2), the exact
        product of ``count`` and :attr:`rho_each` rounded once."""
        if self.count == 1:
            return self.rho_each
        return units_to_float(self.rho_units)

    @property
    def rho_units(self) -> int:
        """:attr:`rho` exactly, in units of 2^-1074 (what the ledger and budget add up)."""
        return exact_units(self.rho_each) * self.count

    @property
    def is_plain_gaussian(self) -> bool:
        """True when exact Gaussian-DP accounting applies (un-subsampled Gaussian)."""
        return not self.subsampled

    def releases(self) -> tuple[GaussianEntry, ...]:
        return (self,)

    @property
    def budget_units(self) -> int:
        return self.rho_units

    def _spend(self, budget: Budget) -> None:
        budget.spend(self.rho_each, count=self.count)

    def _refund(self, budget: Budget) -> None:
        budget._refund(self.rho_each, count=self.count, label=self.label)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReservedEntry(LedgerEntry):
    """A planned release's share of rho, charged before its sensitivity is known.

    ``count`` releases of the query ``label`` whose per-record bound is set at run time
    from earlier releases; the whole share ``rho`` is charged with the plan. When the
    release is drawn the ledger replaces this entry with the Gaussian entry drawn, which
    costs at most ``rho`` (its noise is calibrated to the share), and returns the difference
    to the budget. A reserved release never drawn stays charged at its share.
    """

    label: str
    share: float
    count: int = 1
    relation: Relation = Relation.REPLACE_ONE

    def __post_init__(self) -> None:
        if type(self.label) is not str or not self.label:
            raise TypeError("label must be a non-empty string")
        object.__setattr__(self, "share", check_positive(self.share, "share"))
        object.__setattr__(self, "count", check_int(self.count, "count", low=1))
        object.__setattr__(self, "relation", parse_relation(self.relation))

    @property
    def rho(self) -> float:
        return self.share

    @property
    def is_plain_gaussian(self) -> bool:
        """A share reserved for Gaussian releases: exact Gaussian-DP accounting still holds
        (its mu = sqrt(2 share) bounds the releases it would make)."""
        return True

    def statement_lines(self) -> tuple[str, ...]:
        return (
            f"  - {self.label}: rho {self.share:.4g} reserved for {self.count} planned Gaussian "
            "release(s) that were not drawn (charged all the same)",
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ComposedEntry(LedgerEntry):
    """The releases of one plan, charged together before the first is drawn.

    Parameters
    ----------
    label : str
        What the plan fits, e.g. ``"dpfit.ols"``.
    components : tuple of LedgerEntry
        The plan's releases in the order they are drawn: Gaussian entries, and reserved
        shares (:class:`ReservedEntry`) for releases whose sensitivity is set at run time.
    relation : Relation
        Neighbouring relation of every component.
    """

    label: str
    components: tuple[LedgerEntry, ...]
    relation: Relation = Relation.REPLACE_ONE

    def __post_init__(self) -> None:
        if type(self.label) is not str or not self.label:
            raise TypeError("label must be a non-empty string")
        object.__setattr__(self, "relation", parse_relation(self.relation))
        components = tuple(self.components)
        for part in components:
            if not isinstance(part, LedgerEntry) or part.relation is not self.relation:
                raise ValueError(
                    f"every component of {self.label!r} must be a ledger entry under "
                    f"{self.relation}"
                )
        object.__setattr__(self, "components", components)

    @property
    def rho(self) -> float:
        """The exact sum of the components' rho, rounded once."""
        return units_to_float(self.rho_units)

    @property
    def rho_units(self) -> int:
        return sum(part.rho_units for part in self.components)

    @property
    def is_plain_gaussian(self) -> bool:
        return all(part.is_plain_gaussian for part in self.components)

    def releases(self) -> tuple[Any, ...]:
        return tuple(entry for part in self.components for entry in part.releases())

    def statement_lines(self) -> tuple[str, ...]:
        """The lines of components that state themselves (reserved shares never drawn)."""
        return tuple(line for part in self.components for line in part.statement_lines())

    @property
    def budget_units(self) -> int:
        return sum(part.budget_units for part in self.components)

    def _spend(self, budget: Budget) -> None:
        """Spend every component, in order; on a refusal return what was spent and raise."""
        spent: list[LedgerEntry] = []
        try:
            for part in self.components:
                part._spend(budget)
                spent.append(part)
        except BaseException:
            for part in reversed(spent):
                part._refund(budget)
            raise

    def replace_component(self, index: int, part: LedgerEntry | None) -> ComposedEntry:
        """This entry with component ``index`` replaced by ``part`` (dropped for None)."""
        parts = list(self.components)
        if part is None:
            del parts[index]
        else:
            parts[index] = part
        return ComposedEntry(label=self.label, components=tuple(parts), relation=self.relation)
