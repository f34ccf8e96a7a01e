"""A privacy budget that persists in SQLite: one total per dataset, shared across processes.

``dpfit.Budget.open(path, dataset="card", rho=1.0)`` (or :func:`open_budget`) creates the
dataset's total in the file on first use and opens it afterwards; ``dpfit budget create |
show | history`` manage it from the shell and ``--budget-store PATH`` charges a fit to it.

Every charge is one SQLite transaction that starts with ``BEGIN IMMEDIATE`` (the write lock
is taken before the spent total is read), checks the total and appends the charge, and
commits before anything is drawn (https://www.sqlite.org/lang_transaction.html): processes
racing to spend are serialised and can never overspend, and a process killed after the
commit leaves its charge recorded. A fit run through :meth:`StoredBudget.reserve` (as
``dpfit.ols`` and the command line do) reserves its whole rho in one transaction, spends it
in memory, records its releases (mechanism, count, rho) when it ends and returns only a part
it provably did not draw; a fit killed part-way keeps its whole reservation (conservative).
A fit that fails part-way with an exception returns its undrawn releases
(:meth:`dpfit.mechanisms.GaussianReleases.__exit__`): into the open reservation, or as a refund
row rounded down.

Unlike an in-memory :class:`~dpfit.Budget`, a stored budget may be pickled: the copy in
another process reopens the same file and spends from the same total.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._validation import check_positive
from ..exceptions import BudgetExceededError
from ._store_file import (
    affordable,
    check_dataset,
    connect,
    float_at_least,
    float_at_most,
    now,
    total_and_spent,
    total_and_units,
    transaction,
)
from .budget import Budget, exact_units, units_to_float

__all__ = ["Charge", "StoredBudget", "create_budget", "open_budget", "stored_datasets"]


@dataclass(frozen=True, kw_only=True)
class Charge:
    """One row of a dataset's history: a charge (or a refund, rho < 0) and its releases."""

    id: int
    rho: float
    mechanism: str
    created: str
    pid: int
    releases: tuple[tuple[str, int, float], ...] = ()


