"""Parallel composition: mechanisms on disjoint blocks of records cost the largest block's rho.

A *block* is a set of records fixed by public information only (for example positions
``[tau, tau + b)`` of a data-independent order), never by record values. When every mechanism
of a composition reads the records of one block only (plus public values and earlier
releases), two datasets that differ in one record differ in one block ``j``: given the past
transcript, every mechanism of another block has the same law on both, so by adaptive
composition the whole transcript is ``max_j rho_j``-zCDP, where ``rho_j`` is the (additive)
zCDP cost of block ``j``'s mechanisms. This is the argument of Varshney, Thakurta & Jain
(2022, proof of Thm. 3.6, App. B.2); mixing over a data-independent random partition (a
shuffle) keeps the bound by the joint quasi-convexity of the Renyi divergence.

Use it through :meth:`dpfit.privacy.PrivacyLedger.parallel`::

    with ledger.parallel("dp_ambssgd", rho_per_block=rho) as blocks:
        for t in range(T):
            block = blocks.block()          # a PrivacyLedger for the next disjoint block
            gaussian(..., ledger=block)     # charged to that block before the draw

Opening the composition spends ``rho_per_block`` from the parent's budget at once (before any
noise is drawn; nothing changes when it cannot be afforded). Each block gets its own ledger
whose budget is ``rho_per_block``, so no block can overspend. Closing it (also on an
exception: draws already made are releases) records one :class:`ParallelEntry` in the parent
ledger, whose ``rho`` is the largest block's cost.

Inside an open release plan (:meth:`~dpfit.privacy.PrivacyLedger.charge_plan`) whose next
component is a planned parallel composition of the same label, opening spends nothing more:
the plan paid for it. Each block then runs its planned releases as a plan of its own (the
planned blocks in order, cycled), so a release a block did not plan is refused before its
noise is drawn, and closing puts the composition drawn in the plan's place
(:meth:`dpfit.privacy._plan_charge.PlanCharge.open_parallel`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._validation import check_int, check_positive
from ._units import entry_units, exact_units, float_at_least, format_rho, units_to_float
from .budget import Budget
from .entries import ComposedEntry, LedgerEntry
from .relations import Relation, parse_relation

if TYPE_CHECKING:
    from ._plan_charge import PlanCharge
    from .ledger import PrivacyLedger

__all__ = ["ParallelComposition", "ParallelEntry"]


def _block_units(entries: tuple[Any, ...]) -> int:
    """A block's additive cost, exactly (units of 2^-1074)."""
    return sum(map(entry_units, entries))


@dataclass(frozen=True, slots=True, kw_only=True)
class ParallelEntry(LedgerEntry):
    """Releases on disjoint blocks of records, composed in parallel: rho = max over blocks.

    Parameters
    ----------
    label : str
        Name of the composition, e.g. ``"dp_ambssgd"``.
    rho_per_block : float
        The per-block cost reserved (spent from the budget) when the composition was opened;
        every block's cost is at most this (finite, > 0).
    blocks : tuple of (tuple of entries, int)
        The distinct block compositions and how many blocks had each: a block is the tuple
        of entries (:class:`~dpfit.privacy.GaussianEntry` or nested :class:`ParallelEntry`)
        charged to it, in order. Identical blocks are stored once with their multiplicity.
    relation : Relation, default=Relation.REPLACE_ONE
        Neighbouring relation of every entry.

    Notes
    -----
    Valid only when the blocks are disjoint sets of records fixed by public information,
    so that one neighbouring change touches one block (see the module docstring). The
    entry's ``rho`` is then ``max_j sum_{e in block j} e.rho``; as all Gaussian, the release
    is also ``sqrt(2 rho)``-GDP (the blocks' GDP parameters compose in the same way).
    """

    label: str
    rho_per_block: float
    blocks: tuple[tuple[tuple[Any, ...], int], ...] = ()
    relation: Relation = Relation.REPLACE_ONE

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError("label must be a non-empty string")
        cap = check_positive(self.rho_per_block, "rho_per_block")
        object.__setattr__(self, "rho_per_block", cap)
        object.__setattr__(self, "relation", parse_relation(self.relation))
        blocks = tuple((tuple(entries), check_int(k, "multiplicity")) for entries, k in self.blocks)
        for entries, _ in blocks:
            for e in entries:
                if getattr(e, "relation", None) is not self.relation:
                    raise ValueError(f"every entry of {self.label!r} must be under {self.relation}")
            if _block_units(entries) > exact_units(cap):  # exact: the block's budget was cap
                raise ValueError(f"a block of {self.label!r} costs more than rho_per_block={cap!r}")
        object.__setattr__(self, "blocks", blocks)

    @property
    def n_blocks(self) -> int:
        """Number of (non-empty) blocks."""
        return sum(k for _, k in self.blocks)

    @property
    def rho(self) -> float:
        """zCDP cost of the whole composition: the largest block's additive cost (0 if empty),
        the exact sum rounded once."""
        return units_to_float(self.rho_units)

    @property
    def rho_units(self) -> int:
        """:attr:`rho` exactly, in units of 2^-1074."""
        return max((_block_units(entries) for entries, _ in self.blocks), default=0)

    @property
    def budget_units(self) -> int:
        """What a budget is charged: the smallest float not below the exact largest-block
        cost (its nearest float, :attr:`rho`, can lie below it)."""
        return exact_units(float_at_least(self.rho_units))

    def _spend(self, budget: Budget) -> None:
        budget.spend(float_at_least(self.rho_units))

    def _refund(self, budget: Budget) -> None:
        budget._refund(float_at_least(self.rho_units), count=1, label=self.label)

    @property
    def is_plain_gaussian(self) -> bool:
        """True when every release inside is an un-subsampled Gaussian."""
        return all(e.is_plain_gaussian for entries, _ in self.blocks for e in entries)

    @property
    def counts(self) -> Mapping[str, int]:
        """Total number of releases per label over all blocks (for statements)."""
        out: dict[str, int] = {}
        for entries, k in self.blocks:
            for e in entries:
                out[e.label] = out.get(e.label, 0) + k * getattr(e, "count", 1)
        return out

    def statement_lines(self) -> tuple[str, ...]:
        """One line: the cost is the largest block's, not the sum."""
        counts = ", ".join(f"{n} x {label}" for label, n in self.counts.items())
        return (
            f"  - {self.label}: parallel composition over {self.n_blocks} disjoint blocks of "
            f"records ({counts} Gaussian releases in all); each record is read by one block "
            f"only, so it costs the largest block's rho, {format_rho(self.rho)}, not the sum",
        )


