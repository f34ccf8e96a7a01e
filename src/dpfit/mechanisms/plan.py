"""Release plans: every release of a fit, its share of rho and its noise, before any data.

A :class:`ReleasePlan` is the public, data-independent part of one private fit: the named
releases in the order the fit makes them, each a :class:`PlannedRelease` with its share of
rho (exact shares from :func:`dpfit.privacy.split`), its query kind and per-record bound,
and from those its sensitivity (:func:`dpfit.privacy.query_sensitivity`) and noise std
(:func:`noise_std_for_rho`). A release whose bound is set at run time from earlier releases
(a clip from a released residual scale) has a fixed share and shows "run time" for its
noise. ``str(plan)`` prints the plan: what ``dry_run=True`` shows.

:func:`charge_plan` is the runner: it opens the plan on a ledger and returns it, a context
manager around the run. The run's first release charges the whole plan as one
:class:`~dpfit.privacy.entries.ComposedEntry` before its noise is drawn (the run reads and
checks its inputs first, so an unreadable input is refused with nothing charged), and every
release it then makes through this package is matched against the plan's next one
(:mod:`dpfit.privacy._plan_charge`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..privacy import Query, Relation, query_sensitivity
from ..privacy._plan_charge import PlanCharge
from ..privacy._units import units_to_float
from ..privacy.entries import ComposedEntry, GaussianEntry, LedgerEntry, ReservedEntry
from ..privacy.ledger import PrivacyLedger
from ..privacy.parallel import ParallelEntry
from .calibration import noise_std_for_rho, rho_within

__all__ = [
    "PlannedCheck",
    "PlannedParallel",
    "PlannedRelease",
    "PlannedRounds",
    "ReleasePlan",
    "charge_plan",
    "fit_part",
    "planned_release",
]


@dataclass(frozen=True, kw_only=True)
class PlannedRelease:
    """One named release of a plan: ``count`` Gaussian releases of one query.

    ``bound`` is the public bound on one record's term (None: set at run time from an earlier
    release), and with it ``sensitivity`` and ``noise_std``; ``label`` names the release in
    the ledger and ``rho`` is its share (all ``count`` releases).
    """

    name: str
    label: str
    query: Query
    rho: float
    count: int
    bound: float | None
    sensitivity: float | None
    noise_std: float | None
    purpose: str

    def entries(self, relation: Relation) -> tuple[LedgerEntry, ...]:
        """The components this release adds to the plan's composed entry."""
        return (self.entry(relation),)

    def entry(self, relation: Relation) -> LedgerEntry:
        """What the plan charges for this release: its Gaussian entry, or its share reserved
        when the sensitivity is set at run time."""
        if self.sensitivity is None or self.noise_std is None:
            return ReservedEntry(label=self.label, share=self.rho, count=self.count,
                                 relation=relation)  # fmt: skip
        return GaussianEntry(
            label=self.label, sensitivity=self.sensitivity, noise_std=self.noise_std,
            count=self.count, relation=relation,
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class PlannedParallel:
    """Releases on disjoint blocks of records, composed in parallel (one component).

    The run opens ``repeats`` times the blocks of ``pattern`` in order, and each block makes
    its planned releases in order. Every record lies in one block, so the composition costs
    the largest block's rho (:mod:`dpfit.privacy.parallel`): ``rho`` is that cap, what the
    plan charges for the whole composition, and each block's releases cost at most it.
    """

    name: str
    label: str
    rho: float
    pattern: tuple[tuple[PlannedRelease, ...], ...]
    repeats: int
    purpose: str

    @property
    def count(self) -> int:
        """The number of blocks."""
        return self.repeats * len(self.pattern)

    def entries(self, relation: Relation) -> tuple[LedgerEntry, ...]:
        """The component this composition adds to the plan's composed entry."""
        return (self.entry(relation),)

    def entry(self, relation: Relation) -> LedgerEntry:
        """What the plan charges: the composition of the planned blocks, each a block
        layout with its multiplicity (the run opens them in this order, cycled)."""
        blocks = tuple(
            (tuple(r.entry(relation) for r in block), self.repeats) for block in self.pattern
        )
        return ParallelEntry(
            label=self.label, rho_per_block=self.rho, blocks=blocks, relation=relation
        )

    def lines(self, width: int, total: float) -> list[str]:
        """This composition's rows of :meth:`ReleasePlan.__str__`: its own, then one per
        release of a block (its share of a block's cap)."""
        lines = [
            f"{self.name:<{width}} {100 * self.rho / total:>6.2f}% {self.count:>6} "
            f"{'blocks':>10} {'':>11}  {self.purpose}"
        ]
        for block in self.pattern:
            lines += [
                "  " + line
                for r in block
                for line in _release_line(r, width - 2, total, count=self.repeats)
            ]
        return lines


@dataclass(frozen=True, kw_only=True)
class PlannedRounds:
    """Releases drawn one at a time in rounds: each round makes one release of every
    ``pattern`` release, in order (e.g. two stages' gradients, step after step).

    Each release of ``pattern`` lists all its ``count`` releases (its noise calibrated so
    that they cost at most its share), and ``count`` is the number of rounds; the plan
    charges them as ``count`` rounds of single releases, in the order they are drawn.
    """

    name: str
    pattern: tuple[PlannedRelease, ...]
    purpose: str

    @property
    def label(self) -> str:
        return "+".join(r.label for r in self.pattern)

    @property
    def rho(self) -> float:
        """What the plan charges for every round (the pattern's shares, in float)."""
        return sum(r.rho for r in self.pattern)

    @property
    def count(self) -> int:
        """The number of rounds."""
        return self.pattern[0].count

    def entries(self, relation: Relation) -> tuple[LedgerEntry, ...]:
        """One Gaussian entry per release, round after round."""
        one = tuple(
            GaussianEntry(
                label=r.label, sensitivity=r.sensitivity, noise_std=r.noise_std, relation=relation
            )
            for r in self.pattern
        )
        return one * self.count

    def lines(self, width: int, total: float) -> list[str]:
        """This group's rows of :meth:`ReleasePlan.__str__`: its own, then its releases."""
        lines = [
            f"{self.name:<{width}} {100 * self.rho / total:>6.2f}% {self.count:>6} "
            f"{'rounds':>10} {'':>11}  {self.purpose}"
        ]
        return lines + [
            "  " + line for r in self.pattern for line in _release_line(r, width - 2, total)
        ]


def planned_release(
    name: str,
    rho: float,
    query: Query,
    bound: float | None,
    *,
    n: int | None,
    relation: Relation,
    label: str,
    purpose: str,
    count: int = 1,
    columns: int = 1,
    sensitivity: float | None = None,
    rows_per_unit: int = 1,
) -> PlannedRelease:
    """A :class:`PlannedRelease` of share ``rho``: with a public ``bound`` its sensitivity
    (:func:`~dpfit.privacy.query_sensitivity`, or ``sensitivity`` where the caller's query
    declares its own) and the noise std whose ``count`` releases cost at most ``rho``
    (:func:`rho_within`). ``rows_per_unit`` is the public row cap K of a privacy unit
    (``n`` then counts units; 1: one row)."""
    noise_std = None
    if bound is not None or sensitivity is not None:
        if sensitivity is None:
            sensitivity = query_sensitivity(
                query, bound=bound, n=n, relation=relation, columns=columns,
                rows_per_unit=rows_per_unit,
            )  # fmt: skip
        noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho, count=count))
    return PlannedRelease(
        name=name, label=label, query=query, rho=rho, count=count, bound=bound,
        sensitivity=sensitivity, noise_std=noise_std, purpose=purpose,
    )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ReleasePlan:
    """The releases of one private fit, in order (module docstring).

    Attributes
    ----------
    label : str
        What the plan fits; the label of its composed ledger entry.
    rho : float
        zCDP cost of the whole fit; the releases' shares sum to at most it exactly.
    relation : Relation
    n : int
        The public record count the sensitivities are computed for.
    releases : tuple of PlannedRelease
        In the order the fit makes them.
    rows_per_unit : int, default=1
        The row cap K of a privacy unit (:mod:`dpfit.privacy.unit_level`): ``n`` then counts
        units and a release of per-row terms bounds K rows; 1 for a row-level fit.
    """

    label: str
    rho: float
    relation: Relation
    n: int
    releases: tuple[PlannedRelease | PlannedParallel | PlannedRounds, ...]
    rows_per_unit: int = 1

    def release(self, name: str) -> PlannedRelease | PlannedParallel | PlannedRounds:
        """The planned release called ``name``."""
        for planned in self.releases:
            if planned.name == name:
                return planned
        raise KeyError(name)

    def share(self, name: str) -> float:
        """The rho of the release called ``name`` (all its ``count`` releases)."""
        return self.release(name).rho

    def bound(self, name: str, bound: float) -> PlannedRelease:
        """The release ``name`` with its per-record bound set at run time (from earlier
        releases), and with it its sensitivity and noise std, as computed for a bound known
        in advance."""
        planned = self.release(name)
        if not isinstance(planned, PlannedRelease):
            raise TypeError(f"{name} is a group of releases: its releases have their bounds")
        return planned_release(
            name, planned.rho, planned.query, bound, n=self.n, relation=self.relation,
            label=planned.label, purpose=planned.purpose, count=planned.count,
            rows_per_unit=self.rows_per_unit,
        )  # fmt: skip

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.releases)

    def then(
        self,
        *more: PlannedRelease | PlannedParallel | PlannedRounds,
        label: str | None = None,
        rho: float,
    ) -> ReleasePlan:
        """This plan followed by the releases ``more`` (e.g. a check made after the fit),
        under ``label`` and a total ``rho`` covering both."""
        return ReleasePlan(
            label=label or self.label, rho=rho, relation=self.relation, n=self.n,
            releases=(*self.releases, *more), rows_per_unit=self.rows_per_unit,
        )  # fmt: skip

    def composed(self) -> ComposedEntry:
        """The one ledger entry that charges the whole plan."""
        parts = tuple(e for r in self.releases for e in r.entries(self.relation))
        return ComposedEntry(label=self.label, components=parts, relation=self.relation)

    def title(self) -> str:
        """The first line of :meth:`__str__`."""
        n = self.n if self.rows_per_unit == 1 else f"{self.n} units of <= {self.rows_per_unit} rows"
        return (
            f"Release plan of {self.label}: n = {n} (public), rho = {self.rho:.6g} "
            f"({self.relation})"
        )

    def rows(self) -> list[dict[str, Any]]:
        """One mapping per release (name, label, share, count, bound, sensitivity, noise
        std, purpose), for JSON and tables."""
        return [
            {
                "name": r.name, "label": r.label, "rho": r.rho, "share": r.rho / self.rho,
                "count": r.count, "bound": getattr(r, "bound", None),
                "sensitivity": getattr(r, "sensitivity", None),
                "noise_std": getattr(r, "noise_std", None), "purpose": r.purpose,
            }
            for r in self.releases
        ]  # fmt: skip

    def __str__(self) -> str:
        inner = [
            len(b.name) + 2
            for r in self.releases
            if not isinstance(r, PlannedRelease)
            for block in r.pattern
            for b in (block if isinstance(block, tuple) else (block,))
        ]
        width = max([10, *(len(r.name) for r in self.releases), *inner])
        lines = [
            self.title(),
            f"{'release':<{width}} {'share':>7} {'count':>6} {'bound':>10} {'noise std':>11}  "
            "purpose",
        ]
        for r in self.releases:
            lines += (
                _release_line(r, width, self.rho)
                if isinstance(r, PlannedRelease)
                else r.lines(width, self.rho)
            )
        return "\n".join(lines)


