"""A release's life: checked, priced (dry run), charged, fitted, stored, fetched again for free.

:func:`submit` runs the steps in an order that keeps the privacy promise:

1. **check** the request against the limits and the public schema
   (:mod:`dpfit.serve.fit_request`); a refusal is recorded in the audit log, nothing charged;
2. **charge** rho to the analyst's share and the dataset in one committed transaction
   (:func:`dpfit.serve.budgets.charge`), before any noise exists;
3. **fit** with the library (:func:`dpfit.serve.fitting.run_fit`);
4. **store** the encoded result and its SHA-256 (:mod:`dpfit.remote.codec`).

What an analyst receives depends on one record only through the charged noise. Refusals
come from steps 1 and 2, which read the public schema and the budgets, never the data. After
the charge the request has passed every check the library makes on public inputs, so a
failure is the service's fault; it still keeps the charge (the noise may have been drawn),
and the analyst gets the fixed message :data:`FIT_FAILED`, never the exception's text, which
could quote the data. A server killed during a fit leaves the release ``charged``;
:func:`recover`, run when the server starts, marks it ``interrupted``, charge kept.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

import sqlalchemy as sa

from ..privacy.conversions import zcdp_to_approx_dp
from ..remote.codec import canonical_json, encode_result, result_sha256
from . import db
from .budgets import charge
from .data import DatasetUnavailableError
from .fit_request import FitDesign, FitRequest, RequestError, design_for, parse_request
from .fitting import run_fit
from .site import Site, now
from .units import charge_units, units_to_rho
from .views import dataset_row, release_view, schema_of

__all__ = ["FIT_FAILED", "INTERRUPTED", "dry_run", "recover", "submit"]

#: The analyst's message for a fit that failed after its charge (details could quote data).
FIT_FAILED = (
    "the fit failed after its privacy charge; the charge stands (the noise may have been "
    "drawn) and the details are withheld, as they could depend on the data"
)
#: The message for a release whose server stopped between its charge and its result.
INTERRUPTED = "the server stopped during this fit; the charge stands"

_log = logging.getLogger("dpfit.serve")


def _checked(site: Site, analyst_id: int, payload: Any) -> tuple[FitRequest, Any, FitDesign]:
    """Steps 1: the request, the analyst's dataset row and the design (or a RequestError)."""
    request = parse_request(payload, site.limits)
    with site.engine.begin() as conn:
        row = dataset_row(conn, analyst_id, request.dataset)
    design = design_for(request, schema_of(row), site.limits)
    return request, row, design


def dry_run(site: Site, analyst_id: int, payload: Any) -> dict[str, Any]:
    """What a request would fit and cost, without charging or reading any data.

    Returns the terms and public bounds of the fit, its rho and the epsilon it implies at the
    dataset's delta (CKS conversion, as the summary states it), and whether the analyst's
    remaining budget affords it. A release plan of the library, when one exists, belongs in
    this answer: it is public, computed from the same inputs.
    """
    request, row, design = _checked(site, analyst_id, payload)
    units = charge_units(request.rho)
    left = row.share_total - row.share_spent
    dataset_left = row.total_units - row.spent_units
    return {
        "dataset": row.name,
        "model": request.model,
        "formula": request.formula,
        "terms": list(design.terms),
        "response": design.response,
        "bounds": {k: list(v) for k, v in design.bounds.items()},
        "y_bounds": list(design.y_bounds),
        **{kind: {"column": c, "bounds": list(b)} for kind, (c, b) in design.offsets.items()},
        "rho": request.rho,
        "delta": row.delta,
        "epsilon": zcdp_to_approx_dp(request.rho, row.delta),
        "rho_remaining": units_to_rho(left),
        "rho_remaining_after": units_to_rho(max(0, left - units)),
        "affordable": units <= left and units <= dataset_left and row.status == "open",
        "dataset_status": row.status,
    }


