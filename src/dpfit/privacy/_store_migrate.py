"""``dpfit budget migrate``: a version 1 budget store rewritten as version 2.

Version 1 kept no running totals, no store identity and no hash chain, and summed the whole
history on every charge. The migration copies every dataset, charge (same ids, amounts,
mechanisms, times and processes) and recorded release into a new version 2 file, computing
the running totals exactly and chaining the rows in id order, then puts it in place of the
old file, which is kept beside it as ``PATH.v1.bak``. A version 1 store did not record which
charge a refund returned part of; its refund rows are marked as migrated and accepted as
they are by ``dpfit budget verify``.

The old file is locked (``BEGIN EXCLUSIVE``) while it is copied, so no writer can change it
meanwhile; stop every process that uses the store first, as one holding the old file open
would go on writing to it after the swap.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import uuid
from pathlib import Path

from ._store_chain import DatasetState, append, dataset_hash, dataset_state, genesis, seal
from ._store_file import FORMAT, create_store, transaction
from ._store_witness import write_witness

__all__ = ["migrate_store"]


def migrate_store(path: str | os.PathLike) -> tuple[int, Path]:
    """Rewrite the version 1 store at ``path`` as version 2; return (charges, backup path).

    Raises
    ------
    ValueError
        ``path`` is not a version 1 dpfit budget store.
    """
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        raise ValueError(f"{path} is not a budget store to migrate (missing or empty)")
    old = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    try:
        old.execute("BEGIN EXCLUSIVE")  # no other writer while it is copied
        meta = dict(old.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != FORMAT or meta.get("version") != "1":
            raise ValueError(
                f"{path} is not a version 1 dpfit budget store (format "
                f"{meta.get('format')!r}, version {meta.get('version')!r}): nothing to migrate"
            )
        datasets = old.execute("SELECT name, total, created FROM datasets ORDER BY name").fetchall()
        charges = old.execute(
            "SELECT id, dataset, rho, mechanism, created, pid FROM charges ORDER BY id"
        ).fetchall()
        releases = old.execute(
            "SELECT charge, mechanism, count, rho FROM releases ORDER BY rowid"
        ).fetchall()
        new = path.with_name(f".{path.name}.{uuid.uuid4().hex}.v2")
        try:
            store_id, head, head_id = _write(new, datasets, charges, releases)
            backup = path.with_name(path.name + ".v1.bak")
            shutil.copy2(path, backup)
            os.replace(new, path)
            with contextlib.suppress(OSError):  # the first charge writes it otherwise
                write_witness(path, store_id, head_id, head, force=True)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(new)
        old.execute("ROLLBACK")
    except sqlite3.DatabaseError:
        raise ValueError(f"{path} is not a readable version 1 dpfit budget store") from None
    finally:
        old.close()
    return len(charges), backup


def _write(new: Path, datasets: list, charges: list, releases: list) -> tuple[str, str, int]:
    """The version 2 store with the old rows, chained in id order; its identity and head."""
    create_store(new, replace_empty=False, witness=False)  # the witness follows the swap
    with transaction(new) as conn:
        store_id = dict(conn.execute("SELECT key, value FROM meta"))["store_id"]
        for name, total, created in datasets:
            digest = dataset_hash(store_id, name, total, created)
            conn.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, '0', NULL, ?)",
                (name, total, created, digest),
            )
        head, head_id = genesis(store_id), 0
        for ident, dataset, rho, mechanism, created, pid in charges:
            row = conn.execute("SELECT spent FROM datasets WHERE name = ?", (dataset,)).fetchone()
            units = int(row[0])
            state = DatasetState(store_id, 0.0, units, head, ident - 1)
            receipt = append(
                conn, state, dataset=dataset, rho=rho, mechanism=mechanism, pid=pid,
                created=created,
            )  # fmt: skip
            head, head_id = receipt.hash, receipt.id
        conn.executemany("INSERT INTO releases VALUES (?, ?, ?, ?)", releases)
        conn.execute("INSERT INTO meta VALUES ('migrated_rows', ?)", (str(head_id),))
        seal(conn, store_id, head)
        for name, *_ in datasets:  # the cheap checks hold for every dataset
            dataset_state(conn, new, name)
    return store_id, head, head_id