def _release_line(
    r: PlannedRelease, width: int, total: float, *, count: int | None = None
) -> list[str]:
    """One release's row of :meth:`ReleasePlan.__str__` (``count``: in as many blocks)."""
    bound = "run time" if r.bound is None else f"{r.bound:.4g}"
    noise = "run time" if r.noise_std is None else f"{r.noise_std:.4g}"
    shown = r.count if count is None else f"{count}x{r.count}"
    return [
        f"{r.name:<{width}} {100 * r.rho / total:>6.2f}% {shown:>6} {bound:>10} {noise:>11}  "
        f"{r.purpose}"
    ]


@dataclass(frozen=True, kw_only=True)
class PlannedCheck:
    """A check made after a fit (a private count of the records outside the public bounds)
    as the last release of the fit's plan, so that fit and check are one entry of ``rho``.

    ``release`` is the check's planned release (None: no check), ``label`` the whole plan's
    label and ``run(result, ledger, charge)`` makes the release on ``ledger`` inside the open
    plan ``charge`` and returns ``result`` with what it adds.
    """

    release: PlannedRelease | None
    label: str
    rho: float
    run: Callable[[Any, PrivacyLedger, PlanCharge], Any]

    def plan(self, fit_plan: ReleasePlan) -> ReleasePlan:
        """``fit_plan`` followed by the check, under :attr:`label` and the whole ``rho``."""
        more = [] if self.release is None else [self.release]
        return fit_plan.then(*more, label=self.label, rho=self.rho)

    def after(self, result: Any, ledger: PrivacyLedger, charge: PlanCharge) -> Any:
        """The check made on ``ledger`` (the plan ``charge`` open on it), in ``result``."""
        return result if self.release is None else self.run(result, ledger, charge)

    def fit_rho(self, charge: PlanCharge) -> float:
        """What the fit's releases of the open plan ``charge`` were charged, exactly (every
        component but the check's)."""
        return fit_part(charge, checked=self.release is not None)


def fit_part(charge: PlanCharge, *, checked: bool = True) -> float:
    """What the fit's releases of the open plan ``charge`` were charged, exactly: every
    component but the last (the check made after the fit) when ``checked``."""
    parts = charge.entry.components
    fit = parts[:-1] if checked else parts
    return units_to_float(sum(p.rho_units for p in fit))


def charge_plan(plan: ReleasePlan, ledger: PrivacyLedger) -> PlanCharge:
    """Open ``plan`` on ``ledger``: charged as one composed entry at its first release.

    Returns the open plan; run the fit inside ``with charge_plan(plan, ledger):`` so that
    the whole plan is spent before the first draw, its releases are matched against the plan
    in order and, if the fit fails, the releases never drawn are returned
    (:meth:`dpfit.privacy.PrivacyLedger.charge_plan`). Check that the budget can pay the
    plan first (:func:`dpfit.privacy.ledger.prepare_ledger`); a budget that cannot is
    refused at the first release with :class:`~dpfit.BudgetExceededError`, nothing drawn.
    """
    if plan.relation is not ledger.relation:
        raise ValueError(
            f"plan relation {plan.relation} does not match the ledger's {ledger.relation}"
        )
    return ledger.charge_plan(plan.composed())
