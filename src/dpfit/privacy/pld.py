"""(epsilon, delta) accounting of amplified releases by privacy loss distributions (PLDs).

Poisson subsampling amplifies the Gaussian mechanism, but not in zCDP terms that add up
tightly, so dpfit never puts an amplified release in a :class:`~dpfit.privacy.PrivacyLedger`
(``docs/privacy.md``: no zCDP amplification claims). Amplified releases are charged to a
:class:`PLDLedger` instead, which composes them with the PLD accountant of Google's
``dp_accounting`` (Koskela et al. 2020; Doroshenko et al. 2022) and reports (epsilon, delta)
only. ``docs/privacy.md`` ("Amplified releases") describes how the two ledgers sit side by
side.

Entries
-------
:class:`SubsampledGaussianEntry` -- ``count`` adaptive compositions of a Poisson-subsampled
Gaussian mechanism: every record is included independently with probability ``q`` in each
composition, and a record's inclusion moves the query by at most ``sensitivity`` (L2, under
add/remove). DP-SGD with Poisson sampling is one composition per step; amplified banded
matrix factorisation with cyclic Poisson sampling over b groups is one per epoch
(Choquette-Choo et al. 2023, arXiv 2306.08153, Thm. 4).

A plain :class:`~dpfit.privacy.GaussianEntry` may also be charged to a :class:`PLDLedger`
(as a Gaussian PLD: exact). The reverse is refused: a zCDP ledger takes no amplified entry.

Combining the two ledgers, :func:`joint_epsilon` gives an (epsilon, delta) for everything:
when the zCDP ledger holds only plain Gaussian entries they join the PLD composition exactly
(each is a Gaussian mechanism with known sensitivity and noise); otherwise delta is split in
half and the two epsilons add (basic composition of an (eps1, delta/2) and an
(eps2, delta/2) guarantee). No route ever converts an (epsilon, delta) back to rho.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._validation import check_delta, check_epsilon, check_int, check_positive, check_real
from ..exceptions import BudgetExceededError
from .ledger import GaussianEntry
from .relations import Relation, parse_relation

if TYPE_CHECKING:
    from .ledger import PrivacyLedger

__all__ = [
    "PLDLedger",
    "SubsampledGaussianEntry",
    "joint_epsilon",
    "subsampled_gaussian_epsilon",
    "subsampled_gaussian_noise_multiplier",
]

#: PLD discretisation (dp_accounting's default); epsilons are upper bounds at this grid.
VALUE_DISCRETIZATION = 1e-4


def _dp_accounting() -> Any:
    try:
        import dp_accounting
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError(
            "amplified (Poisson-sampled) accounting needs dp_accounting: "
            "pip install 'dpfit[accounting]'"
        ) from exc
    return dp_accounting


@dataclass(frozen=True, slots=True, kw_only=True)
class SubsampledGaussianEntry:
    """``count`` compositions of a Poisson-subsampled Gaussian mechanism (add/remove).

    Parameters
    ----------
    label : str
        What was released, e.g. ``"dp_sgd/gradients"``.
    sensitivity : float
        L2 sensitivity of one composition's query to one record's inclusion.
    noise_std : float
        Absolute noise standard deviation.
    sampling_probability : float
        Poisson inclusion probability q in (0, 1].
    count : int, default=1
        Number of adaptive compositions.
    relation : Relation, default=Relation.ADD_REMOVE
        Only add/remove: Poisson amplification is stated for it.
    """

    label: str
    sensitivity: float
    noise_std: float
    sampling_probability: float
    count: int = 1
    relation: Relation = Relation.ADD_REMOVE

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError("label must be a non-empty string")
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "noise_std", check_positive(self.noise_std, "noise_std"))
        q = check_real(
            self.sampling_probability, "sampling_probability", low=0.0, high=1.0, high_open=False
        )
        object.__setattr__(self, "sampling_probability", q)
        object.__setattr__(self, "count", check_int(self.count, "count", low=1))
        relation = parse_relation(self.relation)
        if relation is not Relation.ADD_REMOVE:
            raise ValueError("a Poisson-subsampled entry must be stated under 'add-remove'")
        object.__setattr__(self, "relation", relation)

    @property
    def noise_multiplier(self) -> float:
        """noise_std / sensitivity (dimensionless)."""
        return self.noise_std / self.sensitivity

    def dp_event(self) -> Any:
        """The equivalent ``dp_accounting`` event."""
        dpa = _dp_accounting()
        one = dpa.PoissonSampledDpEvent(
            self.sampling_probability, dpa.GaussianDpEvent(self.noise_multiplier)
        )
        return dpa.SelfComposedDpEvent(one, self.count)


def _gaussian_event(entry: GaussianEntry) -> Any:
    """The entry as a dp_accounting event, exact under its relation.

    dp_accounting reads a Gaussian's noise multiplier against the add/remove sensitivity and,
    under REPLACE_ONE, compares means 2 sensitivities apart; dpfit's ``sensitivity`` is already
    the replace-one one, so the multiplier is doubled there (mu = sensitivity / noise_std
    either way).
    """
    dpa = _dp_accounting()
    z = entry.noise_multiplier
    if entry.relation is Relation.REPLACE_ONE:
        z *= 2.0
    return dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(z), entry.count)


def _event(entry: Any) -> Any:
    if isinstance(entry, SubsampledGaussianEntry):
        return entry.dp_event()
    if isinstance(entry, GaussianEntry) and entry.is_plain_gaussian:
        return _gaussian_event(entry)
    raise TypeError(
        "a PLDLedger takes SubsampledGaussianEntry or plain GaussianEntry entries, "
        f"got {type(entry).__name__}"
    )


def _accountant(
    relation: Relation, events: list[Any], discretization: float = VALUE_DISCRETIZATION
) -> Any:
    dpa = _dp_accounting()
    rel = dpa.NeighboringRelation
    accountant = dpa.pld.PLDAccountant(
        rel.ADD_OR_REMOVE_ONE if relation is Relation.ADD_REMOVE else rel.REPLACE_ONE,
        value_discretization_interval=discretization,
    )
    for event in events:
        accountant.compose(event)
    return accountant


class PLDLedger:
    """Append-only record of amplified releases, composed by PLD into (epsilon, delta).

    Parameters
    ----------
    relation : Relation or str, default="add-remove"
        The neighbouring relation of every entry (amplified entries need add/remove).
    epsilon, delta : float, optional
        A budget: a charge that would make the composition exceed ``epsilon`` at ``delta``
        raises :class:`~dpfit.BudgetExceededError` and changes nothing.

    Examples
    --------
    >>> ledger = PLDLedger()
    >>> ledger.charge(SubsampledGaussianEntry(label="dp-sgd", sensitivity=1.0, noise_std=1.1,
    ...                                       sampling_probability=0.01, count=1000))
    >>> round(ledger.epsilon(1e-5), 3)
    1.515
    """

    def __init__(
        self,
        *,
        relation: Relation | str = Relation.ADD_REMOVE,
        epsilon: float | None = None,
        delta: float | None = None,
    ) -> None:
        self._relation = parse_relation(relation)
        if (epsilon is None) != (delta is None):
            raise TypeError("give both epsilon and delta for a budget, or neither")
        self._budget = None if epsilon is None else (check_epsilon(epsilon), check_delta(delta))
        self._entries: list[Any] = []
        self._events: list[Any] = []
        self._composed: Any = None  # the PLD accountant of all events, built on first use

    @property
    def relation(self) -> Relation:
        """The neighbouring relation of every entry."""
        return self._relation

    @property
    def entries(self) -> tuple[Any, ...]:
        """The charged entries, in order."""
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(tuple(self._entries))

    def charge(self, entry: SubsampledGaussianEntry | GaussianEntry) -> None:
        """Record ``entry`` or raise and change nothing (budget checked by a dry run)."""
        event = _event(entry)
        if entry.relation is not self._relation:
            raise ValueError(
                f"entry relation {entry.relation} does not match the ledger's {self._relation}"
            )
        composed = None
        if self._budget is not None:
            eps_budget, delta = self._budget
            composed = _accountant(self._relation, [*self._events, event])
            eps = composed.get_epsilon(delta)
            if not eps <= eps_budget:
                raise BudgetExceededError(
                    f"charge of {entry.label!r} would bring epsilon to {eps:.6g} at "
                    f"delta={delta:g}, above the budget {eps_budget:.6g}; nothing was charged "
                    "or drawn"
                )
        self._entries.append(entry)
        self._events.append(event)
        self._composed = composed

    def _accountant(self) -> Any:
        if self._composed is None:
            self._composed = _accountant(self._relation, self._events)
        return self._composed

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon (on the PLD grid; an upper bound) with (epsilon, delta)-DP."""
        delta = check_delta(delta)
        if not self._entries:
            return 0.0
        return float(self._accountant().get_epsilon(delta))

    def delta(self, epsilon: float) -> float:
        """delta(epsilon) of the composition (an upper bound on the PLD grid)."""
        epsilon = check_real(epsilon, "epsilon", low=0.0, low_open=False)
        if not self._entries:
            return 0.0
        return float(self._accountant().get_delta(epsilon))

    def statement(self, delta: float = 1e-5) -> str:
        """A short privacy statement: (epsilon, delta) by PLD, never a rho."""
        delta = check_delta(delta)
        lines = [
            f"({self.epsilon(delta):.4g}, {delta:g})-DP under {self._relation} neighbours, "
            f"by privacy loss distributions (dp_accounting PLD accountant, discretisation "
            f"{VALUE_DISCRETIZATION:g}), composing {len(self)} release(s):"
        ]
        for e in self._entries:
            if isinstance(e, SubsampledGaussianEntry):
                lines.append(
                    f"  {e.label}: {e.count} x Poisson-subsampled Gaussian, q = "
                    f"{e.sampling_probability:.4g}, noise multiplier {e.noise_multiplier:.4g}"
                )
            else:
                lines.append(
                    f"  {e.label}: {e.count} x Gaussian, noise multiplier {e.noise_multiplier:.4g}"
                )
        lines.append("No zCDP (rho) guarantee is claimed for amplified releases.")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"PLDLedger(relation={self._relation.value!r}, entries={len(self)})"


