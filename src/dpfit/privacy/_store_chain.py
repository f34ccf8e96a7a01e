"""The hash chain and running totals of a budget store: cheap checks on every use, a full
check on demand.

Every charge row stores the SHA-256 of the previous row's hash and its own content (id,
dataset, rho, mechanism, time, process, the charge a refund returns part of, and the
dataset's exact running total after it); the first row chains to a hash of the store's
random identity. Each dataset row keeps its total under a hash of the store identity, its
running total in exact units of 2^-1074 (a decimal integer), and the id of its last charge.
``meta`` holds the chain's head and a seal (:func:`state_hash`): the hash of the head with
every dataset's running total and last charge, rewritten by every write. So a spend reads the
dataset rows and two charge rows, not the whole history (:func:`dataset_state`), and checks:

* the dataset row's hash (its total was not edited);
* the dataset's last charge: its hash matches its content and its running total is the
  dataset's (an edited or flipped total, amount or running total is refused);
* the chain's head: the newest row is the one ``meta`` names, with that hash (the newest
  rows were not deleted);
* the seal: every dataset's running total and last charge are the ones written with the
  head (``UPDATE datasets SET spent = '0', last = NULL``, or back to an older charge, would
  otherwise give the budget back, and so would newest rows deleted with the head moved back);
* the witness outside the store (:mod:`dpfit.privacy._store_witness`): the store is not
  behind the high-water mark written after its last charge (a restored older copy).

:func:`verify` (``dpfit budget verify``) walks the whole chain: every hash and link, every
running total against the exact sum of the amounts, every refund against its charge, the
seal, and SQLite's own ``integrity_check``. Without a secret key, someone able to write the
file can rebuild a consistent chain and seal: the chain detects damage and edits made without
recomputing it, and the witness a rollback, not a determined forger who also controls the
witness (``docs/threat-model.md``).
"""

from __future__ import annotations

import difflib
import hashlib
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ._store_file import FORMAT, now, read_meta
from ._store_witness import check_witness
from ._units import exact_units

__all__ = [
    "DatasetState",
    "Receipt",
    "StoreReport",
    "append",
    "charge_unchanged",
    "dataset_hash",
    "dataset_state",
    "genesis",
    "row_hash",
    "seal",
    "state_hash",
    "verify",
    "verify_hint",
]

_SEP = "\x1f"  # the ASCII unit separator: no field of a row is allowed to hold it


def _sha(*fields: object) -> str:
    return hashlib.sha256(_SEP.join(map(str, fields)).encode()).hexdigest()


def genesis(store_id: str) -> str:
    """The hash the first charge row chains to: one per store identity."""
    return _sha(FORMAT, store_id)


def dataset_hash(store_id: str, name: str, total: float, created: str) -> str:
    """The hash that binds a dataset's total to its store."""
    return _sha("dataset", store_id, name, float(total).hex(), created)


def row_hash(prev: str, row: tuple) -> str:
    """The hash of a charge row ``(id, dataset, rho, mechanism, created, pid, refund_of,
    spent)`` chained to ``prev``."""
    ident, dataset, rho, mechanism, created, pid, refund_of, spent = row
    refund = "" if refund_of is None else refund_of
    return _sha(prev, ident, dataset, float(rho).hex(), mechanism, created, pid, refund, spent)


_ROW = "id, dataset, rho, mechanism, created, pid, refund_of, spent"


def state_hash(store_id: str, head: str, datasets: list[tuple]) -> str:
    """The seal: the chain's ``head`` with every dataset's ``(name, spent, last)``."""
    rows = sorted((str(n), str(s), "" if last is None else str(last)) for n, s, last in datasets)
    return _sha("state", store_id, head, *(_SEP.join(row) for row in rows))


def _datasets(conn: sqlite3.Connection) -> list[tuple]:
    return conn.execute("SELECT name, spent, last FROM datasets").fetchall()


def seal(conn: sqlite3.Connection, store_id: str, head: str) -> None:
    """Rewrite the seal after a write (inside the caller's write transaction)."""
    digest = state_hash(store_id, head, _datasets(conn))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('state', ?)", (digest,))


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a charge's owner remembers to tie a later refund to it."""

    store_id: str
    id: int
    hash: str
    rho: float


@dataclass(frozen=True, slots=True)
class DatasetState:
    """A dataset's checked state: its total, exact running total and the chain's head."""

    store_id: str
    total: float
    units: int
    head: str
    head_id: int


def verify_hint(path: Path) -> str:
    """The end of a damaged store's message: where to check it (``dpfit budget verify``
    leaves it out of its own report)."""
    return f"; run dpfit budget verify {path}"


