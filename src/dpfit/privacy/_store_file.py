"""The SQLite file behind :mod:`dpfit.privacy.store`: schema, connections, exact sums.

One store file holds a ``meta`` table (format and version, checked on every connection),
one total per dataset, the append-only ``charges`` (refunds are negative rows) and the
``releases`` recorded with a reservation. Every write runs in a ``BEGIN IMMEDIATE``
transaction (https://www.sqlite.org/lang_transaction.html), so concurrent processes are
serialised. Sums of charges are exact, in units of 2^-1074 like :class:`~dpfit.Budget`'s,
and a stored float is rounded in the direction that never understates what was drawn.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from .budget import RELATIVE_TOLERANCE, exact_units, units_to_float

__all__ = [
    "affordable",
    "check_dataset",
    "connect",
    "float_at_least",
    "float_at_most",
    "now",
    "total_and_spent",
    "total_and_units",
    "transaction",
]


_FORMAT = "dpfit-budget-store"
_VERSION = "1"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS datasets (name TEXT PRIMARY KEY, "
    "total REAL NOT NULL CHECK (total > 0), created TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "dataset TEXT NOT NULL REFERENCES datasets (name), rho REAL NOT NULL, "
    "mechanism TEXT NOT NULL, created TEXT NOT NULL, pid INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS releases (charge INTEGER NOT NULL REFERENCES charges (id), "
    "mechanism TEXT NOT NULL, count INTEGER NOT NULL, rho REAL NOT NULL)",
)
_TIMEOUT = 60.0  # seconds a transaction waits for another process's write lock


def now() -> str:
    """The UTC time a row is written, to the second (ISO 8601)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def check_dataset(dataset: Any) -> str:
    """A dataset's name, stripped; anything but a non-empty string is refused."""
    if not isinstance(dataset, str) or not dataset.strip():
        raise TypeError(f"dataset must be a non-empty string naming the data, got {dataset!r}")
    return dataset.strip()


def connect(path: Path, *, create: bool) -> sqlite3.Connection:
    """A connection to a dpfit budget store; a missing, corrupt or foreign file is refused."""
    if not path.exists() and not create:
        raise ValueError(
            f"budget store {path} does not exist: create it with dpfit budget create {path} "
            "--dataset NAME --rho TOTAL (or dpfit.Budget.open(path, dataset=..., rho=...))"
        )
    if path.is_dir():
        raise ValueError(f"budget store {path} is a directory, not a file")
    new = not path.exists() or path.stat().st_size == 0
    conn = sqlite3.connect(path, timeout=_TIMEOUT, isolation_level=None)
    try:
        if new:  # create the schema atomically (another process may be doing the same)
            conn.execute("BEGIN IMMEDIATE")
            if not conn.execute("SELECT name FROM sqlite_master").fetchall():
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.executemany(
                    "INSERT INTO meta VALUES (?, ?)", [("format", _FORMAT), ("version", _VERSION)]
                )
            conn.execute("COMMIT")
        _check_format(conn, path)
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


def _check_format(conn: sqlite3.Connection, path: Path) -> None:
    if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
        raise sqlite3.DatabaseError("quick_check failed")
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    if meta.get("format") != _FORMAT or not {"datasets", "charges", "releases"} <= tables:
        raise ValueError(
            f"{path} is an SQLite database but not a dpfit budget store: refusing to write to it"
        )
    if meta.get("version") != _VERSION:
        raise ValueError(
            f"{path} is a dpfit budget store of format version {meta.get('version')}, this dpfit "
            f"reads version {_VERSION}"
        )


@contextlib.contextmanager
def transaction(path: Path) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on any error)."""
    conn = connect(path, create=False)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()


def total_and_spent(conn: sqlite3.Connection, dataset: str) -> tuple[float, float]:
    """The dataset's total and spent rho (refunds netted, never below 0) as floats."""
    total, units = total_and_units(conn, dataset)
    return total, max(0.0, units_to_float(units))


def total_and_units(conn: sqlite3.Connection, dataset: str) -> tuple[float, int]:
    """The dataset's total, and the exact sum of its charges in units of 2^-1074."""
    row = conn.execute("SELECT total FROM datasets WHERE name = ?", (dataset,)).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]
        raise ValueError(
            f"dataset {dataset!r} has no budget in this store (it has {known}); create it with "
            f"dpfit budget create PATH --dataset {dataset} --rho TOTAL"
        )
    rows = conn.execute("SELECT rho FROM charges WHERE dataset = ?", (dataset,))
    return float(row[0]), sum(exact_units(float(r[0])) for r in rows)


def affordable(total: float, spent_units: int, rho: float) -> bool:
    """Exactly as :meth:`Budget.can_afford`: spent + rho <= total (1 + RELATIVE_TOLERANCE)."""
    limit = Fraction(total) * (1 + Fraction(RELATIVE_TOLERANCE))
    return Fraction(spent_units + exact_units(rho), 1 << 1074) <= limit


def float_at_most(units: int) -> float:
    """The float nearest to ``units`` * 2^-1074, rounded down if nearest is above it."""
    value = units_to_float(units)
    return math.nextafter(value, 0.0) if exact_units(value) > units else value


def float_at_least(units: int) -> float:
    """The float nearest to ``units`` * 2^-1074, rounded up if nearest is below it."""
    value = units_to_float(units)
    return math.nextafter(value, math.inf) if exact_units(value) < units else value
