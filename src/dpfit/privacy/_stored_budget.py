"""The stored budget itself: charges, per-thread reservations and refunds tied to their charge.

:class:`StoredBudget` is what :mod:`dpfit.privacy.store` opens (see there for the
guarantees). A reservation belongs to the thread and process that opened it; a direct charge
is remembered by the thread that made it (the last few), so that a refund of releases it
paid for and never drew can be tied to it. A refund, or a reservation's settlement, is
written only when the store still has the identity and the charge row it was made with;
otherwise, or when the file cannot be written, nothing is refunded and a
:class:`~dpfit.exceptions.BudgetStoreWarning` says that more stays charged than was drawn.
After every write the store's witness moves forward (:mod:`dpfit.privacy._store_witness`);
when it cannot be written the charge stands and a warning says so.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import warnings
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._validation import check_int, check_positive, user_stacklevel
from ..exceptions import BudgetExceededError, BudgetStoreError, BudgetStoreWarning
from ._store_chain import DatasetState, Receipt, append, charge_unchanged, dataset_state
from ._store_file import check_dataset, snapshot, transaction
from ._store_witness import witness_path, write_witness
from ._units import exact_units, float_at_least, float_at_most, format_left, format_rho
from .budget import Budget, units_to_float
from .shares import split

__all__ = ["Charge", "StoredBudget", "warn_witness"]

#: Failures of the file itself: locked past the timeout, read-only, deleted, replaced.
_STORE_FAILURES = (sqlite3.Error, OSError, ValueError)
#: An unspent part of a reservation at most this share of it is kept charged: it is what
#: exact shares leave unspent by rounding, and a refund row for it would only add noise.
_NEGLIGIBLE = 1e-12
#: Direct charges a thread remembers, newest last, to tie a refund to its charge.
_RECEIPTS = 64


@dataclass(frozen=True, kw_only=True)
class Charge:
    """One row of a dataset's history: a charge (or a refund, rho < 0) and its releases."""

    id: int
    rho: float
    mechanism: str
    created: str
    pid: int
    releases: tuple[tuple[str, int, float], ...] = ()
    refund_of: int | None = None


class _Reservation:
    """An open reservation: its charge, the in-memory budget it is spent from, its releases."""

    __slots__ = ("budget", "pid", "receipt", "releases")

    def __init__(self, receipt: Receipt) -> None:
        self.receipt, self.pid = receipt, os.getpid()
        self.budget = Budget(rho=receipt.rho)
        self.releases: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])

    def note(self, entry: Any) -> None:
        item = self.releases[entry.label]
        item[0] += entry.count
        item[1] += entry.rho