def _damaged(path: Path, what: str) -> ValueError:
    return ValueError(
        f"budget store {path} failed its integrity check ({what}): it was changed outside "
        f"dpfit or damaged, so it is not used{verify_hint(path)}"
    )


def _known(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]


def _no_budget(dataset: str, known: list[str]) -> str:
    """The refusal of a dataset the store lacks: a near miss is named, and a new total is
    offered last, since a second total for the same data would add to what they can lose."""
    create = f"dpfit budget create PATH --dataset {dataset} --rho TOTAL"
    if not known:
        return f"dataset {dataset!r} has no budget in this store; create it with {create}"
    lowered = [k.lower() for k in known]
    close = difflib.get_close_matches(dataset.lower(), lowered, n=1)
    guess = f"; did you mean {known[lowered.index(close[0])]!r}?" if close else ""
    return (
        f"dataset {dataset!r} has no budget in this store (it has {known}{guess}): if these "
        "are the data of one of those, name it with --dataset (dataset= in Python), since a "
        "second total for the same data adds to what they can lose; otherwise create it with "
        f"{create}"
    )


def dataset_state(conn: sqlite3.Connection, path: Path, dataset: str) -> DatasetState:
    """The dataset's total and running total after the cheap checks (module docstring)."""
    meta = read_meta(conn, path)
    store_id = meta["store_id"]
    row = conn.execute(
        "SELECT total, created, spent, last, hash FROM datasets WHERE name = ?", (dataset,)
    ).fetchone()
    if row is None:
        raise ValueError(_no_budget(dataset, _known(conn)))
    total, created, spent, last, stored = row
    if dataset_hash(store_id, dataset, total, created) != stored:
        raise _damaged(path, f"the total of dataset {dataset!r} does not match its hash")
    try:
        units = int(spent)
    except (TypeError, ValueError):
        raise _damaged(path, f"the running total of dataset {dataset!r} is not a number") from None
    if last is None and units != 0:
        raise _damaged(path, f"dataset {dataset!r} has a running total but no charges")
    last_hash = None if last is None else _check_row(conn, path, last, dataset, spent)
    head, head_id = meta["head"], int(meta["head_id"])
    newest = conn.execute("SELECT max(id) FROM charges").fetchone()[0] or 0
    if head_id:
        newest_hash = last_hash if head_id == last else _check_row(conn, path, head_id)
    else:
        newest_hash = genesis(store_id)
    if newest != head_id or newest_hash != head:
        raise _damaged(path, "the newest charge is not the head of the chain")
    if "state" not in meta:  # written before the seal: the full check, until a write seals it
        verify(conn, path)
    elif state_hash(store_id, head, _datasets(conn)) != meta["state"]:
        raise _damaged(path, "the datasets' running totals are not the ones sealed with the head")
    check_witness(conn, path, store_id, head_id, head)
    return DatasetState(store_id, float(total), units, head, head_id)


def _check_row(
    conn: sqlite3.Connection,
    path: Path,
    ident: int,
    dataset: str | None = None,
    spent: str | None = None,
) -> str:
    """Recompute row ``ident``'s hash (returned); with ``dataset``, check that the row is
    that dataset's and that its running total is ``spent``."""
    row = conn.execute(f"SELECT {_ROW}, prev, hash FROM charges WHERE id = ?", (ident,)).fetchone()
    if row is None:
        raise _damaged(path, f"charge #{ident} is missing")
    *content, prev, stored = row
    if row_hash(prev, tuple(content)) != stored:
        raise _damaged(path, f"charge #{ident} does not match its hash")
    if dataset is not None and (content[1] != dataset or content[7] != spent):
        raise _damaged(path, f"the running total of dataset {dataset!r} is not its last charge's")
    return stored


def append(
    conn: sqlite3.Connection,
    state: DatasetState,
    *,
    dataset: str,
    rho: float,
    mechanism: str,
    pid: int,
    refund_of: int | None = None,
    created: str | None = None,
) -> Receipt:
    """Append one charge (or refund, ``rho`` < 0) to the chain, inside the caller's write
    transaction, and move the dataset's running total and the chain's head (``created``:
    the row's time, now unless given)."""
    ident = state.head_id + 1
    spent = str(state.units + exact_units(rho))
    when = now() if created is None else created
    content = (ident, dataset, rho, mechanism.replace(_SEP, " "), when, pid, refund_of, spent)
    digest = row_hash(state.head, content)
    conn.execute(
        f"INSERT INTO charges ({_ROW}, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*content, state.head, digest),
    )
    conn.execute("UPDATE datasets SET spent = ?, last = ? WHERE name = ?", (spent, ident, dataset))
    conn.executemany(
        "UPDATE meta SET value = ? WHERE key = ?", [(digest, "head"), (str(ident), "head_id")]
    )
    seal(conn, state.store_id, digest)
    return Receipt(state.store_id, ident, digest, rho)