class StoredBudget(Budget):
    """A :class:`~dpfit.Budget` whose total and charges live in an SQLite file.

    Obtain one with :func:`open_budget` or ``dpfit.Budget.open``. It can be passed wherever a
    budget is accepted (``fit(X, y, budget=b)``, ``dpfit.ols(..., budget=b)``).
    """

    __slots__ = ("_dataset", "_local", "_path", "_releases")

    def __init__(self, path: str | os.PathLike, *, dataset: str) -> None:
        self._path = Path(path)
        self._dataset = check_dataset(dataset)
        self._local: Budget | None = None
        self._releases: dict[str, list[float]] | None = None
        with contextlib.closing(connect(self._path, create=False)) as conn:
            total_and_spent(conn, self._dataset)  # the dataset must exist

    # -- reading -------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The store's file."""
        return self._path

    @property
    def dataset(self) -> str:
        """The dataset whose total this budget draws from."""
        return self._dataset

    def _read(self) -> tuple[float, float]:
        with contextlib.closing(connect(self._path, create=False)) as conn:
            return total_and_spent(conn, self._dataset)

    @property
    def total(self) -> float:
        """The dataset's total rho."""
        return self._read()[0]

    @property
    def spent(self) -> float:
        """The rho charged so far by every process (reservations included)."""
        return self._read()[1]

    @property
    def remaining(self) -> float:
        """The rho still available (never negative)."""
        total, spent = self._read()
        return max(0.0, total - spent)

    def can_afford(self, rho: float, *, count: int = 1) -> bool:
        """Whether ``spend(rho, count=count)`` would succeed now."""
        if self._local is not None:
            return self._local.can_afford(rho, count=count)
        with contextlib.closing(connect(self._path, create=False)) as conn:
            total, units = total_and_units(conn, self._dataset)
        return affordable(total, units, rho * count)

    def history(self) -> list[Charge]:
        """Every charge of this dataset, oldest first, with the releases recorded for it."""
        return _history(self._path, self._dataset)

    # -- spending ------------------------------------------------------------------------
    def _charge(self, rho: float, mechanism: str) -> int:
        """One transaction: refuse or append the charge; returns its id."""
        with transaction(self._path) as conn:
            total, units = total_and_units(conn, self._dataset)
            if not affordable(total, units, rho):
                spent = max(0.0, units_to_float(units))
                raise BudgetExceededError(
                    f"charge of rho={rho:.6g} exceeds the remaining budget "
                    f"{max(0.0, total - spent):.6g} of dataset {self._dataset!r} in "
                    f"{self._path} (total {total:.6g}); nothing was charged or drawn"
                )
            cursor = conn.execute(
                "INSERT INTO charges (dataset, rho, mechanism, created, pid) VALUES (?,?,?,?,?)",
                (self._dataset, rho, mechanism, now(), os.getpid()),
            )
            return int(cursor.lastrowid)

    def spend(self, rho: float, *, count: int = 1) -> None:
        """Charge ``count`` times ``rho`` in one transaction (or from the open reservation)."""
        rho = check_positive(rho, "rho")
        if self._local is not None:
            self._local.spend(rho, count=count)
            return
        # the row holds count * rho rounded up: a stored charge is never below the exact one
        self._charge(float_at_least(exact_units(rho) * count), "direct spend")

    def _refund(self, rho: float, *, count: int, label: str) -> None:
        """Return ``count`` undrawn releases of ``rho`` (a fit that failed part-way).

        Inside a reservation they go back to it (and so into its refund row when it ends);
        otherwise one refund row of -count * rho, rounded down, is appended: a refund never
        returns rho that was drawn.
        """
        if self._local is not None:
            self._local._refund(rho, count=count, label=label)
            return
        amount = float_at_most(exact_units(rho) * count)
        if amount > 0:
            with transaction(self._path) as conn:
                conn.execute(
                    "INSERT INTO charges (dataset, rho, mechanism, created, pid) "
                    "VALUES (?,?,?,?,?)",
                    (
                        self._dataset,
                        -amount,
                        f"refund: {count} undrawn releases of {label} (the fit failed)",
                        now(),
                        os.getpid(),
                    ),
                )

    def split(self, k: int) -> list[Budget]:
        """Charge the whole remaining rho now and return ``k`` in-memory budgets sharing it."""
        if self._local is not None:
            return self._local.split(k)
        rest = self.remaining
        if not rest > 0:
            raise BudgetExceededError(f"the budget of dataset {self._dataset!r} is exhausted")
        self._charge(rest, f"split into {k}")
        holder = Budget(rho=rest)
        return holder.split(k)

    @property
    def reserving(self) -> bool:
        """Whether a reservation is open: spends now draw from it, not from the store."""
        return self._local is not None

    @contextlib.contextmanager
    def reserve(self, rho: float, *, mechanism: str) -> Iterator[StoredBudget]:
        """Reserve ``rho`` in one transaction; spends inside the block draw from it.

        On exit the block's releases (seen by :func:`dpfit.mechanisms.recorder.observing`)
        are recorded with the charge, and the part of the reservation that was not spent is
        returned as a refund row. A process killed inside the block keeps the whole
        reservation charged.
        """
        from ..mechanisms.recorder import observing

        rho = check_positive(rho, "rho")
        if self._local is not None:
            raise RuntimeError("a reservation is already open on this budget")
        charge = self._charge(rho, mechanism)
        local = Budget(rho=rho)
        releases: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])

        def note(entry: Any) -> None:
            item = releases[entry.label]
            item[0] += entry.count
            item[1] += entry.rho

        self._local = local
        try:
            with observing(note):
                yield self
        finally:
            self._local = None
            with transaction(self._path) as conn:
                conn.executemany(
                    "INSERT INTO releases VALUES (?, ?, ?, ?)",
                    [(charge, label, int(c), float(r)) for label, (c, r) in releases.items()],
                )
                self._settle(conn, charge, rho, local._spent_units)

    def _settle(self, conn: sqlite3.Connection, charge: int, rho: float, spent: int) -> None:
        """Close reservation ``charge`` of ``rho`` in which ``spent`` units were charged.

        The unspent part comes back as a refund row rounded down (a refund never returns rho
        that was drawn). A reservation is a :class:`~dpfit.Budget`, which accepts charges up
        to RELATIVE_TOLERANCE above its total (sums of shares round), so its releases may
        cost slightly more than ``rho``: the reservation's row is then raised to what they
        cost, rounded up, so the history never records less than was drawn.
        """
        left = exact_units(rho) - spent
        if left < 0:
            conn.execute("UPDATE charges SET rho = ? WHERE id = ?", (float_at_least(spent), charge))
            return
        unused = float_at_most(left)
        if unused > rho * 1e-12:
            conn.execute(
                "INSERT INTO charges (dataset, rho, mechanism, created, pid) VALUES (?,?,?,?,?)",
                (
                    self._dataset,
                    -unused,
                    f"refund: the unspent part of charge {charge}",
                    now(),
                    os.getpid(),
                ),
            )

    def __repr__(self) -> str:
        return f"StoredBudget({str(self._path)!r}, dataset={self._dataset!r})"

    def __reduce__(self):
        """Pickles as (path, dataset): the copy reopens the file and shares the total."""
        return (_reopen, (str(self._path), self._dataset))


