"""The SQLite file behind :mod:`dpfit.privacy.store`: schema, creation and connections.

One store file (format version 2) holds a ``meta`` table (format, version, the store's
random identity, the head of the hash chain and its seal), one row per dataset (its total, its exact
running total and the id of its last charge), the append-only ``charges`` (refunds are
negative rows tied to the charge they return part of) and the ``releases`` recorded with a
reservation. Every write runs in a ``BEGIN IMMEDIATE`` transaction
(https://www.sqlite.org/lang_transaction.html), so concurrent processes are serialised; the
hash chain and its checks are in :mod:`dpfit.privacy._store_chain`.

A new store is built under a temporary name and linked into place (``os.link`` fails if
the name exists), so a store is never seen half made, and any number of threads or
processes may create the same store on first use. An existing file that is empty (0 bytes,
a truncated store) or missing is never taken for a new store unless the caller is
explicitly creating one. Whoever makes a new store also starts its witness
(:mod:`dpfit.privacy._store_witness`), replacing one a deleted store at that path left.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._validation import shown

__all__ = [
    "FORMAT",
    "VERSION",
    "check_dataset",
    "connect",
    "create_store",
    "now",
    "read_meta",
    "snapshot",
    "transaction",
]

FORMAT = "dpfit-budget-store"
VERSION = "2"
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE datasets (name TEXT PRIMARY KEY, "
    "total REAL NOT NULL CHECK (total > 0), created TEXT NOT NULL, "
    "spent TEXT NOT NULL, last INTEGER, hash TEXT NOT NULL)",
    "CREATE TABLE charges (id INTEGER PRIMARY KEY, "
    "dataset TEXT NOT NULL REFERENCES datasets (name), rho REAL NOT NULL, "
    "mechanism TEXT NOT NULL, created TEXT NOT NULL, pid INTEGER NOT NULL, "
    "refund_of INTEGER REFERENCES charges (id), spent TEXT NOT NULL, "
    "prev TEXT NOT NULL, hash TEXT NOT NULL)",
    "CREATE INDEX charges_refund_of ON charges (refund_of)",
    "CREATE TABLE releases (charge INTEGER NOT NULL REFERENCES charges (id), "
    "mechanism TEXT NOT NULL, count INTEGER NOT NULL, rho REAL NOT NULL)",
)
_TIMEOUT = 60.0  # seconds a transaction waits for another process's write lock
#: The connection factory; tests replace it to inject faults (``tests/privacy``).
_sqlite_connect = sqlite3.connect


def now() -> str:
    """The UTC time a row is written, to the second (ISO 8601)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def check_dataset(dataset: Any) -> str:
    """A dataset's name, stripped; anything but a non-empty string is refused."""
    if not isinstance(dataset, str) or not dataset.strip():
        raise TypeError(f"dataset must be a non-empty string naming the data, got {shown(dataset)}")
    return dataset.strip()


def _missing(path: Path) -> ValueError:
    return ValueError(
        f"budget store {path} does not exist: create it with dpfit budget create {path} "
        "--dataset NAME --rho TOTAL (or dpfit.Budget.open(path, dataset=..., rho=...))"
    )


def _empty(path: Path) -> ValueError:
    return ValueError(
        f"budget store {path} is an empty file (0 bytes): a truncated store, not a new one, "
        "so it is refused rather than read as a store with nothing spent; restore it from a "
        f"backup, or delete it and run dpfit budget create {path} --dataset NAME --rho TOTAL"
    )


def connect(path: Path) -> sqlite3.Connection:
    """A connection to an existing dpfit budget store of this format version.

    A missing or empty file, a directory, a file that is not SQLite and an SQLite file
    that is not a store are refused with a ``ValueError`` naming the path.
    """
    if path.is_dir():
        raise ValueError(f"budget store {path} is a directory, not a file")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise _missing(path) from None
    if size == 0:
        raise _empty(path)
    conn = _sqlite_connect(path, timeout=_TIMEOUT, isolation_level=None)
    try:
        read_meta(conn, path)
    except sqlite3.DatabaseError:
        conn.close()
        raise ValueError(
            f"{path} is not a dpfit budget store (not a readable SQLite database, or damaged); "
            "give the path of a store made by dpfit budget create"
        ) from None
    except BaseException:
        conn.close()
        raise
    return conn