class StoredBudget(Budget):
    """A :class:`~dpfit.Budget` whose total and charges live in an SQLite file.

    Obtain one with :func:`open_budget` or ``dpfit.Budget.open``. It can be passed wherever a
    budget is accepted (``fit(X, y, budget=b)``, ``dpfit.ols(..., budget=b)``), from any
    thread or process.
    """

    __slots__ = ("_dataset", "_path", "_thread")

    def __init__(self, path: str | os.PathLike, *, dataset: str) -> None:
        self._path = Path(path)
        self._dataset = check_dataset(dataset)
        self._thread = threading.local()  # per thread: its reservation and direct receipts
        self._state()  # the dataset must exist, and pass the cheap checks

    # -- reading -------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The store's file."""
        return self._path

    @property
    def dataset(self) -> str:
        """The dataset whose total this budget draws from."""
        return self._dataset

    def _state(self) -> DatasetState:
        with snapshot(self._path) as conn:
            return dataset_state(conn, self._path, self._dataset)

    @property
    def total(self) -> float:
        """The dataset's total rho."""
        return self._state().total

    @property
    def spent(self) -> float:
        """The rho charged so far by every process (reservations included)."""
        return max(0.0, units_to_float(self._state().units))

    @property
    def remaining(self) -> float:
        """The rho still available (never negative)."""
        state = self._state()
        return max(0.0, float_at_most(exact_units(state.total) - state.units))

    def can_afford(self, rho: float, *, count: int = 1) -> bool:
        """Whether ``spend(rho, count=count)`` would succeed now (in this thread)."""
        mine = self._mine()
        if mine is not None:
            return mine.budget.can_afford(rho, count=count)
        state = self._state()  # as spend: the row would hold count * rho rounded up
        charge = exact_units(float_at_least(exact_units(rho) * count))
        return state.units + charge <= exact_units(state.total)

    def history(self) -> list[Charge]:
        """Every charge of this dataset, oldest first, with the releases recorded for it."""
        with snapshot(self._path) as conn:
            dataset_state(conn, self._path, self._dataset)
            rows = conn.execute(
                "SELECT id, rho, mechanism, created, pid, refund_of FROM charges "
                "WHERE dataset = ? ORDER BY id",
                (self._dataset,),
            ).fetchall()
            releases: dict[int, list[tuple[str, int, float]]] = defaultdict(list)
            for charge, mechanism, count, rho in conn.execute(
                "SELECT r.charge, r.mechanism, r.count, r.rho FROM releases r "
                "JOIN charges c ON c.id = r.charge WHERE c.dataset = ? ORDER BY r.rowid",
                (self._dataset,),
            ):
                releases[charge].append((mechanism, count, rho))
        return [
            Charge(id=i, rho=r, mechanism=m, created=t, pid=p, releases=tuple(releases[i]),
                   refund_of=f)
            for i, r, m, t, p, f in rows
        ]  # fmt: skip

    # -- spending ------------------------------------------------------------------------
    def _mine(self) -> _Reservation | None:
        """This thread's open reservation (never one inherited from a parent process)."""
        mine = getattr(self._thread, "reservation", None)
        return mine if mine is not None and mine.pid == os.getpid() else None

    def _charge(self, rho: float | None, mechanism: str) -> Receipt:
        """One transaction: refuse or append a charge of ``rho`` (None: all that is left)."""
        try:
            with transaction(self._path) as conn:
                state = dataset_state(conn, self._path, self._dataset)
                left = exact_units(state.total) - state.units
                if rho is None:
                    rho = float_at_most(left)
                    if not rho > 0:
                        raise BudgetExceededError(
                            f"the budget of dataset {self._dataset!r} is exhausted"
                        )
                if not exact_units(rho) <= left:
                    shown = format_left(max(0.0, float_at_most(left)), state.total, charge=rho)
                    raise BudgetExceededError(
                        f"charge of rho={format_rho(rho)} exceeds the remaining budget "
                        f"{shown} of dataset "
                        f"{self._dataset!r} in {self._path} (total {format_rho(state.total)}); "
                        "nothing was charged or drawn"
                    )
                receipt = append(
                    conn, state, dataset=self._dataset, rho=rho, mechanism=mechanism,
                    pid=os.getpid(),
                )  # fmt: skip
        except BudgetStoreError:  # refused by the store's checks: says so itself
            raise
        except (sqlite3.Error, OSError) as exc:
            raise BudgetStoreError(
                f"the budget store {self._path} could not be written ({_why(exc)}); nothing "
                "was charged or drawn"
            ) from exc
        self._witness(receipt)
        return receipt

    def _witness(self, receipt: Receipt) -> None:
        """Move the witness forward to the committed ``receipt``; warn when it cannot be
        written (the charge stands: the store is the record, the witness a check)."""
        try:
            write_witness(self._path, receipt.store_id, receipt.id, receipt.hash)
        except OSError as exc:
            warn_witness(self._path, exc, witness_path(self._path, receipt.store_id))

    def spend(self, rho: float, *, count: int = 1) -> None:
        """Charge ``count`` times ``rho``: from this thread's open reservation, or in one
        transaction on the store (the row holds ``count * rho`` rounded up, so a stored
        charge is never below the exact one)."""
        rho = check_positive(rho, "rho")
        count = check_int(count, "count", low=1)
        mine = self._mine()
        if mine is None:
            receipt = self._charge(float_at_least(exact_units(rho) * count), "direct spend")
            receipts = getattr(self._thread, "receipts", None)
            if receipts is None or receipts[0] != os.getpid():
                receipts = self._thread.receipts = (os.getpid(), deque(maxlen=_RECEIPTS))
            receipts[1].append(receipt)
            return
        try:
            mine.budget.spend(rho, count=count)
        except BudgetExceededError:
            raise BudgetExceededError(
                f"charge of rho={format_rho(rho * count)} exceeds what is left of this "
                f"thread's reservation (charge #{mine.receipt.id} of rho="
                f"{format_rho(mine.receipt.rho)} in {self._path}), "
                f"{format_left(mine.budget.remaining, mine.receipt.rho, charge=rho * count)}; "
                "this charge was not made and nothing was drawn for it"
            ) from None

    def _exchange(self, back: int, take: int, *, label: str) -> None:
        """Return ``back`` units and spend ``take`` as one step (:meth:`Budget._exchange`):
        in this thread's reservation, or as one row of the difference (a refund rounded
        down, or a charge rounded up)."""
        mine = self._mine()
        if mine is not None:
            mine.budget._exchange(back, take, label=label)
        elif back > take:
            self._refund(float_at_most(back - take), count=1, label=label)
        elif take > back:
            self.spend(float_at_least(take - back))

    def _refund(self, rho: float, *, count: int, label: str) -> None:
        """Return ``count`` undrawn releases of ``rho`` (a fit that failed part-way).

        Inside a reservation they go back to it (and so into its refund row when it ends).
        Otherwise one refund row of -count * rho, rounded down, is tied to the direct charge
        of this thread that paid for them; when that charge cannot be found as it was
        written, or the store cannot be written, nothing is refunded and a
        :class:`~dpfit.exceptions.BudgetStoreWarning` says so.
        """
        mine = self._mine()
        if mine is not None:
            mine.budget._refund(rho, count=count, label=label)
            return
        amount = float_at_most(exact_units(rho) * count)
        receipts = getattr(self._thread, "receipts", (None, ()))
        paid = [r for r in receipts[1] if receipts[0] == os.getpid() and r.rho >= amount]
        what = f"the refund of {count} undrawn releases of {label} (rho={format_rho(amount)})"
        if not paid:
            _warn(
                f"the budget store {self._path} did not record {what}: no charge this thread "
                "made paid for them; it all stays charged (more than was drawn, never less)"
            )
            return
        mechanism = f"refund: {count} undrawn releases of {label} (the fit failed)"
        self._return(paid[-1], amount, mechanism, what)

    def _return(
        self,
        receipt: Receipt,
        amount: float,
        mechanism: str,
        what: str,
        releases: list[tuple[str, int, float]] = (),  # type: ignore[assignment]
    ) -> None:
        """Record ``releases`` with ``receipt``'s charge and refund ``amount`` of it, in one
        transaction, only if the charge is still in the store as it was written."""
        refund = None
        try:
            with transaction(self._path) as conn:
                state = dataset_state(conn, self._path, self._dataset)
                why = charge_unchanged(conn, receipt, state.store_id) or _overrefund(
                    conn, receipt, amount
                )
                if why is None:
                    conn.executemany(
                        "INSERT INTO releases VALUES (?, ?, ?, ?)",
                        [(receipt.id, label, int(c), float(r)) for label, c, r in releases],
                    )
                    if amount > 0:
                        refund = append(
                            conn, state, dataset=self._dataset, rho=-amount,
                            mechanism=mechanism, pid=os.getpid(), refund_of=receipt.id,
                        )  # fmt: skip
        except _STORE_FAILURES as exc:
            refused = isinstance(exc, ValueError | BudgetStoreError)  # by the store's checks
            failed = "store was refused" if refused else "file could not be written"
            why = f"the {failed} ({_why(exc)})"
        if refund is not None and why is None:
            self._witness(refund)
        if why is not None:
            _warn(
                f"the budget store {self._path} did not record {what}: {why}; it all stays "
                "charged (more than was drawn, never less)"
            )

    def split(self, k: int) -> list[Budget]:
        """Charge the whole remaining rho now and return ``k`` in-memory budgets sharing it."""
        mine = self._mine()
        if mine is not None:
            return mine.budget.split(k)
        k = check_int(k, "k", low=1)
        receipt = self._charge(None, f"split into {k}")
        return [Budget(rho=share) for share in split(receipt.rho, k)]

    @property
    def reserving(self) -> bool:
        """Whether this thread has a reservation open: its spends draw from it."""
        return self._mine() is not None

    @contextlib.contextmanager
    def reserve(self, rho: float, *, mechanism: str) -> Iterator[StoredBudget]:
        """Reserve ``rho`` in one transaction; this thread's spends inside the block draw
        from it.

        On exit the block's releases (seen by :func:`dpfit.mechanisms.recorder.observing`)
        are recorded with the charge, and the part of the reservation that was not spent is
        returned as a refund row tied to it. A process killed inside the block keeps the
        whole reservation charged; so does an exit when the store cannot be written (a
        :class:`~dpfit.exceptions.BudgetStoreWarning`, and the block's result stands).
        Other threads and forked children do not see the reservation.
        """
        from ..mechanisms.recorder import observing

        rho = check_positive(rho, "rho")
        if self._mine() is not None:
            raise RuntimeError("a reservation is already open in this thread on this budget")
        mine = _Reservation(self._charge(rho, mechanism))
        self._thread.reservation = mine
        try:
            with observing(mine.note):
                yield self
        finally:
            self._thread.reservation = None
            unused = float_at_most(exact_units(rho) - mine.budget._spent_units)
            if unused <= rho * _NEGLIGIBLE:  # the rounding of exact shares: kept, not refunded
                unused = 0.0
            self._return(
                mine.receipt,
                unused,
                f"refund: the unspent part of charge {mine.receipt.id}",
                f"the end of reservation #{mine.receipt.id} of rho={format_rho(rho)} (the "
                f"refund of its unused {format_rho(unused)} and its list of releases)",
                [(label, c, r) for label, (c, r) in mine.releases.items()],
            )

    def __repr__(self) -> str:
        return f"StoredBudget({str(self._path)!r}, dataset={self._dataset!r})"

    def __reduce__(self):
        """Pickles as (path, dataset): the copy reopens the file and shares the total."""
        return (_reopen, (str(self._path), self._dataset))