def charge_unchanged(conn: sqlite3.Connection, receipt: Receipt, store_id: str) -> str | None:
    """Why a refund of ``receipt``'s charge must be refused, or None when it may go ahead.

    The store must be the one charged (its identity), and the charge's row must still be
    there with the hash it was written with (not replaced by another store or a restored
    copy in which it is missing or different).
    """
    if store_id != receipt.store_id:
        return "the file is no longer the store that was charged (another store identity)"
    row = conn.execute("SELECT hash FROM charges WHERE id = ?", (receipt.id,)).fetchone()
    if row is None or row[0] != receipt.hash:
        return f"charge #{receipt.id} is no longer in the store as it was written"
    return None


@dataclass(frozen=True, slots=True)
class StoreReport:
    """What :func:`verify` checked: rows, datasets and the chain's head."""

    rows: int
    datasets: int
    head: str


def verify(conn: sqlite3.Connection, path: Path) -> StoreReport:
    """Check the whole store; raise ``ValueError`` naming the first problem found."""
    if conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
        raise _damaged(path, "SQLite's integrity_check failed")
    meta = read_meta(conn, path)
    store_id, migrated = meta["store_id"], int(meta.get("migrated_rows", "0"))
    datasets = {}
    for name, total, created, spent, last, stored in conn.execute(
        "SELECT name, total, created, spent, last, hash FROM datasets"
    ):
        if dataset_hash(store_id, name, total, created) != stored:
            raise _damaged(path, f"the total of dataset {name!r} does not match its hash")
        datasets[name] = (spent, last)
    running: dict[str, int] = defaultdict(int)
    lasts: dict[str, int] = {}
    charged: dict[int, tuple[str, int]] = {}  # charge id -> (dataset, units not yet refunded)
    prev, rows, last_id = genesis(store_id), 0, 0
    for *content, row_prev, stored in conn.execute(
        f"SELECT {_ROW}, prev, hash FROM charges ORDER BY id"
    ):
        ident, dataset, rho, _, _, _, refund_of, spent = content
        if row_prev != prev or row_hash(prev, tuple(content)) != stored:
            raise _damaged(path, f"charge #{ident} breaks the hash chain")
        if dataset not in datasets:
            raise _damaged(path, f"charge #{ident} is of an unknown dataset")
        units = exact_units(float(rho))
        running[dataset] += units
        if str(running[dataset]) != spent or running[dataset] < 0:
            raise _damaged(path, f"the running total after charge #{ident} is not the sum")
        _check_refund(path, charged, ident, dataset, units, refund_of, ident <= migrated)
        prev, rows, last_id, lasts[dataset] = stored, rows + 1, ident, ident
    if (prev, str(last_id)) != (meta["head"], meta["head_id"]):
        raise _damaged(path, "the chain's head is not its newest charge")
    for name, (spent, last) in datasets.items():
        if spent != str(running[name]) or last != lasts.get(name):
            raise _damaged(path, f"the running total of dataset {name!r} is not the sum")
    if "state" in meta and state_hash(store_id, prev, _datasets(conn)) != meta["state"]:
        raise _damaged(path, "the datasets' running totals are not the ones sealed with the head")
    orphans = conn.execute(
        "SELECT count(*) FROM releases WHERE charge NOT IN (SELECT id FROM charges)"
    ).fetchone()[0]
    if orphans:
        raise _damaged(path, f"{orphans} recorded releases belong to no charge")
    return StoreReport(rows=rows, datasets=len(datasets), head=prev)


def _check_refund(
    path: Path,
    charged: dict[int, tuple[str, int]],
    ident: int,
    dataset: str,
    units: int,
    refund_of: int | None,
    migrated: bool,
) -> None:
    """A charge is > 0; a refund is < 0 and returns at most what its own charge has left."""
    if units > 0 and refund_of is None:
        charged[ident] = (dataset, units)
        return
    if units < 0 and refund_of is None and migrated:
        return  # a version 1 store did not record which charge a refund returned
    if units < 0 and refund_of in charged and charged[refund_of][0] == dataset:
        left = charged[refund_of][1] + units
        if left >= 0:
            charged[refund_of] = (dataset, left)
            return
    raise _damaged(path, f"charge #{ident} is not a charge or a refund of one")