def joint_epsilon(delta: float, pld: PLDLedger, zcdp: PrivacyLedger) -> float:
    """epsilon at ``delta`` of everything charged to ``pld`` and to the zCDP ledger ``zcdp``.

    Exact PLD composition when ``zcdp`` holds only plain Gaussian entries (no parallel or
    filter entries); otherwise eps_pld(delta / 2) + eps_zcdp(delta / 2) (basic composition).
    Both ledgers must share one relation.
    """
    delta = check_delta(delta)
    if pld.relation is not zcdp.relation:
        raise ValueError(
            f"the ledgers' relations differ ({pld.relation} vs {zcdp.relation}): "
            "guarantees under different relations do not compose"
        )
    if not len(zcdp):
        return pld.epsilon(delta)
    releases = zcdp.releases  # composed plans listed by their releases
    if zcdp.is_gaussian_only and sum(e.rho_units for e in releases) == zcdp._units:
        events = [*pld._events, *(_gaussian_event(e) for e in releases)]
        return float(_accountant(pld.relation, events).get_epsilon(delta))
    return pld.epsilon(delta / 2) + zcdp.epsilon(delta / 2)


def subsampled_gaussian_epsilon(
    noise_multiplier: float,
    *,
    sampling_probability: float,
    count: int,
    delta: float,
    discretization: float = VALUE_DISCRETIZATION,
) -> float:
    """epsilon(delta) of ``count`` Poisson-subsampled Gaussians (add/remove), by PLD.

    A coarser ``discretization`` is faster and gives a larger (still valid) epsilon.
    """
    entry = SubsampledGaussianEntry(
        label="query",
        sensitivity=1.0,
        noise_std=noise_multiplier,
        sampling_probability=sampling_probability,
        count=count,
    )
    accountant = _accountant(Relation.ADD_REMOVE, [entry.dp_event()], discretization)
    return float(accountant.get_epsilon(check_delta(delta)))