def read_meta(conn: sqlite3.Connection, path: Path) -> dict[str, str]:
    """The store's ``meta`` table, after checking the format and the version."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    if meta.get("format") != FORMAT or not {"datasets", "charges", "releases"} <= tables:
        raise ValueError(
            f"{path} is an SQLite database but not a dpfit budget store: refusing to write to it"
        )
    if meta.get("version") != VERSION:
        hint = (
            f"; stop every process using it and run dpfit budget migrate {path}"
            if meta.get("version") == "1"
            else ""
        )
        raise ValueError(
            f"{path} is a dpfit budget store of format version {meta.get('version')}, this "
            f"dpfit reads version {VERSION}{hint}"
        )
    if not {"store_id", "head", "head_id"} <= meta.keys():
        raise ValueError(f"budget store {path} is damaged: its identity or chain head is missing")
    return meta


@contextlib.contextmanager
def transaction(path: Path) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on any error)."""
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()


@contextlib.contextmanager
def snapshot(path: Path) -> Iterator[sqlite3.Connection]:
    """A read transaction: every row read inside it is from one committed state."""
    with contextlib.closing(connect(path)) as conn:
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")


def create_store(path: Path, *, replace_empty: bool, witness: bool = True) -> None:
    """Make a new, empty store at ``path`` unless one is already there.

    The store is built in memory, written under a temporary name in the same directory and
    linked to ``path`` in one step, which fails if ``path`` exists: racing creators all
    succeed, and whoever links first made the store the others then open. An empty file at
    ``path`` is replaced only when ``replace_empty`` (``dpfit budget create``); otherwise it
    is refused. With ``witness``, the creator that made the store writes its witness (a new
    store has no charges; a witness left by an older store at ``path`` is replaced).
    """
    empty = path.exists()  # decided once: another creator may link a store meanwhile
    if empty:
        if not (path.is_file() and path.stat().st_size == 0):
            return  # a store (or something the caller's connect will refuse)
        if not replace_empty:
            raise _empty(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.new")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:  # name the store the user gave, not the temporary file
        from ..exceptions import BudgetStoreError

        raise BudgetStoreError(
            f"cannot create the budget store {path}: {exc.strerror or type(exc).__name__} "
            f"(a new store is written in its directory {path.parent}; choose a writable one)"
        ) from exc
    image, store_id = _new_image()
    with open(fd, "wb") as out:
        out.write(image)
        out.flush()
        os.fsync(out.fileno())
    try:
        if empty:  # an empty file, and replace_empty: this is dpfit budget create
            os.replace(tmp, path)
            made = True
        else:
            made = _link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    if made and witness:
        from ._store_chain import genesis
        from ._store_witness import write_witness

        try:
            write_witness(path, store_id, 0, genesis(store_id), force=True)
        except OSError as exc:
            from ._stored_budget import warn_witness

            warn_witness(path, exc)


def _new_image() -> tuple[bytes, str]:
    """The bytes of a new, empty store with a fresh identity (and the identity), built in
    memory: SQLite never opens the temporary file, whose inode a racing creator's may reuse."""
    from ._store_chain import genesis, state_hash

    store_id = uuid.uuid4().hex
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for statement in _SCHEMA:
            conn.execute(statement)
        head = genesis(store_id)
        meta = {"format": FORMAT, "version": VERSION, "store_id": store_id}
        meta |= {"created": now(), "head": head, "head_id": "0"}
        meta["state"] = state_hash(store_id, head, [])
        conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        return conn.serialize(), store_id
    finally:
        conn.close()


def _link(tmp: Path, path: Path) -> bool:
    """Put ``tmp`` at ``path`` in one step, unless something is there already; whether it
    was put there."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False  # another creator won: its store is the one
    except OSError:  # no hard links on this file system: create exclusively, then fill
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return False
        with open(fd, "wb") as out:
            out.write(tmp.read_bytes())
            out.flush()
            os.fsync(out.fileno())
    return True
