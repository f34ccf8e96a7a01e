"""What an analyst may read: their datasets' public schemas, their budgets, their releases.

Every query here is filtered by the analyst's id, so an analyst can read only their own
shares and releases; a dataset they have no share of and a release of someone else are
reported exactly as one that does not exist (404), so ids and names cannot be probed. No view
ever holds a data value: a dataset's view is its public schema, its public n and the
budget, a release's view is the charged release.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from . import db
from .fit_request import RequestError
from .schema import PublicSchema, parse_schema
from .site import Site
from .units import units_to_rho

__all__ = ["dataset_row", "dataset_views", "history", "not_found", "release_view", "schema_of"]

#: How many releases :func:`history` lists, newest first.
HISTORY_LIMIT = 200


def not_found(what: str) -> RequestError:
    """The one answer for what does not exist or is not the analyst's."""
    return RequestError(404, "not_found", f"no {what}")


def schema_of(row: Any) -> PublicSchema:
    """The public schema stored with a dataset's row."""
    return parse_schema(json.loads(row.schema_json))


def _visible(analyst_id: int) -> sa.Select:
    return (
        sa.select(
            db.datasets,
            db.shares.c.total_units.label("share_total"),
            db.shares.c.spent_units.label("share_spent"),
        )
        .join(db.shares, db.shares.c.dataset_id == db.datasets.c.id)
        .where(db.shares.c.analyst_id == analyst_id)
    )


def dataset_row(conn: sa.Connection, analyst_id: int, name: str) -> Any:
    """The dataset ``name`` with the analyst's share, or 404 if they have none."""
    row = conn.execute(_visible(analyst_id).where(db.datasets.c.name == name)).one_or_none()
    if row is None:
        raise not_found(f"dataset {name!r}"[:80])
    return row


def _dataset(row: Any) -> dict[str, Any]:
    return {
        "name": row.name,
        "status": row.status,
        "n": row.n,
        "delta": row.delta,
        "schema": schema_of(row).to_dict(),
        "budget": {
            "rho_total": units_to_rho(row.share_total),
            "rho_spent": units_to_rho(row.share_spent),
            "rho_remaining": units_to_rho(row.share_total - row.share_spent),
        },
    }


def dataset_views(site: Site, analyst_id: int, name: str | None = None) -> list[dict[str, Any]]:
    """The analyst's datasets (or the one named ``name``), with schema and their budget."""
    with site.engine.begin() as conn:
        if name is not None:
            return [_dataset(dataset_row(conn, analyst_id, name))]
        rows = conn.execute(_visible(analyst_id).order_by(db.datasets.c.name)).all()
    return [_dataset(row) for row in rows]


def _release(row: Any, *, with_result: bool) -> dict[str, Any]:
    out = {
        "id": row.id,
        "dataset": row.dataset,
        "model": row.model,
        "formula": row.formula,
        "rho": row.rho,
        "rho_charged": units_to_rho(row.charged_units),
        "delta": row.delta,
        "status": row.status,
        "error": row.error,
        "warnings": json.loads(row.warnings_json or "[]"),
        "created_at": row.created_at,
        "finished_at": row.finished_at,
        "sha256": row.result_sha256,
    }
    if with_result:
        out["result"] = None if row.result_json is None else json.loads(row.result_json)
    return out


def _releases(analyst_id: int, *, with_result: bool) -> sa.Select:
    columns = [c for c in db.releases.c if with_result or c.name != "result_json"]
    return (
        sa.select(*columns, db.datasets.c.name.label("dataset"), db.datasets.c.delta)
        .outerjoin(db.datasets, db.datasets.c.id == db.releases.c.dataset_id)
        .where(db.releases.c.analyst_id == analyst_id)
    )


def release_view(site: Site, analyst_id: int, release_id: str) -> dict[str, Any]:
    """One of the analyst's requests with its stored result (no new charge), or 404."""
    if not isinstance(release_id, str) or len(release_id) > 64:
        raise not_found("release")
    with site.engine.begin() as conn:
        row = conn.execute(
            _releases(analyst_id, with_result=True).where(db.releases.c.id == release_id)
        ).one_or_none()
    if row is None:
        raise not_found("release")
    return _release(row, with_result=True)


def history(site: Site, analyst_id: int) -> list[dict[str, Any]]:
    """The analyst's requests, newest first (results left out: fetch them by id)."""
    with site.engine.begin() as conn:
        rows = conn.execute(
            _releases(analyst_id, with_result=False)
            .order_by(db.releases.c.created_at.desc())
            .limit(HISTORY_LIMIT)
        ).all()
    return [_release(row, with_result=False) for row in rows]