#: Discretisation of the calibration search (pessimistic: its epsilons bound the fine ones).
_SEARCH_DISCRETIZATION = 1e-3
#: Smallest noise multiplier searched: a PLD's support grows like 1 / z^2 (z = 0.1 takes ~3 s
#: and ~0.3 GB at 2000 compositions, z = 1e-3 minutes and gigabytes), and epsilon(z = 0.1) at
#: delta = 1e-5 is already 53 for one composition at q = 1e-4 (92 at q = 1, 1901 for 2000
#: compositions at q = 0.01).
SEARCH_FLOOR = 0.1


def subsampled_gaussian_noise_multiplier(
    epsilon: float, *, sampling_probability: float, count: int, delta: float
) -> float:
    """A noise multiplier z (within 1e-4 relative of the smallest) with epsilon(delta) <= target.

    Bisection on log z at a coarse PLD grid (whose epsilons are upper bounds of the fine
    grid's), then the result is checked at the fine grid of :class:`PLDLedger`. Raises
    ``ValueError`` when even z = :data:`SEARCH_FLOOR` meets the target (epsilons of several
    tens or more), rather than searching smaller multipliers at a cost growing like 1 / z^2.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    kw = dict(sampling_probability=sampling_probability, count=count, delta=delta)

    def eps(z: float) -> float:
        return subsampled_gaussian_epsilon(z, discretization=_SEARCH_DISCRETIZATION, **kw)

    lo, hi = 0.25, 1.0
    while eps(hi) > epsilon:
        lo, hi = hi, hi * 2.0
        if hi > 1e6:
            raise ValueError(f"epsilon={epsilon} is out of reach (noise multiplier above 1e6)")
    while (at_lo := eps(lo)) <= epsilon:
        if lo <= SEARCH_FLOOR:
            raise ValueError(
                f"epsilon={epsilon} is too large to calibrate: a noise multiplier of "
                f"{SEARCH_FLOOR} already gives epsilon {at_lo:.3g}, and smaller multipliers "
                "are not searched (their privacy loss distributions take minutes and "
                "gigabytes); ask for a smaller epsilon"
            )
        hi, lo = lo, max(lo / 2.0, SEARCH_FLOOR)
    while hi / lo > 1.0 + 1e-4:
        mid = math.sqrt(lo * hi)
        if eps(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    if not subsampled_gaussian_epsilon(hi, **kw) <= epsilon:  # pragma: no cover - by design
        raise RuntimeError("calibrated noise multiplier fails the fine-grid check")
    return hi