def _why(exc: BaseException) -> str:
    """A file error in one line: its type and SQLite's or the system's text (no data); of a
    refusal of the file by dpfit, what was found without the advice on what to do."""
    text = " ".join(str(exc).split())
    if isinstance(exc, ValueError | BudgetStoreError):
        return text.split(": ")[0].split("; ")[0]
    return f"{type(exc).__name__}: {text}"


def _warn(message: str) -> None:
    warnings.warn(message, BudgetStoreWarning, stacklevel=user_stacklevel())


def warn_witness(path: Path, exc: OSError, witness: Path | None = None) -> None:
    """Warn that the witness of the store at ``path`` could not be written (``exc``)."""
    where = "" if witness is None else f" {witness}"
    _warn(
        f"the witness{where} of budget store {path} could not be written ({_why(exc)}): what "
        "the store recorded stands, but a rollback of the store to before it cannot be "
        "detected until a later charge writes the witness"
    )


def _overrefund(conn: sqlite3.Connection, receipt: Receipt, amount: float) -> str | None:
    """Why refunding ``amount`` of ``receipt``'s charge would return more than it charged."""
    refunded = sum(
        exact_units(r[0])
        for r in conn.execute("SELECT rho FROM charges WHERE refund_of = ?", (receipt.id,))
    )
    if exact_units(receipt.rho) + refunded - exact_units(amount) < 0:
        return f"charge #{receipt.id} has no more than that left to refund"
    return None


def _reopen(path: str, dataset: str) -> StoredBudget:
    return StoredBudget(path, dataset=dataset)
