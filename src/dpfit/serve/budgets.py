"""Charging a release against the analyst's share and the dataset's total, atomically.

A charge is one database transaction that reads the dataset's row and the analyst's share with a
write lock (on PostgreSQL ``SELECT ... FOR NO KEY UPDATE``, the lock an ``UPDATE`` of those rows
takes anyway, and ``FOR SHARE`` on the analyst's row, so that a revocation waits; neither
conflicts with the key-share locks of foreign-key checks, which would deadlock against a plain
``FOR UPDATE``; on SQLite ``BEGIN IMMEDIATE``, see :mod:`dpfit.serve.db`), checks both remaining
amounts in exact integer units (:mod:`dpfit.serve.units`), adds the charge to both and inserts
the release's row, and commits all of it before the fit draws any noise. Concurrent requests
therefore see each other's charges: whatever their order, the charges of a share never exceed
it, and a share never exceeds what the dataset had left to carve (:func:`grant`). If the process
dies after the commit, the charge stands (the release may have been drawn); if it dies before,
nothing was charged and nothing was drawn.

The same rule as :class:`dpfit.Budget`: check, then commit, and on refusal nothing changes.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from . import db
from .fit_request import RequestError
from .units import units_to_rho

__all__ = ["charge", "grant", "locked_dataset"]


def locked_dataset(conn: sa.Connection, dataset_id: int) -> Any:
    """The dataset's row, locked for the rest of the transaction."""
    query = sa.select(db.datasets).where(db.datasets.c.id == dataset_id)
    query = query.with_for_update(key_share=True)
    return conn.execute(query).one()


def _refuse(message: str) -> RequestError:
    return RequestError(409, "budget", message)


def charge(
    conn: sa.Connection, *, analyst_id: int, dataset_id: int, units: int, release: dict[str, Any]
) -> None:
    """Charge ``units`` to the analyst's share and the dataset, and insert ``release``.

    Call inside a write transaction (``engine.begin()``); the caller's commit makes it
    durable. ``release`` is the row of :data:`dpfit.serve.db.releases` to insert with the
    charge (its status ``"charged"``).

    Raises
    ------
    RequestError
        401: the analyst is revoked; 404: they have no share of the dataset; 409: the
        dataset is not open, or the share or the dataset cannot afford ``units``. Nothing
        is changed.
    """
    dataset = locked_dataset(conn, dataset_id)
    analyst = conn.execute(
        sa.select(db.analysts).where(db.analysts.c.id == analyst_id).with_for_update(read=True)
    ).one()
    if analyst.revoked_at is not None:
        raise RequestError(401, "unauthorised", "invalid or revoked token")
    share = conn.execute(
        sa.select(db.shares)
        .where(db.shares.c.analyst_id == analyst_id, db.shares.c.dataset_id == dataset_id)
        .with_for_update(key_share=True)
    ).one_or_none()
    if share is None:
        raise RequestError(404, "not_found", f"no dataset {dataset.name!r}")
    if dataset.status != "open":
        raise RequestError(
            409,
            "dataset_" + dataset.status,
            f"dataset {dataset.name!r} is "
            f"{dataset.status}: the steward is not accepting fits on it",
        )
    if share.spent_units + units > share.total_units:
        left = units_to_rho(share.total_units - share.spent_units)
        raise _refuse(
            f"rho {units_to_rho(units):.6g} exceeds your remaining budget {left:.6g} on "
            f"{dataset.name!r}; nothing was charged"
        )
    if dataset.spent_units + units > dataset.total_units:
        left = units_to_rho(dataset.total_units - dataset.spent_units)
        raise _refuse(
            f"rho {units_to_rho(units):.6g} exceeds the dataset's remaining budget {left:.6g}; "
            "nothing was charged"
        )
    # The WHERE clauses repeat the checks, so the updates can never overspend even if a
    # backend's locking were weaker than documented; a refused update changes no row.
    done = conn.execute(
        sa.update(db.shares)
        .where(
            db.shares.c.id == share.id, db.shares.c.spent_units + units <= db.shares.c.total_units
        )
        .values(spent_units=db.shares.c.spent_units + units)
    ).rowcount
    done += conn.execute(
        sa.update(db.datasets)
        .where(
            db.datasets.c.id == dataset_id,
            db.datasets.c.spent_units + units <= db.datasets.c.total_units,
        )
        .values(spent_units=db.datasets.c.spent_units + units)
    ).rowcount
    if done != 2:
        raise _refuse("the budget changed during the charge; nothing was charged")
    conn.execute(sa.insert(db.releases).values(**release, charged_units=units, status="charged"))


def grant(conn: sa.Connection, *, analyst_id: int, dataset_id: int, units: int) -> None:
    """Add ``units`` to the analyst's share of the dataset, carved from its unallocated total.

    Raises
    ------
    ValueError
        The dataset's total minus its other shares cannot cover ``units``; nothing changes.
    """
    dataset = locked_dataset(conn, dataset_id)
    free = dataset.total_units - dataset.allocated_units
    if units > free:
        raise ValueError(
            f"dataset {dataset.name!r} has rho {units_to_rho(free):.6g} left to share out "
            f"(total {units_to_rho(dataset.total_units):.6g}); asked for "
            f"{units_to_rho(units):.6g}"
        )
    conn.execute(
        sa.update(db.datasets)
        .where(db.datasets.c.id == dataset_id)
        .values(allocated_units=db.datasets.c.allocated_units + units)
    )
    updated = conn.execute(
        sa.update(db.shares)
        .where(db.shares.c.analyst_id == analyst_id, db.shares.c.dataset_id == dataset_id)
        .values(total_units=db.shares.c.total_units + units)
    ).rowcount
    if not updated:
        conn.execute(
            sa.insert(db.shares).values(
                analyst_id=analyst_id, dataset_id=dataset_id, total_units=units, spent_units=0
            )
        )