def _refused(
    site: Site,
    release_id: str,
    analyst_id: int,
    payload: Any,
    exc: RequestError,
    dataset_id: int | None,
) -> None:
    """Record a refused request in the audit log (nothing was charged)."""
    model = payload.get("model") if isinstance(payload, dict) else None
    formula = payload.get("formula") if isinstance(payload, dict) else None
    try:
        text = json.dumps(payload, sort_keys=True, default=str)[:4096]
    except (TypeError, ValueError):
        text = "(not JSON)"
    with site.engine.begin() as conn:
        conn.execute(
            sa.insert(db.releases).values(
                id=release_id,
                analyst_id=analyst_id,
                dataset_id=dataset_id,
                model=str(model)[:16] if isinstance(model, str) else "",
                formula=formula[:2000] if isinstance(formula, str) else "",
                request_json=text,
                rho=None,
                charged_units=0,
                status="refused",
                error=f"{exc.code}: {exc.message}"[:2000],
                created_at=now(),
                finished_at=now(),
            )
        )


def _finish(site: Site, release_id: str, values: dict[str, Any]) -> None:
    with site.engine.begin() as conn:
        conn.execute(
            sa.update(db.releases)
            .where(db.releases.c.id == release_id, db.releases.c.status == "charged")
            .values(**values, finished_at=now())
        )


def submit(site: Site, analyst_id: int, payload: Any) -> dict[str, Any]:
    """Check, charge, fit and store one release (module docstring); return its view.

    Raises
    ------
    RequestError
        A refusal before the charge (recorded in the audit log; nothing charged).
    """
    release_id = secrets.token_urlsafe(12)
    dataset_id = None
    try:
        request, row, design = _checked(site, analyst_id, payload)
        dataset_id = row.id
        frame = site.cache.frame(
            dataset_id=row.id, path=row.data_path, sha256=row.data_sha256, schema=schema_of(row)
        )
        with site.engine.begin() as conn:
            charge(
                conn,
                analyst_id=analyst_id,
                dataset_id=row.id,
                units=charge_units(request.rho),
                release={
                    "id": release_id,
                    "analyst_id": analyst_id,
                    "dataset_id": row.id,
                    "model": request.model,
                    "formula": request.formula,
                    "request_json": json.dumps(request.to_dict(), sort_keys=True),
                    "rho": request.rho,
                    "created_at": now(),
                },
            )
    except DatasetUnavailableError:
        exc = RequestError(
            503,
            "unavailable",
            "the dataset is unavailable: the steward must "
            "register its data file again; nothing was charged",
        )
        _refused(site, release_id, analyst_id, payload, exc, dataset_id)
        raise exc from None
    except RequestError as exc:
        _refused(site, release_id, analyst_id, payload, exc, dataset_id)
        raise
    try:  # charged and committed: from here on the charge stands, whatever happens
        result, warned = run_fit(request, design, frame, random_state=site.random_state)
        document = encode_result(result)
        values = {
            "status": "released",
            "result_json": canonical_json(document),
            "result_sha256": result_sha256(document),
            "warnings_json": json.dumps(warned),
        }
    except Exception as exc:  # any failure after the charge gets the one fixed answer
        _log.error(
            "release %s: the fit failed after its charge (%s)", release_id, type(exc).__name__
        )
        values = {"status": "failed", "error": FIT_FAILED}
    _finish(site, release_id, values)
    return release_view(site, analyst_id, release_id)


def recover(site: Site) -> int:
    """Mark releases left ``charged`` by a stopped server as ``interrupted`` (charges kept).

    Run it once when the service starts, before it takes requests (``dpfit serve`` does):
    a release still ``charged`` then belongs to no running fit. Returns how many it marked.
    """
    with site.engine.begin() as conn:
        return conn.execute(
            sa.update(db.releases)
            .where(db.releases.c.status == "charged")
            .values(status="interrupted", error=INTERRUPTED, finished_at=now())
        ).rowcount
