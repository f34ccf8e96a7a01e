"""The steward's actions: register datasets, create analysts and their shares, revoke, pause.

The command line (``dpfit serve dataset|analyst ...``), the admin API and the admin page all
call these functions, so each rule is written once. Every action is recorded in the audit
log's events. Errors are for the steward, who holds the data: a registration refused because
a column has values that are not numbers says which column and how many.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from .._validation import check_delta, check_rho
from . import db
from .budgets import grant
from .data import file_sha256, read_dataset
from .schema import read_schema_file
from .site import Site, now
from .tokens import new_token, token_hash
from .units import total_units, units_to_rho

__all__ = [
    "STATUSES",
    "create_analyst",
    "grant_share",
    "record_event",
    "register_dataset",
    "revoke_analyst",
    "set_dataset_status",
]

#: A dataset's states: fits run only on an open one; a closed one never reopens.
STATUSES = ("open", "paused", "closed")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(
            f"{what} name must be 1 to 64 letters, digits, '_', '.' or '-', starting with a "
            f"letter or digit, got {value!r}"
        )
    return value


def record_event(conn: sa.Connection, action: str, detail: str) -> None:
    """Append one steward action to the audit log."""
    conn.execute(sa.insert(db.events).values(at=now(), action=action, detail=detail))


def _row(conn: sa.Connection, table: sa.Table, name: str, what: str) -> Any:
    row = conn.execute(sa.select(table).where(table.c.name == name)).one_or_none()
    if row is None:
        raise ValueError(f"no {what} named {name!r}")
    return row


def register_dataset(
    site: Site,
    name: str,
    *,
    data: str | Path,
    schema: str | Path,
    rho: float | None = None,
    delta: float | None = None,
) -> dict[str, Any]:
    """Register a data file with its public schema and total budget.

    Parameters
    ----------
    name : str
        The name analysts use.
    data : path
        A CSV or Parquet file, read now and on first use by each server process; its
        SHA-256 is recorded, and a changed file is never fitted.
    schema : path
        The public schema (:mod:`dpfit.serve.schema`).
    rho, delta : float, optional
        Total zCDP budget and the delta of (epsilon, delta) statements; default to the
        schema file's ``rho`` and ``delta``. delta must be below 1/n.

    Returns
    -------
    dict
        name, n, rho, delta and the file's SHA-256.
    """
    name = _name(name, "dataset")
    parsed, defaults = read_schema_file(schema)
    rho = defaults.get("rho") if rho is None else rho
    delta = defaults.get("delta") if delta is None else delta
    if rho is None or delta is None:
        raise ValueError("give the dataset's total rho and delta (options or schema file keys)")
    rho = check_rho(rho, "rho", warn=False)
    path = Path(data).resolve()
    if not path.is_file():
        raise ValueError(f"data file not found: {path}")
    sha256 = file_sha256(path)  # before reading: a later change is caught on loading
    frame = read_dataset(path, parsed)
    n = len(frame)
    delta = check_delta(delta)
    if not delta < 1.0 / n:
        raise ValueError(f"delta must be below 1/n = {1.0 / n:.3g} for n = {n} records")
    units = total_units(rho)
    with site.engine.begin() as conn:
        taken = conn.execute(sa.select(db.datasets.c.id).where(db.datasets.c.name == name))
        if taken.first() is not None:
            raise ValueError(f"a dataset named {name!r} is already registered")
        conn.execute(
            sa.insert(db.datasets).values(
                name=name,
                data_path=str(path),
                data_sha256=sha256,
                schema_json=parsed.to_json(),
                n=n,
                delta=delta,
                total_units=units,
                allocated_units=0,
                spent_units=0,
                status="open",
                created_at=now(),
            )
        )
        record_event(
            conn,
            "dataset-registered",
            f"{name}: {path} (sha256 {sha256}), n = {n}, rho = {rho:g}, delta = {delta:g}",
        )
    return {"name": name, "n": n, "rho": units_to_rho(units), "delta": delta, "sha256": sha256}


def create_analyst(site: Site, name: str) -> str:
    """Create an analyst and return their token (shown once: only its hash is kept)."""
    name = _name(name, "analyst")
    token = new_token()
    with site.engine.begin() as conn:
        taken = conn.execute(sa.select(db.analysts.c.id).where(db.analysts.c.name == name))
        if taken.first() is not None:
            raise ValueError(f"an analyst named {name!r} exists already")
        conn.execute(
            sa.insert(db.analysts).values(
                name=name, token_sha256=token_hash(token), created_at=now()
            )
        )
        record_event(conn, "analyst-created", name)
    return token


def grant_share(site: Site, analyst: str, dataset: str, rho: float) -> None:
    """Give ``analyst`` ``rho`` more of ``dataset``'s budget (from its unallocated total)."""
    rho = check_rho(rho, "rho", warn=False)
    with site.engine.begin() as conn:
        who = _row(conn, db.analysts, analyst, "analyst")
        if who.revoked_at is not None:
            raise ValueError(f"analyst {analyst!r} is revoked")
        what = _row(conn, db.datasets, dataset, "dataset")
        grant(conn, analyst_id=who.id, dataset_id=what.id, units=total_units(rho))
        record_event(conn, "share-granted", f"{analyst} on {dataset}: rho {rho:g}")


def revoke_analyst(site: Site, analyst: str) -> None:
    """Revoke ``analyst``'s token and sessions; their releases stay in the audit log."""
    with site.engine.begin() as conn:
        who = _row(conn, db.analysts, analyst, "analyst")
        if who.revoked_at is None:
            conn.execute(
                sa.update(db.analysts).where(db.analysts.c.id == who.id).values(revoked_at=now())
            )
        conn.execute(sa.delete(db.sessions).where(db.sessions.c.analyst_id == who.id))
        record_event(conn, "analyst-revoked", analyst)


def set_dataset_status(site: Site, dataset: str, status: str) -> None:
    """Open, pause or close ``dataset`` (a closed dataset stays closed)."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {list(STATUSES)}, got {status!r}")
    with site.engine.begin() as conn:
        row = _row(conn, db.datasets, dataset, "dataset")
        if row.status == "closed" and status != "closed":
            raise ValueError(f"dataset {dataset!r} is closed and cannot be reopened")
        conn.execute(sa.update(db.datasets).where(db.datasets.c.id == row.id).values(status=status))
        record_event(conn, f"dataset-{status}", dataset)
