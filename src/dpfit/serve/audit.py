"""The steward's view: every release and refusal, the budgets, and the audit log's export.

Each fit request is one row of the audit log: who, when, which dataset, model and formula,
the rho charged (zero when refused), its outcome and the SHA-256 of the released result
(:func:`dpfit.remote.codec.result_sha256`), with which anyone holding a release can check
that it is the one the service recorded. The steward's own actions (registrations, shares,
revocations, pauses) are the log's events. ``dpfit serve audit DIR`` writes both as CSV or
JSON.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import sqlalchemy as sa

from . import db
from .site import Site
from .units import units_to_rho

__all__ = ["AUDIT_FIELDS", "audit_events", "audit_releases", "export_audit", "overview"]

#: The columns of the release log, in order.
AUDIT_FIELDS = (
    "id",
    "created_at",
    "finished_at",
    "analyst",
    "dataset",
    "model",
    "formula",
    "rho",
    "rho_charged",
    "status",
    "error",
    "result_sha256",
)


def audit_releases(site: Site, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Every request, newest first: the fields of :data:`AUDIT_FIELDS`."""
    query = (
        sa.select(
            db.releases.c.id,
            db.releases.c.created_at,
            db.releases.c.finished_at,
            db.analysts.c.name.label("analyst"),
            db.datasets.c.name.label("dataset"),
            db.releases.c.model,
            db.releases.c.formula,
            db.releases.c.rho,
            db.releases.c.charged_units,
            db.releases.c.status,
            db.releases.c.error,
            db.releases.c.result_sha256,
        )
        .join(db.analysts, db.analysts.c.id == db.releases.c.analyst_id)
        .outerjoin(db.datasets, db.datasets.c.id == db.releases.c.dataset_id)
        .order_by(db.releases.c.created_at.desc(), db.releases.c.id)
    )
    if limit is not None:
        query = query.limit(limit)
    with site.engine.begin() as conn:
        rows = conn.execute(query).all()
    out = []
    for row in rows:
        item = dict(row._mapping)
        item["rho_charged"] = units_to_rho(item.pop("charged_units"))
        out.append({key: item[key] for key in AUDIT_FIELDS})
    return out


def audit_events(site: Site) -> list[dict[str, Any]]:
    """The steward's actions, oldest first."""
    with site.engine.begin() as conn:
        rows = conn.execute(sa.select(db.events).order_by(db.events.c.id)).all()
    return [dict(row._mapping) for row in rows]


def export_audit(site: Site, fmt: str = "csv") -> str:
    """The audit log as CSV (releases only) or JSON (``{"releases": ..., "events": ...}``)."""
    if fmt == "json":
        document = {"releases": audit_releases(site), "events": audit_events(site)}
        return json.dumps(document, indent=1, sort_keys=True) + "\n"
    if fmt != "csv":
        raise ValueError(f"format must be 'csv' or 'json', got {fmt!r}")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=AUDIT_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(audit_releases(site))
    return buffer.getvalue()


def overview(site: Site) -> dict[str, Any]:
    """Datasets with their budgets, analysts with their shares (the admin page's tables)."""
    with site.engine.begin() as conn:
        datasets = conn.execute(sa.select(db.datasets).order_by(db.datasets.c.name)).all()
        analysts = conn.execute(sa.select(db.analysts).order_by(db.analysts.c.name)).all()
        shares = conn.execute(
            sa.select(db.shares, db.datasets.c.name.label("dataset"))
            .join(db.datasets, db.datasets.c.id == db.shares.c.dataset_id)
            .order_by(db.datasets.c.name)
        ).all()
    by_analyst: dict[int, list[dict[str, Any]]] = {}
    for share in shares:
        by_analyst.setdefault(share.analyst_id, []).append(
            {
                "dataset": share.dataset,
                "rho_total": units_to_rho(share.total_units),
                "rho_spent": units_to_rho(share.spent_units),
            }
        )
    return {
        "datasets": [
            {
                "name": d.name,
                "status": d.status,
                "n": d.n,
                "delta": d.delta,
                "data_path": d.data_path,
                "rho_total": units_to_rho(d.total_units),
                "rho_allocated": units_to_rho(d.allocated_units),
                "rho_spent": units_to_rho(d.spent_units),
            }
            for d in datasets
        ],
        "analysts": [
            {
                "name": a.name,
                "created_at": a.created_at,
                "revoked": a.revoked_at is not None,
                "shares": by_analyst.get(a.id, []),
            }
            for a in analysts
        ],
    }