def _reopen(path: str, dataset: str) -> StoredBudget:
    return StoredBudget(path, dataset=dataset)


def create_budget(path: str | os.PathLike, *, dataset: str, rho: float) -> StoredBudget:
    """Record the total ``rho`` of ``dataset`` in the store at ``path`` (created if needed).

    Raises
    ------
    ValueError
        The dataset already has a total (a total is fixed once set), or the file is not a
        dpfit budget store.
    """
    path, dataset, rho = Path(path), check_dataset(dataset), check_positive(rho, "rho")
    with contextlib.closing(connect(path, create=True)):
        pass
    with transaction(path) as conn:
        row = conn.execute("SELECT total FROM datasets WHERE name = ?", (dataset,)).fetchone()
        if row is not None:
            raise ValueError(
                f"dataset {dataset!r} already has a total of rho = {row[0]:g} in {path}: a "
                "dataset's total is set once (open it with dpfit.Budget.open(path, dataset=...))"
            )
        conn.execute("INSERT INTO datasets VALUES (?, ?, ?)", (dataset, rho, now()))
    return StoredBudget(path, dataset=dataset)


def open_budget(path: str | os.PathLike, *, dataset: str, rho: float | None = None) -> StoredBudget:
    """The stored budget of ``dataset``; with ``rho``, create it on first use.

    ``rho`` must equal the recorded total when the dataset already has one: one total per
    dataset, never raised by reopening with a larger number.

    Examples
    --------
    >>> import tempfile, pathlib, dpfit
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "budget.sqlite"
    >>> budget = dpfit.Budget.open(path, dataset="survey", rho=1.0)
    >>> budget.spend(0.25)
    >>> again = dpfit.Budget.open(path, dataset="survey")     # another session, same total
    >>> again.remaining, [c.rho for c in again.history()]
    (0.75, [0.25])
    """
    path, dataset = Path(path), check_dataset(dataset)
    if rho is None:
        return StoredBudget(path, dataset=dataset)
    rho = check_positive(rho, "rho")
    if path.exists() and dataset in stored_datasets(path):
        budget = StoredBudget(path, dataset=dataset)
        if budget.total != rho:
            raise ValueError(
                f"dataset {dataset!r} already has a total of rho = {budget.total:g} in {path}, "
                f"not {rho:g}: a dataset's total is set once (leave rho out to open it)"
            )
        return budget
    return create_budget(path, dataset=dataset, rho=rho)


def stored_datasets(path: str | os.PathLike) -> dict[str, tuple[float, float]]:
    """Dataset name -> (total, spent) for every dataset in the store."""
    with contextlib.closing(connect(Path(path), create=False)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]
        return {name: total_and_spent(conn, name) for name in names}


def _history(path: Path, dataset: str) -> list[Charge]:
    with contextlib.closing(connect(path, create=False)) as conn:
        total_and_spent(conn, dataset)
        rows = conn.execute(
            "SELECT id, rho, mechanism, created, pid FROM charges WHERE dataset = ? ORDER BY id",
            (dataset,),
        ).fetchall()
        releases: dict[int, list[tuple[str, int, float]]] = defaultdict(list)
        for charge, mechanism, count, rho in conn.execute(
            "SELECT r.charge, r.mechanism, r.count, r.rho FROM releases r "
            "JOIN charges c ON c.id = r.charge WHERE c.dataset = ? ORDER BY r.rowid",
            (dataset,),
        ):
            releases[charge].append((mechanism, count, rho))
    return [
        Charge(id=i, rho=r, mechanism=m, created=t, pid=p, releases=tuple(releases[i]))
        for i, r, m, t, p in rows
    ]