class ParallelComposition:
    """An open parallel composition: one child ledger per disjoint block.

    Built by :meth:`dpfit.privacy.PrivacyLedger.parallel`; see the module docstring. The
    child ledgers are ordinary :class:`~dpfit.privacy.PrivacyLedger` objects, so
    :func:`dpfit.mechanisms.gaussian` charges them before drawing.
    """

    __slots__ = (
        "_closed", "_counts", "_current", "_entry", "_ledger", "_opened", "_plan", "_planned",
        "_template",
    )  # fmt: skip

    def __init__(
        self,
        ledger: PrivacyLedger,
        *,
        label: str,
        rho_per_block: float,
        plan: PlanCharge | None = None,
        planned: ParallelEntry | None = None,
    ) -> None:
        self._template = ParallelEntry(
            label=label, rho_per_block=rho_per_block, relation=ledger.relation
        )
        if plan is None and ledger.budget is not None:
            ledger.budget.spend(self._template.rho_per_block)  # atomic, before any draw
        self._ledger = ledger
        self._plan, self._planned = plan, planned  # inside a plan: paid by it
        self._opened = 0  # blocks opened so far
        self._counts: dict[tuple[Any, ...], int] = {}
        self._current: PrivacyLedger | None = None
        self._closed = False
        self._entry: ParallelEntry | None = None

    @property
    def rho_per_block(self) -> float:
        """The per-block cost reserved for every block."""
        return self._template.rho_per_block

    def block(self) -> PrivacyLedger:
        """Close the current block and return a fresh ledger for the next disjoint block."""
        if self._closed:
            raise RuntimeError("this parallel composition is closed")
        from .ledger import PrivacyLedger

        self._fold()
        block = PrivacyLedger(relation=self._ledger.relation, budget=Budget(rho=self.rho_per_block))
        if self._planned is not None:  # the plan's next block: its releases, in order
            layouts = self._planned.blocks
            if self._opened >= sum(k for _, k in layouts):
                raise RuntimeError(
                    f"{self._template.label}: a block outside the plan (all "
                    f"{self._opened} planned blocks were opened); nothing was drawn"
                )
            parts, _ = layouts[self._opened % len(layouts)]
            block.charge_plan(ComposedEntry(
                label=self._template.label, components=parts, relation=block.relation
            ))  # fmt: skip
        self._opened += 1
        self._current = block
        return block

    def _fold(self, *, failed: bool = False) -> None:
        block = self._current
        if block is not None and block._plan is not None:
            block._plan.close(failed=failed)
        if block is not None and len(block):
            # a planned block holds one composed entry: the block is its components
            key = block.entries if self._planned is None else block.entries[0].components
            if key:
                self._counts[key] = self._counts.get(key, 0) + 1
        self._current = None

    def close(self, *, failed: bool = False) -> ParallelEntry:
        """Record the composition in the parent ledger (once) and return its entry; in a
        plan, in the planned composition's place (``failed``: the current block's releases
        never drawn are dropped)."""
        if self._entry is None:
            self._fold(failed=failed)
            self._closed = True
            t = self._template
            self._entry = ParallelEntry(
                label=t.label,
                rho_per_block=t.rho_per_block,
                blocks=tuple(self._counts.items()),
                relation=t.relation,
            )
            if self._plan is None:
                self._ledger._record_reserved(self._entry)
            else:
                self._plan.settle_parallel(self._planned, self._entry)
        return self._entry

    def __enter__(self) -> ParallelComposition:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        self.close(failed=exc_type is not None)
