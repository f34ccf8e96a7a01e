"""A privacy budget that persists in SQLite: one total per dataset, shared across processes.

``dpfit.Budget.open(path, dataset="card", rho=1.0)`` (or :func:`open_budget`) creates the
dataset's total in the file on first use and opens it afterwards; ``dpfit budget create |
show | history | verify | migrate`` manage it from the shell and ``--budget-store PATH``
charges a fit to it.

Every charge is one SQLite transaction that starts with ``BEGIN IMMEDIATE`` (the write lock
is taken before the running total is read), checks the total exactly and appends the charge
to a hash chain (:mod:`dpfit.privacy._store_chain`), and commits before anything is drawn
(https://www.sqlite.org/lang_transaction.html): processes racing to spend are serialised and
can never overspend, and a process killed after the commit leaves its charge recorded. A
charge reads two rows, whatever the length of the history.

A fit run through :meth:`StoredBudget.reserve` (as ``dpfit.ols`` and the command line do)
reserves its whole rho in one transaction, spends it in memory, and when it ends records its
releases (mechanism, count, rho) and returns the part it did not draw. A reservation belongs
to the thread (and process) that opened it: other threads, and a forked child, charge the
store directly. Refunds are tied to their charge: the store's random identity and the
charge's row, as written, must still be there, or nothing is refunded. When the store
cannot be written at the end, the whole reservation stays charged, a
:class:`~dpfit.exceptions.BudgetStoreWarning` says so, and the caller still gets the result.

Every open and charge also checks the seal that ties the datasets' running totals to the
chain's head, and compares the store with its witness, a high-water mark kept outside it
(:mod:`dpfit.privacy._store_witness`): a store rolled back (an older copy restored) is
refused until ``dpfit budget verify PATH --accept-rollback`` accepts it.

Unlike an in-memory :class:`~dpfit.Budget`, a stored budget may be pickled or inherited by
a forked child: the copy reopens the same file and spends from the same total.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from .._validation import check_positive
from ._store_chain import StoreReport, dataset_hash, dataset_state, seal, verify
from ._store_file import check_dataset, create_store, now, read_meta, snapshot, transaction
from ._store_witness import check_witness, write_witness
from ._stored_budget import Charge, StoredBudget
from ._units import units_to_float

__all__ = [
    "Charge",
    "StoredBudget",
    "create_budget",
    "open_budget",
    "stored_datasets",
    "verify_store",
]


def _add_dataset(conn: sqlite3.Connection, path: Path, dataset: str, rho: float) -> float:
    """Insert ``dataset`` with total ``rho`` unless it exists; return its total."""
    row = conn.execute("SELECT total FROM datasets WHERE name = ?", (dataset,)).fetchone()
    if row is not None:
        return float(row[0])
    created = now()
    meta = read_meta(conn, path)
    digest = dataset_hash(meta["store_id"], dataset, rho, created)
    conn.execute(
        "INSERT INTO datasets VALUES (?, ?, ?, '0', NULL, ?)", (dataset, rho, created, digest)
    )
    seal(conn, meta["store_id"], meta["head"])
    return rho


def create_budget(path: str | os.PathLike, *, dataset: str, rho: float) -> StoredBudget:
    """Record the total ``rho`` of ``dataset`` in the store at ``path`` (created if needed;
    an empty file there is made a new store).

    Raises
    ------
    ValueError
        The dataset already has a total (a total is fixed once set), or the file is not a
        dpfit budget store.
    """
    path, dataset, rho = Path(path), check_dataset(dataset), check_positive(rho, "rho")
    create_store(path, replace_empty=True)
    with transaction(path) as conn:
        row = conn.execute("SELECT total FROM datasets WHERE name = ?", (dataset,)).fetchone()
        if row is not None:
            raise ValueError(
                f"dataset {dataset!r} already has a total of rho = {row[0]:g} in {path}: a "
                "dataset's total is set once (open it with dpfit.Budget.open(path, dataset=...))"
            )
        _add_dataset(conn, path, dataset, rho)
    return StoredBudget(path, dataset=dataset)


def open_budget(path: str | os.PathLike, *, dataset: str, rho: float | None = None) -> StoredBudget:
    """The stored budget of ``dataset``; with ``rho``, create it on first use.

    ``rho`` must equal the recorded total when the dataset already has one: one total per
    dataset, never raised by reopening with a larger number. Creating on first use is
    atomic: any number of threads or processes may open the same new store at once. A
    missing file is created only when ``rho`` is given; an empty (0-byte) file is refused.

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
    create_store(path, replace_empty=False)
    with snapshot(path) as conn:
        row = conn.execute("SELECT total FROM datasets WHERE name = ?", (dataset,)).fetchone()
    if row is None:
        with transaction(path) as conn:
            total = _add_dataset(conn, path, dataset, rho)
    else:
        total = float(row[0])
    if total != rho:
        raise ValueError(
            f"dataset {dataset!r} already has a total of rho = {total:g} in {path}, "
            f"not {rho:g}: a dataset's total is set once (leave rho out to open it)"
        )
    return StoredBudget(path, dataset=dataset)


def stored_datasets(path: str | os.PathLike) -> dict[str, tuple[float, float]]:
    """Dataset name -> (total, spent) for every dataset in the store (each checked)."""
    path = Path(path)
    with snapshot(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]
        states = {name: dataset_state(conn, path, name) for name in names}
    return {name: (s.total, max(0.0, units_to_float(s.units))) for name, s in states.items()}


def verify_store(path: str | os.PathLike, *, accept_rollback: bool = False) -> StoreReport:
    """Check the whole store: the hash chain, every running total and refund, the seal,
    SQLite's integrity check, and that the store is not behind its witness (``dpfit budget
    verify``; :mod:`dpfit.privacy._store_witness`).

    ``accept_rollback=True`` (``--accept-rollback``) accepts a store that is consistent but
    behind or other than its witness (a backup restored on purpose): the witness is rewritten
    to the store as it is, and what was spent since the backup is given back for good.

    Raises
    ------
    ValueError
        The first problem found, in one line.
    BudgetStoreError
        The store is behind its witness (a rollback), and ``accept_rollback`` is False.
    """
    path = Path(path)
    with snapshot(path) as conn:
        report = verify(conn, path)
        meta = read_meta(conn, path)
        if not accept_rollback:
            check_witness(conn, path, meta["store_id"], int(meta["head_id"]), report.head)
    if accept_rollback:
        write_witness(path, meta["store_id"], int(meta["head_id"]), report.head, force=True)
    return report
